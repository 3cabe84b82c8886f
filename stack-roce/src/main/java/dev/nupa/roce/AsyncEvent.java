package dev.nupa.roce;

import dev.nupa.roce.verbs.AsyncEventType;

/**
 * An asynchronous event ({@code struct ibv_async_event}, ibv_get_async_event(3)): its type and the one object it
 * concerns, as libibverbs' {@code element} union has it: the QP for QP_*, the CQ for CQ_ERR, the SRQ for
 * SRQ_LIMIT_REACHED, the port number for PORT_*; the other fields are null (or 0 for the port).
 */
public record AsyncEvent(AsyncEventType type, QueuePair qp, CompletionQueue cq, SharedReceiveQueue srq, int port) {
    static AsyncEvent of(AsyncEventType type, QueuePair qp) {
        return new AsyncEvent(type, qp, null, null, 0);
    }

    static AsyncEvent of(AsyncEventType type, CompletionQueue cq) {
        return new AsyncEvent(type, null, cq, null, 0);
    }

    static AsyncEvent of(AsyncEventType type, SharedReceiveQueue srq) {
        return new AsyncEvent(type, null, null, srq, 0);
    }

    static AsyncEvent port(AsyncEventType type, int port) {
        return new AsyncEvent(type, null, null, null, port);
    }

    @Override
    public String toString() {
        String element = qp != null ? "QP " + qp.qpNum() : cq != null ? "CQ of " + cq.capacity() + " entries"
                : srq != null ? "SRQ" : "port " + port;
        return type + " (IBV_EVENT_" + type + ") on " + element;
    }
}
