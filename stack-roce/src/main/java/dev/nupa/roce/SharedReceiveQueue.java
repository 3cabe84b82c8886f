package dev.nupa.roce;

import dev.nupa.roce.transport.RecvQueue;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;

/** A shared receive queue ({@code ibv_srq}): receive requests that any QP attached to it may consume. */
public final class SharedReceiveQueue implements AutoCloseable {
    final ProtectionDomain pd;
    final RecvQueue queue;
    int users;

    SharedReceiveQueue(ProtectionDomain pd, int maxWr, int maxSge) {
        this.pd = pd;
        this.queue = new RecvQueue(maxWr, maxSge);
    }

    /** Posts a receive request ({@code ibv_post_srq_recv}); copies it, so {@code wr} may be reused at once. */
    public void postRecv(RecvWorkRequest wr) {
        pd.context().checkThread();
        if (pd.closed) {
            throw new RdmaException("shared receive queue's protection domain is closed");
        }
        queue.post(wr, -1);
    }

    /** Requests posted and not yet consumed. */
    public int size() {
        return queue.size();
    }

    @Override
    public void close() {
        pd.context().checkThread();
        if (users > 0) {
            throw new RdmaException("shared receive queue still serves " + users + " queue pair(s); destroy them first");
        }
        pd.users--;
    }
}
