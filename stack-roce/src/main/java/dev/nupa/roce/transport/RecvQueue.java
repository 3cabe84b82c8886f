package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;

/** A ring of posted receive work requests: a QP's own receive queue, or a shared one's. */
public final class RecvQueue {
    final int capacity;
    private final int mask; // power-of-two slots: a slot is a mask, not a division
    final int maxSge;
    final long[] wrId;
    final int[] numSge;
    final long[] sgAddr;
    final int[] sgLength;
    final int[] sgLkey;
    long head;
    long tail;
    /** A shared queue's armed limit (0: none): a take that leaves fewer requests runs {@link #onLimit} and disarms. */
    private int limit;
    /** Raises IBV_EVENT_SRQ_LIMIT_REACHED; set by the shared queue's handle. */
    public Runnable onLimit;

    public RecvQueue(int capacity, int maxSge) {
        this.capacity = capacity;
        int slots = Integer.highestOneBit(Math.max(1, capacity - 1)) << 1;
        this.mask = slots - 1;
        this.maxSge = maxSge;
        wrId = new long[slots];
        numSge = new int[slots];
        sgAddr = new long[slots * maxSge];
        sgLength = new int[slots * maxSge];
        sgLkey = new int[slots * maxSge];
    }

    /** Slots in the arrays: the capacity rounded up to a power of two. */
    int slots() {
        return mask + 1;
    }

    public int size() {
        return (int) (tail - head);
    }

    /** Copies {@code wr} in; {@code owner} (a QP number, or -1 for a shared queue) only names it in errors. */
    public void post(RecvWorkRequest wr, int owner) {
        if (tail - head == capacity) {
            throw new RdmaException(name(owner) + " receive queue is full (" + capacity + " requests); poll completions or create it larger");
        }
        if (wr.sg.count() > maxSge) {
            throw new RdmaException("receive request has " + wr.sg.count() + " scatter entries; " + name(owner) + " takes at most " + maxSge);
        }
        int s = (int) tail & mask;
        wrId[s] = wr.wrId;
        numSge[s] = wr.sg.count();
        for (int i = 0, b = s * maxSge; i < wr.sg.count(); i++) { // lists are short: cheaper than three arraycopy calls
            sgAddr[b + i] = wr.sg.addr(i);
            sgLength[b + i] = wr.sg.length(i);
            sgLkey[b + i] = wr.sg.lkey(i);
        }
        tail++;
    }

    private static String name(int owner) {
        return owner < 0 ? "the shared" : "QP " + owner + "'s";
    }

    /** Slot of the oldest request, or -1 when empty. */
    int peek() {
        return head == tail ? -1 : (int) head & mask;
    }

    void pop() {
        head++;
        if (limit != 0 && tail - head < limit) {
            limit = 0; // ibv_modify_srq(3): the limit disarms when the event fires (as rxe's get_srq_wqe does)
            if (onLimit != null) {
                onLimit.run();
            }
        }
    }

    /** Arms (or with 0 disarms) the SRQ limit ({@code ibv_modify_srq} with IBV_SRQ_LIMIT); the handle checked it. */
    public void arm(int srqLimit) {
        limit = srqLimit;
    }

    /** The armed limit, 0 when none ({@code ibv_query_srq}'s srq_limit). */
    public int limit() {
        return limit;
    }
}
