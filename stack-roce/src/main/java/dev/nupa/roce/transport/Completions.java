package dev.nupa.roce.transport;

import dev.nupa.device.Trace;
import dev.nupa.roce.verbs.CompletionObserver;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;

/**
 * The entries of a completion queue, behind its verbs handle ({@code dev.nupa.roce.CompletionQueue}), as Soft-RoCE's
 * rxe_cq is behind ib_cq: the transport pushes completions in the order it produces them, the handle polls them, both
 * through preallocated arrays so that neither allocates. A push that does not fit is an overrun (IBA 11.4.2.1): counted
 * here, reported by the handle's next poll, and its QP moves to ERR.
 */
public final class Completions {
    private final RdmaDevice device;
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
    /** Run once, at the first overrun (IBV_EVENT_CQ_ERR); set by the handle. */
    public Runnable onError;
    /** QPs whose receives a peer may fill by direct placement: their completions are taken in at poll. */
    private QpTransport[] direct = new QpTransport[0];

    public Completions(RdmaDevice device, int cqe) {
        this.device = device;
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

    /** Polls the oldest completion into {@code wc}; returns whether there was one. */
    public boolean poll(WorkCompletion wc) {
        if (tail == head) {
            if (direct.length == 0) {
                return false;
            }
            for (QpTransport qp : direct) {
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
            device.counters.add(RdmaCounter.CQ_OVERRUNS, 1);
            // The queue is in error from its first overrun on (the handle's poll throws): one event says so. rxe raises
            // IB_EVENT_CQ_ERR at each overrun (rxe_cq_post); the later ones say nothing new.
            if (overruns++ == 0 && onError != null) {
                onError.run();
            }
            return false;
        }
        CompletionObserver o = device.observer;
        if (o != null && op < WcOpcode.RECV) {
            o.completed(qp, id, op, st, device.clock.getAsLong());
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

    void addDirect(QpTransport qp) {
        direct = QpTransport.with(direct, qp);
    }

    void removeDirect(QpTransport qp) {
        direct = QpTransport.without(direct, qp);
    }
}
