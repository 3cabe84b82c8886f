package dev.nupa.roce;

import dev.nupa.roce.transport.RecvQueue;
import dev.nupa.roce.verbs.AsyncEventType;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;

/** A shared receive queue ({@code ibv_srq}): receive requests that any QP attached to it may consume. */
public final class SharedReceiveQueue implements AutoCloseable {
    final ProtectionDomain pd;
    final RecvQueue queue;
    private final int maxWr;
    int users;
    private boolean closed;

    SharedReceiveQueue(ProtectionDomain pd, int maxWr, int maxSge) {
        this.pd = pd;
        this.maxWr = maxWr;
        this.queue = new RecvQueue(maxWr, maxSge);
        queue.onLimit = () -> pd.context.raise(AsyncEvent.of(AsyncEventType.SRQ_LIMIT_REACHED, this));
    }

    /** Posts a receive request ({@code ibv_post_srq_recv}); copies it, so {@code wr} may be reused at once. */
    public void postRecv(RecvWorkRequest wr) {
        pd.context().checkThread();
        if (pd.closed || closed) {
            throw new RdmaException("shared receive queue " + (closed ? "is destroyed" : "'s protection domain is closed"));
        }
        queue.post(wr, -1);
    }

    /** Requests posted and not yet consumed. */
    public int size() {
        return queue.size();
    }

    /**
     * Arms the limit ({@code ibv_modify_srq} with IBV_SRQ_LIMIT): once a QP takes a receive that leaves fewer than
     * {@code srqLimit} requests, the context raises SRQ_LIMIT_REACHED ({@link AsyncEvent}) and the limit disarms (reads 0)
     * until armed again; 0 disarms it. Throws for a limit outside 0..max_wr.
     */
    public void arm(int srqLimit) {
        pd.context().checkThread();
        if (srqLimit < 0 || srqLimit > maxWr) {
            throw new RdmaException("SRQ limit " + srqLimit + " is outside 0.." + maxWr + " (the queue's max_wr); 0 disarms it");
        }
        queue.arm(srqLimit);
    }

    /** The armed limit, 0 when none is armed ({@code ibv_query_srq}'s srq_limit). */
    public int limit() {
        pd.context().checkThread();
        return queue.limit();
    }

    @Override
    public void close() {
        pd.context().checkThread();
        if (users > 0) {
            throw new RdmaException("shared receive queue still serves " + users + " queue pair(s); destroy them first");
        }
        if (!closed) {
            closed = true;
            pd.users--;
            pd.context.srqs--;
        }
    }
}
