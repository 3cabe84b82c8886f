package dev.nupa.roce.transport;

import static dev.nupa.roce.verbs.QpAttrMask.*;

import dev.nupa.roce.verbs.AsyncEventType;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpCap;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.RoceIp;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;

/**
 * The transport of one queue pair, behind its verbs handle ({@code dev.nupa.roce.QueuePair}), as Soft-RoCE's rxe_qp is
 * behind ib_qp: its state and attributes, its send and receive queues, and the transport that serves them, split
 * like rxe's into {@link RcRequester} (sends requests), {@link RcResponder} (executes the peer's requests) and
 * {@link RcCompleter} (takes the peer's responses and completes work). Sans-IO: the device feeds it packets and
 * {@link #poll ticks} with {@code now}; it emits frames through the device. The handle checks each verbs call first.
 */
public final class QpTransport {
    /** How often a node's datapath looks for direct SENDs while a receive CQ waits for an event. */
    public static final long DIRECT_RECV_POLL_NS = 20_000;

    final RdmaDevice device;
    public final int qpn;
    public final QpType type;
    public final TransferMode mode;
    /** The protection domain's id: unique in its context, so it stands for the domain in every check. */
    final int pdId;
    final Completions sendCq;
    final Completions recvCq;
    /** Its own receive queue, or null when it takes receives from {@link #srq}. */
    final RecvQueue rq;
    /** The shared receive queue it takes receives from, or null. */
    final RecvQueue srq;
    public final SendQueue sq;
    public final boolean sqSigAll;
    final QpAttr attr = new QpAttr();
    public final RcRequester requester;
    public final RcResponder responder;
    final RcCompleter completer;
    final DirectPlacement.Target directTarget = new DirectPlacement.Target();
    final DirectPlacement.SendTarget sendTarget = new DirectPlacement.SendTarget();
    /**
     * A DIRECT RC QP's own receive queue as its peer sees it, exported at the first receive posted (null
     * before, for other QPs, and when the fabric had no window room: SENDs then arrive as packets).
     */
    RecvMirror mirror;
    private boolean mirrorRefused;
    QpState state = QpState.RESET;
    boolean destroyed;
    /** Takes the asynchronous events about this QP (its handle sets it; null: none). Rare: never on the data path. */
    public java.util.function.Consumer<AsyncEventType> events;

    /** A QP in RESET on {@code sendCq} and {@code recvCq}, with its own receive queue or (not null) {@code srq}. */
    public QpTransport(RdmaDevice device, int qpn, int pdId, QpType type, TransferMode mode, QpCap cap, boolean sqSigAll,
            Completions sendCq, Completions recvCq, RecvQueue srq) {
        this.device = device;
        this.qpn = qpn;
        this.pdId = pdId;
        this.type = type;
        this.mode = mode;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.srq = srq;
        this.rq = srq == null ? new RecvQueue(cap.maxRecvWr(), cap.maxRecvSge()) : null;
        this.sq = new SendQueue(cap.maxSendWr(), cap.maxSendSge(), cap.maxInlineData());
        this.sqSigAll = sqSigAll;
        this.requester = new RcRequester(this);
        this.responder = new RcResponder(this);
        this.completer = new RcCompleter(this);
        attr.pathMtu = largestPathMtu(device.link.mtu()); // what a UD QP uses (RC sets it on INIT->RTR)
    }

    /** The largest InfiniBand MTU (256..4096) whose packets, with {@link RcRequester#MAX_HEADERS}, fit a link of {@code linkMtu}. */
    public static int largestPathMtu(int linkMtu) {
        int mtu = 4096;
        while (mtu > 256 && mtu + RcRequester.MAX_HEADERS > linkMtu) {
            mtu >>= 1;
        }
        return mtu;
    }

    private void raise(AsyncEventType t) {
        java.util.function.Consumer<AsyncEventType> e = events;
        if (e != null) {
            e.accept(t);
        }
    }

    public QpState state() {
        return state;
    }

    /** Whether it was destroyed (or its context closed). */
    public boolean destroyed() {
        return destroyed;
    }

    public int pathMtu() {
        return attr.pathMtu;
    }

    /** Copies the current attributes into {@code into} ({@code ibv_query_qp}) and returns it. */
    public QpAttr query(QpAttr into) {
        into.qpState = state;
        into.curQpState = state;
        into.pathMtu = attr.pathMtu;
        into.qkey = attr.qkey;
        into.rqPsn = responder.ePsn;
        into.sqPsn = requester.psn;
        into.destQpNum = attr.destQpNum;
        into.qpAccessFlags = attr.qpAccessFlags;
        into.pkeyIndex = attr.pkeyIndex;
        into.portNum = attr.portNum;
        into.destNode = attr.destNode;
        into.destIp = attr.destIp;
        into.sl = attr.sl;
        into.maxRdAtomic = attr.maxRdAtomic;
        into.maxDestRdAtomic = attr.maxDestRdAtomic;
        into.minRnrTimer = attr.minRnrTimer;
        into.timeout = attr.timeout;
        into.retryCnt = attr.retryCnt;
        into.rnrRetry = attr.rnrRetry;
        return into;
    }

