/**
 * The verbs (context, PD, MR, CQ, QP, SRQ, work requests and completions, in libibverbs' names) and the transport
 * behind them: reliable connected QPs (requester, responder, completer over one QP state, as rxe's) in packet and
 * direct-placement modes, and unreliable datagram QPs, over the fabric and as RoCEv2 through the node's IP layer to
 * peers named by IPv4 address. QP 1 belongs to an attached {@link dev.nupa.roce.GsiAgent}: the connection manager.
 * The wire formats are in {@code dev.nupa.roce.wire}, the CM in {@code dev.nupa.roce.cm}, the Vert.x and RxJava
 * adapters in {@code dev.nupa.roce.vertx}; nothing here imports Vert.x or RxJava.
 */
package dev.nupa.roce;
