/**
 * The connection manager, as Linux's rdma_cm speaks the InfiniBand CM (IBA 12): listen, connect, accept, reject and
 * disconnect by IPv4 address and port, on the context's QP 1. Its API is Vert.x Futures and handlers on the context's
 * thread, as rdma_cm's events are.
 */
package dev.nupa.roce.cm;