    /** Takes the attributes in {@code mask} from {@code a} and moves to {@code to}: a modify the handle has checked. */
    public void modify(QpAttr a, int mask, QpState to) {
        if ((mask & PATH_MTU) != 0) attr.pathMtu = a.pathMtu;
        if ((mask & QKEY) != 0) attr.qkey = a.qkey;
        if ((mask & DEST_QPN) != 0) attr.destQpNum = a.destQpNum;
        if ((mask & ACCESS_FLAGS) != 0) attr.qpAccessFlags = a.qpAccessFlags;
        if ((mask & PKEY_INDEX) != 0) attr.pkeyIndex = a.pkeyIndex;
        if ((mask & PORT) != 0) attr.portNum = a.portNum;
        if ((mask & AV) != 0) {
            attr.destNode = a.destIp != 0 ? -1 : a.destNode;
            attr.destIp = a.destIp;
            attr.sl = a.sl;
        }
        if ((mask & (AV | DEST_QPN)) != 0) {
            directTarget.window = null; // checked against another peer
            sendTarget.forget();
        }
        if ((mask & MAX_QP_RD_ATOMIC) != 0) attr.maxRdAtomic = a.maxRdAtomic;
        if ((mask & MAX_DEST_RD_ATOMIC) != 0) attr.maxDestRdAtomic = a.maxDestRdAtomic;
        if ((mask & MIN_RNR_TIMER) != 0) attr.minRnrTimer = a.minRnrTimer;
        if ((mask & TIMEOUT) != 0) attr.timeout = a.timeout;
        if ((mask & RETRY_CNT) != 0) attr.retryCnt = a.retryCnt;
        if ((mask & RNR_RETRY) != 0) attr.rnrRetry = a.rnrRetry;
        if ((mask & RQ_PSN) != 0) responder.reset(a.rqPsn);
        if ((mask & SQ_PSN) != 0) requester.reset(a.sqPsn);
        if ((mask & EN_SQD_ASYNC_NOTIFY) != 0) attr.sqdAsyncNotify = a.sqdAsyncNotify;
        if (to == state) {
            publish();
            return;
        }
        switch (to) {
            case RESET -> reset();
            case ERR -> enterError();
            default -> {
                state = to;
                publish();
                if (to == QpState.RTR || to == QpState.RTS) {
                    device.activate(this); // a receive-only QP in RTR owes ACKs and READ responses too
                }
            }
        }
    }

    /** Posts a send request the handle has let through (RTS, SQD, SQE or ERR); starts transmitting at once. */
    public void post(SendWorkRequest wr) {
        requester.post(wr);
    }

    /** Posts a receive to its own queue (the handle has checked the QP's state); in ERR it completes flushed. */
    public void postRecv(RecvWorkRequest wr) {
        if (mirror != null) {
            absorbDirect(); // receives the peer filled leave the queue now, as they would on arrival
        } else if (mode == TransferMode.DIRECT && type == QpType.RC && !mirrorRefused) {
            exportMirror();
        }
        rq.post(wr, qpn);
        if (mirror != null) {
            mirror.post(rq.tail - 1, wr);
        }
        if (state == QpState.ERR) {
            flushReceives();
        }
    }

    /** Exports the receive mirror (a window per QP, only for QPs that receive) and names it in the directory. */
    private void exportMirror() {
        mirror = RecvMirror.export(device.link.device(), rq.slots(), rq.maxSge);
        if (mirror == null) {
            mirrorRefused = true;
            return;
        }
        if (state == QpState.ERR) {
            mirror.close();
        }
        recvCq.addDirect(this);
        publish();
    }

    /**
     * Completes, in order, the receives at the head of the queue that the peer's requester filled by
     * direct placement (a SEND placed in place of a packet; see {@link RecvMirror}). Called wherever the
     * queue's head matters: polling the receive CQ, taking a receive for a packet SEND, posting, ERR.
     */
    void absorbDirect() {
        RecvMirror m = mirror;
        while (rq.head < rq.tail && m.placed(rq.head)) {
            long p = rq.head;
            int s = rq.peek();
            rq.pop();
            int f = m.flags(p);
            long lenImm = m.byteLenAndImm(p);
            responder.receivedDirect();
            if (!completeRecv(rq.wrId[s], WcStatus.SUCCESS, WcOpcode.RECV, RecvMirror.lower(lenImm), RecvMirror.upper(lenImm),
                    (f & RecvMirror.WITH_IMM) != 0 ? WorkCompletion.WITH_IMM : 0, 0, 0, (f & RecvMirror.SOLICITED) != 0)) {
                if (state != QpState.ERR) {
                    enterError();
                }
                return;
            }
        }
    }

