package dev.nupa.roce;

import dev.nupa.device.Trace;

/**
 * A completion queue ({@code ibv_cq}): work completions in the order the transport produced them,
 * held in preallocated arrays so neither producing nor {@link #poll polling} allocates.
 *
 * <p>A queue that fills up has overrun (IBA 11.4.2.1: a CQ error): the completion that did not fit
 * is counted, the queue reports it on the next poll with an exception, and the QPs that feed it are
 * moved to the error state, so no completion goes missing silently. Size it for the work in flight.
 *
 * <p>Notification ({@code ibv_req_notify_cq}): after {@link #requestNotify} the {@link #onEvent} handler
 * runs once, on the context's thread, when the next completion arrives.
 */
public final class CompletionQueue implements AutoCloseable {
    final RdmaContext context;
    private final int capacity;
    private final int mask; // power-of-two slots: a slot is a mask, not a division
    private final long[] wrId;
    private final int[] status;
    private final int[] opcode;
    private final int[] byteLen;
    private final int[] immData;
    private final int[] qpNum;
    private final int[] srcQp;
    private final int[] srcNode;
    private final int[] wcFlags;
    private long head;
    private long tail;
    private long overruns;
    private boolean armed;
    private boolean solicitedOnly;
    private Runnable eventHandler;
    int users;
    boolean closed;
    /** QPs whose receives a peer may fill by direct placement: their completions are taken in at poll. */
    private QueuePair[] direct = new QueuePair[0];

    CompletionQueue(RdmaContext context, int cqe) {
        this.context = context;
        this.capacity = cqe;
        int slots = Integer.highestOneBit(Math.max(1, cqe - 1)) << 1;
        this.mask = slots - 1;
        wrId = new long[slots];
        status = new int[slots];
        opcode = new int[slots];
        byteLen = new int[slots];
        immData = new int[slots];
        qpNum = new int[slots];
        srcQp = new int[slots];
        srcNode = new int[slots];
        wcFlags = new int[slots];
    }

    public int capacity() {
        return capacity;
    }

    /** Completions waiting to be polled. */
    public int size() {
        return (int) (tail - head);
    }

    /** Completions that did not fit (each one an overrun). */
    public long overruns() {
        return overruns;
    }

    /**
     * Fills up to {@code max} of {@code wcs} with the oldest completions; returns how many
     * ({@code ibv_poll_cq}). Throws RdmaException once the queue has overrun.
     */
    public int poll(WorkCompletion[] wcs, int max) {
        int n = 0;
        while (n < Math.min(max, wcs.length) && poll(wcs[n])) {
            n++;
        }
        return n;
    }

    /** Polls the oldest completion into {@code wc}; returns whether there was one. Throws once the queue has overrun. */
    public boolean poll(WorkCompletion wc) {
        if (overruns != 0) {
            throw new RdmaException("completion queue overrun: " + overruns + " completion(s) did not fit its " + capacity
                    + " entries and its QPs were moved to ERR; create the queue with more entries");
        }
        if (tail == head) {
            if (direct.length == 0) {
                return false;
            }
            for (QueuePair qp : direct) {
                qp.absorbDirect();
            }
            if (tail == head) {
                return false;
            }
        }
        int s = (int) head++ & mask;
        wc.wrId = wrId[s];
        wc.status = status[s];
        wc.opcode = opcode[s];
        wc.byteLen = byteLen[s];
        wc.immData = immData[s];
        wc.qpNum = qpNum[s];
        wc.srcQp = srcQp[s];
        wc.srcNode = srcNode[s];
        wc.wcFlags = wcFlags[s];
        return true;
    }

    /** Arms the event handler for the next completion (or the next solicited one). */
    public void requestNotify(boolean solicitedOnly) {
        this.armed = true;
        this.solicitedOnly = solicitedOnly;
    }

    /** The handler {@link #requestNotify} arms; it runs on the context's thread. */
    public void onEvent(Runnable handler) {
        this.eventHandler = handler;
    }

    /** Adds a completion; returns false on overrun (the caller moves its QP to ERR). */
    boolean push(long id, int st, int op, int len, int imm, int qp, int sqp, int snode, int flags, boolean solicited) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.CALLBACK);
        }
        if (tail - head == capacity) {
            overruns++;
            context.counters.add(RdmaCounter.CQ_OVERRUNS, 1);
            return false;
        }
        RdmaObserver o = context.observer;
        if (o != null && op < WcOpcode.RECV) {
            o.completed(qp, id, op, st, context.clock.getAsLong());
        }
        int s = (int) tail++ & mask;
        wrId[s] = id;
        status[s] = st;
        opcode[s] = op;
        byteLen[s] = len;
        immData[s] = imm;
        qpNum[s] = qp;
        srcQp[s] = sqp;
        srcNode[s] = snode;
        wcFlags[s] = flags;
        if (armed && (!solicitedOnly || solicited || st != WcStatus.SUCCESS)) {
            armed = false;
            Runnable h = eventHandler;
            if (h != null) {
                h.run();
            }
        }
        return true;
    }

    /** Whether {@link #requestNotify} is pending (the next completion raises the event). */
    boolean armed() {
        return armed;
    }

    void addDirect(QueuePair qp) {
        direct = QueuePair.with(direct, qp);
    }

    void removeDirect(QueuePair qp) {
        direct = QueuePair.without(direct, qp);
    }

    /** Destroys the queue ({@code ibv_destroy_cq}); throws while QPs use it. */
    @Override
    public void close() {
        if (users > 0) {
            throw new RdmaException("completion queue still feeds " + users + " queue pair(s); destroy them first");
        }
        closed = true;
    }
}
