/**
 * The verbs' values, in libibverbs' names, that the verbs handles of {@code dev.nupa.roce} and the transport behind
 * them both use: QP types, states, attributes and capacities, access and send flags, work requests, scatter/gather
 * lists, work completions and their opcodes and statuses, counters, the exception, and the interfaces through which
 * the transport calls up (the QP 1 agent, the completion observer). Imports nothing of the module's other packages.
 */
package dev.nupa.roce.verbs;