    /** Runs timers and pending transmissions; returns the next deadline (Long.MAX_VALUE for none). */
    long poll(long now) {
        if (mirror != null && !destroyed) {
            absorbDirect();
        }
        if (state == QpState.ERR && !destroyed) {
            responder.flush(); // a NAK or ACK the ring refused on the way to ERR: all the peer is still owed
        }
        if (state == QpState.RESET || state == QpState.ERR || destroyed) {
            return Long.MAX_VALUE;
        }
        long next = requester.poll(now);
        responder.flush();
        if (mirror != null && rq.head < rq.tail && recvCq.armed()) {
            // A direct SEND brings no frame to wake the datapath: while someone waits for a completion
            // event, look again soon (a caller polling the CQ itself sees the SEND at once).
            next = Math.min(next, now + DIRECT_RECV_POLL_NS);
        }
        return next;
    }

    /** {@code qps} with {@code qp} appended unless it is there already (lists a device or CQ walks; set up rarely). */
    static QpTransport[] with(QpTransport[] qps, QpTransport qp) {
        for (QpTransport q : qps) {
            if (q == qp) {
                return qps;
            }
        }
        QpTransport[] a = java.util.Arrays.copyOf(qps, qps.length + 1);
        a[qps.length] = qp;
        return a;
    }

    /** {@code qps} without {@code qp}. */
    static QpTransport[] without(QpTransport[] qps, QpTransport qp) {
        return java.util.Arrays.stream(qps).filter(q -> q != qp).toArray(QpTransport[]::new);
    }

    // ---- completions and errors -------------------------------------------------------------

    boolean completeSend(int s, int status) {
        boolean signaled = sqSigAll || (sq.flags[s] & SendFlags.SIGNALED) != 0 || status != WcStatus.SUCCESS;
        if (!signaled) {
            return true;
        }
        int op = sq.opcode[s];
        int len = (int) sq.length[s];
        return sendCq.push(sq.wrId[s], status, WrOpcodes.completionOpcode(op), len, 0, qpn, 0, 0, 0, false);
    }

    boolean completeRecv(long wrId, int status, int opcode, int len, int imm, int flags, int srcQp, int srcNode,
            boolean solicited) {
        return recvCq.push(wrId, status, opcode, len, imm, qpn, srcQp, srcNode, flags, solicited);
    }

    /** Completes send requests that are done, in order (IBA 10.8.5: completions in posting order). */
    void retire() {
        SendQueue q = sq;
        while (q.head < q.tail) {
            int s = q.slot(q.head);
            if (q.state[s] != SendQueue.DONE) {
                break;
            }
            q.head++;
            if (q.next < q.head) {
                q.next = q.head; // flushed in ERR before being sent
            }
            if (WrOpcodes.isReadOrAtomic(q.opcode[s]) && q.npsn[s] > 0) {
                // Released at retirement, not at its response: a later response may overtake an earlier
                // one, and the responder keeps only max_dest_rd_atomic of them to answer duplicates from.
                requester.rdOutstanding--;
            }
            if (!completeSend(s, q.status[s]) && state != QpState.ERR) {
                enterError();
                return;
            }
        }
    }

    /**
     * Ends send request {@code s} with {@code status} (an error) and moves the QP to ERR. Retries run out (the peer is
     * silent or never ready) also raise QP_FATAL: hardware reports that in the completion only, but an
     * application waiting on events rather than on that CQ learns so that the connection is gone.
     */
    void fail(int s, int status) {
        sq.state[s] = SendQueue.DONE;
        sq.status[s] = status;
        if (state != QpState.ERR && (status == WcStatus.RETRY_EXC_ERR || status == WcStatus.RNR_RETRY_EXC_ERR)) {
            raise(AsyncEventType.QP_FATAL);
        }
        enterError();
    }

    /**
     * The responder NAKed a request with class C {@code nakCode} (IBA 9.9.3.1.3) and the QP goes to ERR: IBA 11.6.3.1's
     * affiliated asynchronous error for it, Local Access Violation (QP_ACCESS_ERR) for a remote access error, Invalid
     * Request (QP_REQ_ERR) for an invalid request, Catastrophic (QP_FATAL) for a remote operational error.
     */
    void responderFailed(int nakCode) {
        if (state != QpState.ERR) {
            raise(nakCode == dev.nupa.roce.wire.Aeth.NAK_REMOTE_ACCESS_ERROR ? AsyncEventType.QP_ACCESS_ERR
                    : nakCode == dev.nupa.roce.wire.Aeth.NAK_INVALID_REQUEST ? AsyncEventType.QP_REQ_ERR : AsyncEventType.QP_FATAL);
        }
        enterError();
    }

