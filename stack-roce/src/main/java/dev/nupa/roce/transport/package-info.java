/**
 * The RC and UD transport behind the verbs, as Soft-RoCE's rxe_* objects are behind the ib_* handles: for each
 * verbs handle of {@code dev.nupa.roce} the object the transport works on ({@link dev.nupa.roce.transport.RdmaDevice}
 * behind a context, {@link dev.nupa.roce.transport.QpTransport} behind a queue pair,
 * {@link dev.nupa.roce.transport.Completions} behind a completion queue, {@link dev.nupa.roce.transport.Region} behind
 * a memory region), the requester, responder and completer of a QP over its send and receive queues, direct placement
 * into peers' windows (DIRECT mode) and the directory and receive mirrors it checks against. The module does not
 * export this package: its members are public only so that the verbs handles can reach them.
 */
package dev.nupa.roce.transport;
