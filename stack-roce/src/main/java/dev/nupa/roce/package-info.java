/**
 * The verbs, in libibverbs' names: the context, PD, MR, CQ, QP and SRQ handles, work requests and completions, QP
 * attributes and the checks of their transitions, and QP 1 for a {@link dev.nupa.roce.verbs.GsiAgent} (the connection
 * manager). Reliable connected QPs, in packet and direct-placement modes, and unreliable datagram QPs, over the fabric
 * and as RoCEv2 through the node's IP layer to peers named by IPv4 address. Each handle checks the calls made on it
 * and hands them to the transport object it owns, in the module's unexported {@code dev.nupa.roce.transport}. The
 * wire formats are in {@code dev.nupa.roce.wire}, the CM in {@code dev.nupa.roce.cm}, the Vert.x and RxJava adapters
 * in {@code dev.nupa.roce.vertx}; nothing here imports Vert.x or RxJava.
 */
package dev.nupa.roce;