    /**
     * Whether this RC QP's peer is fabric node {@code node}, or (RoCEv2) one of the IPv4 {@code addresses} it held, and
     * it still talks to it (RTR, RTS, SQD, SQE): a QP that {@link #peerLost} ends when that node dies.
     */
    boolean talksTo(int node, int[] addresses) {
        if (type != QpType.RC || destroyed
                || !(state == QpState.RTR || state == QpState.RTS || state == QpState.SQD || state == QpState.SQE)) {
            return false;
        }
        if (attr.destNode >= 0) {
            return attr.destNode == node;
        }
        for (int a : addresses) {
            if (a == attr.destIp) {
                return true;
            }
        }
        return false;
    }

    /**
     * The peer's node died or restarted (the fabric's liveness says so): its QP and state are gone, so no request will
     * ever be answered. Rather than retry into nothing until the retry count runs out, end now as rxe does then
     * (rxe_comp.c: the oldest outstanding request completes with IBV_WC_RETRY_EXC_ERR and the QP moves to ERR, as
     * ib_modify_qp to IB_QPS_ERR); IBA 10.3.1: the other requests and the receives complete with WR_FLUSH_ERR.
     */
    void peerLost() {
        for (long i = sq.head; i < sq.tail; i++) {
            int s = sq.slot(i);
            if (sq.state[s] != SendQueue.DONE) {
                fail(s, WcStatus.RETRY_EXC_ERR); // the oldest outstanding, sent or waiting out an RNR NAK to send again
                return;
            }
        }
        raise(AsyncEventType.QP_FATAL); // as fail() raises it for the request it ends
        enterError();
    }

    /** IBA 10.3.1: ERR flushes every outstanding request with WR_FLUSH_ERR; the transport stops. */
    void enterError() {
        if (state == QpState.ERR) {
            return;
        }
        state = QpState.ERR;
        if (mirror != null) {
            mirror.close(); // no more direct SENDs; those placed already complete before the flush below
        }
        publish();
        for (long i = sq.head; i < sq.tail; i++) {
            int s = sq.slot(i);
            if (sq.state[s] != SendQueue.DONE) {
                sq.state[s] = SendQueue.DONE;
                sq.status[s] = WcStatus.WR_FLUSH_ERR;
            }
        }
        requester.stop();
        responder.stop(true);
        retire();
        flushReceives();
        if (srq != null) {
            // IBA 11.6.3.3: a QP of an SRQ that enters ERR, by an error or a modify, takes no more of its
            // receives; the event tells the application it may destroy the QP without losing one.
            raise(AsyncEventType.QP_LAST_WQE_REACHED);
        }
    }

    private void flushReceives() {
        if (rq == null) {
            return; // a shared queue's requests belong to the other QPs too
        }
        if (mirror != null) {
            absorbDirect(); // placed before the error: they completed
        }
        for (int s = rq.peek(); s >= 0; s = rq.peek()) {
            rq.pop();
            if (!completeRecv(rq.wrId[s], WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, 0, 0, false)) {
                break;
            }
        }
    }

    private void reset() {
        state = QpState.RESET;
        directTarget.window = null;
        sq.head = sq.next = sq.tail = 0;
        if (rq != null) {
            rq.head = rq.tail = 0;
        }
        sendTarget.forget();
        if (mirror != null) {
            mirror.restart();
        }
        requester.stop();
        responder.stop(false); // RESET discards outstanding work without completions
        publish();
    }

    void publish() {
        boolean rc = type == QpType.RC;
        device.directory.publishQp(qpn, state, pdId, attr.qpAccessFlags, type, mirror == null ? null : mirror.window,
                rc ? attr.destNode : -1, rc ? attr.destQpNum : -1);
    }

    /** Destroys the transport ({@code ibv_destroy_qp}): outstanding requests are dropped without completions. */
    public void destroy() {
        destroyed = true;
        state = QpState.RESET;
        device.remove(this);
        if (mirror != null) {
            mirror.close(); // a requester that checked before the epoch moved fails its claim
            recvCq.removeDirect(this);
            mirror.window.close();
        }
    }

    @Override
    public String toString() {
        String peer = attr.destIp != 0 ? ", peer " + RoceIp.toString(attr.destIp) : ", peer node " + attr.destNode;
        return type + " QP " + qpn + " (" + state + (type == QpType.RC ? peer + " qp " + attr.destQpNum : "") + ", " + mode + ")";
    }
}
