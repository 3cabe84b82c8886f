package dev.nupa.roce;

import dev.nupa.device.Trace;
import dev.nupa.ip.Ipv4Address;
import dev.nupa.roce.wire.Icrc;
import dev.nupa.roce.wire.Psn;
import static dev.nupa.roce.QpAttrMask.*;

/**
 * A queue pair ({@code ibv_qp}): a send queue and a receive queue (its own or a shared one) and the
 * transport that serves them, split like Soft-RoCE into {@link RcRequester} (sends requests),
 * {@link RcResponder} (executes the peer's requests) and {@link RcCompleter} (takes the peer's
 * responses and completes work). Sans-IO: the context feeds it packets and {@link #poll ticks} with
 * {@code now}; it emits frames through the context.
 *
 * <p>Like every verbs object it belongs to the context's thread (see {@link RdmaContext}).
 */
public final class QueuePair implements AutoCloseable {
    final RdmaContext ctx;
    final ProtectionDomain pd;
    final int qpn;
    final QpType type;
    final TransferMode mode;
    final CompletionQueue sendCq;
    final CompletionQueue recvCq;
    final SharedReceiveQueue srq;
    final RecvQueue rq;
    final SendQueue sq;
    final boolean sqSigAll;
    final QpAttr attr = new QpAttr();
    final RcRequester requester;
    final RcResponder responder;
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

    QueuePair(RdmaContext ctx, ProtectionDomain pd, int qpn, QpInitAttr init) {
        this.ctx = ctx;
        this.pd = pd;
        this.qpn = qpn;
        this.type = init.type();
        this.mode = init.mode();
        this.sendCq = init.sendCq();
        this.recvCq = init.recvCq();
        this.srq = init.srq();
        this.rq = srq == null ? new RecvQueue(init.maxRecvWr(), init.maxRecvSge()) : null;
        this.sq = new SendQueue(init.maxSendWr(), init.maxSendSge(), init.maxInlineData());
        this.sqSigAll = init.sqSigAll();
        this.requester = new RcRequester(this);
        this.responder = new RcResponder(this);
        this.completer = new RcCompleter(this);
    }

    public int qpNum() {
        return qpn;
    }

    /** The context the QP belongs to (ibv_qp's context). */
    public RdmaContext context() {
        return ctx;
    }

    /** Whether {@code destroy} was called on it (or its context closed). */
    public boolean isDestroyed() {
        return destroyed;
    }

    public QpType type() {
        return type;
    }

    public QpState state() {
        return state;
    }

    public TransferMode mode() {
        return mode;
    }

    public ProtectionDomain pd() {
        return pd;
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
        into.maxRdAtomic = attr.maxRdAtomic;
        into.maxDestRdAtomic = attr.maxDestRdAtomic;
        into.minRnrTimer = attr.minRnrTimer;
        into.timeout = attr.timeout;
        into.retryCnt = attr.retryCnt;
        into.rnrRetry = attr.rnrRetry;
        return into;
    }

    /**
     * Changes attributes and, with {@link QpAttrMask#STATE}, the state ({@code ibv_modify_qp}). The
     * transition and the attribute mask are checked against IBA 10.3.1 / table 91 first; an illegal one
     * throws RdmaException naming it and changes nothing.
     */
    public void modify(QpAttr a, int mask) {
        requireLive();
        QpState to = (mask & STATE) != 0 ? a.qpState : state;
        if ((mask & CUR_STATE) != 0 && a.curQpState != state) {
            throw new RdmaException("modify says the QP is in " + a.curQpState + " but QP " + qpn + " is in " + state);
        }
        QpTransitions.check(type, state, to, mask);
        if ((mask & (ALT_PATH | PATH_MIG_STATE)) != 0) {
            // IBA 17.2.8 path migration needs an alternate path; the fabric has one path between two nodes.
            throw new RdmaException("modify of QP " + qpn + ": path migration (ALT_PATH, PATH_MIG_STATE) is not supported"
                    + " (the fabric has one path between two nodes); leave these bits out of the mask");
        }
        validate(a, mask);
        if ((mask & PATH_MTU) != 0) attr.pathMtu = a.pathMtu;
        if ((mask & QKEY) != 0) attr.qkey = a.qkey;
        if ((mask & DEST_QPN) != 0) attr.destQpNum = a.destQpNum;
        if ((mask & ACCESS_FLAGS) != 0) attr.qpAccessFlags = a.qpAccessFlags;
        if ((mask & PKEY_INDEX) != 0) attr.pkeyIndex = a.pkeyIndex;
        if ((mask & PORT) != 0) attr.portNum = a.portNum;
        if ((mask & AV) != 0) {
            attr.destNode = a.destIp != 0 ? -1 : a.destNode;
            attr.destIp = a.destIp;
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
                    ctx.activate(this); // a receive-only QP in RTR owes ACKs and READ responses too
                }
            }
        }
    }

    private void validate(QpAttr a, int mask) {
        if ((mask & PATH_MTU) != 0 && (a.pathMtu < 256 || a.pathMtu > 4096 || Integer.bitCount(a.pathMtu) != 1)) {
            throw new RdmaException("path MTU " + a.pathMtu + " is not an InfiniBand MTU; use 256, 512, 1024, 2048 or 4096");
        }
        if ((mask & PATH_MTU) != 0 && a.pathMtu + RcRequester.MAX_HEADERS > ctx.link.mtu()) {
            throw new RdmaException("path MTU " + a.pathMtu + " plus " + RcRequester.MAX_HEADERS
                    + " header bytes exceeds the link MTU of " + ctx.link.mtu() + "; pick a smaller path MTU");
        }
        if ((mask & ACCESS_FLAGS) != 0) {
            Access.check(a.qpAccessFlags, "queue pair");
        }
        if ((mask & AV) != 0 && a.destIp != 0) {
            if (a.destNode >= 0) {
                throw new RdmaException("address vector names fabric node " + a.destNode + " and IP peer "
                        + Ipv4Address.toString(a.destIp) + "; name one (destNode for the fabric, destIp for RoCEv2)");
            }
            if (ctx.ip() == null) {
                throw new RdmaException("address vector names IP peer " + Ipv4Address.toString(a.destIp) + " but node " + ctx.node()
                        + " has no IP layer for RoCEv2; attach it (RdmaContext.attachIp) or name a fabric node");
            }
            if (mode == TransferMode.DIRECT) {
                throw new RdmaException("QP " + qpn + " places DIRECT, which needs a fabric peer; create it with TransferMode.PACKET"
                        + " to reach IP peer " + Ipv4Address.toString(a.destIp));
            }
            int path = (mask & PATH_MTU) != 0 ? a.pathMtu : attr.pathMtu;
            int room = ctx.ip().maxUnfragmentedUdpPayload() - Icrc.LENGTH;
            if (path + RcRequester.MAX_HEADERS > room) {
                throw new RdmaException("path MTU " + path + " plus " + RcRequester.MAX_HEADERS + " header bytes exceeds the "
                        + room + " bytes a RoCEv2 datagram carries on this node's IP layer; pick a smaller path MTU (1024 for Ethernet)");
            }
        } else if ((mask & AV) != 0 && (a.destNode < 0 || a.destNode >= ctx.link.device().geometry().maxNodes())) {
            throw new RdmaException("address vector names fabric node " + a.destNode + ", outside 0.."
                    + (ctx.link.device().geometry().maxNodes() - 1));
        }
        if ((mask & DEST_QPN) != 0 && (a.destQpNum <= 0 || a.destQpNum > Psn.MASK)) {
            throw new RdmaException("destination QP number " + a.destQpNum + " is outside 1..0xFFFFFF");
        }
        if ((mask & RQ_PSN) != 0 && !Psn.valid(a.rqPsn)) {
            throw new RdmaException("receive PSN 0x" + Integer.toHexString(a.rqPsn) + " is not a 24-bit PSN");
        }
        if ((mask & SQ_PSN) != 0 && !Psn.valid(a.sqPsn)) {
            throw new RdmaException("send PSN 0x" + Integer.toHexString(a.sqPsn) + " is not a 24-bit PSN");
        }
        if ((mask & TIMEOUT) != 0 && (a.timeout < 0 || a.timeout > 31)) {
            throw new RdmaException("local ACK timeout " + a.timeout + " is outside 0..31 (4.096 us * 2^timeout, 0 = none)");
        }
        if ((mask & RETRY_CNT) != 0 && (a.retryCnt < 0 || a.retryCnt > 7)) {
            throw new RdmaException("retry count " + a.retryCnt + " is outside 0..7");
        }
        if ((mask & RNR_RETRY) != 0 && (a.rnrRetry < 0 || a.rnrRetry > 7)) {
            throw new RdmaException("RNR retry count " + a.rnrRetry + " is outside 0..7 (7 = retry forever)");
        }
        if ((mask & MIN_RNR_TIMER) != 0) {
            RnrTimer.nanos(a.minRnrTimer);
        }
        if ((mask & MAX_QP_RD_ATOMIC) != 0 && (a.maxRdAtomic < 0 || a.maxRdAtomic > RcResponder.MAX_RD_ATOMIC)) {
            throw new RdmaException("max_rd_atomic " + a.maxRdAtomic + " is outside 0.." + RcResponder.MAX_RD_ATOMIC);
        }
        if ((mask & MAX_DEST_RD_ATOMIC) != 0 && (a.maxDestRdAtomic < 0 || a.maxDestRdAtomic > RcResponder.MAX_RD_ATOMIC)) {
            throw new RdmaException("max_dest_rd_atomic " + a.maxDestRdAtomic + " is outside 0.." + RcResponder.MAX_RD_ATOMIC);
        }
        if ((mask & PORT) != 0 && a.portNum != 1) {
            throw new RdmaException("port " + a.portNum + " does not exist; a fabric context has port 1");
        }
        if ((mask & PKEY_INDEX) != 0 && a.pkeyIndex != 0) {
            throw new RdmaException("P_Key index " + a.pkeyIndex + " does not exist; the table holds the default P_Key at index 0");
        }
    }

    /**
     * Posts a send request ({@code ibv_post_send}); copies it, so {@code wr} may be reused at once, and
     * starts transmitting before returning. Throws RdmaException for a malformed request, a full queue,
     * or a QP in a state that takes none (RESET, INIT, RTR); in ERR the request completes flushed.
     */
    public void postSend(SendWorkRequest wr) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.RDMA_OUT);
        }
        requireLive();
        if (state != QpState.RTS && state != QpState.SQD && state != QpState.ERR && state != QpState.SQE) {
            throw new RdmaException("QP " + qpn + " is in state " + state + "; postSend needs RTS: modify it to RTR, then RTS");
        }
        RdmaObserver o = ctx.observer;
        if (o != null && (sqSigAll || (wr.sendFlags & SendFlags.SIGNALED) != 0)) {
            o.posted(this, wr, ctx.clock.getAsLong()); // before: a direct operation completes within the post
        }
        requester.post(wr);
    }

    /** Posts a receive request ({@code ibv_post_recv}); throws if the QP uses a shared receive queue or is in RESET. */
    public void postRecv(RecvWorkRequest wr) {
        requireLive();
        if (srq != null) {
            throw new RdmaException("QP " + qpn + " takes its receives from a shared receive queue; post to it instead");
        }
        if (state == QpState.RESET) {
            throw new RdmaException("QP " + qpn + " is in RESET; modify it to INIT before posting receives");
        }
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
        mirror = RecvMirror.export(ctx.link.device(), rq.slots(), rq.maxSge);
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
            responder.flushNak();
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

    /** {@code qps} with {@code qp} appended unless it is there already (lists a context or CQ walks; set up rarely). */
    static QueuePair[] with(QueuePair[] qps, QueuePair qp) {
        for (QueuePair q : qps) {
            if (q == qp) {
                return qps;
            }
        }
        QueuePair[] a = java.util.Arrays.copyOf(qps, qps.length + 1);
        a[qps.length] = qp;
        return a;
    }

    /** {@code qps} without {@code qp}. */
    static QueuePair[] without(QueuePair[] qps, QueuePair qp) {
        return java.util.Arrays.stream(qps).filter(q -> q != qp).toArray(QueuePair[]::new);
    }

    /** How often a node's datapath looks for direct SENDs while a receive CQ waits for an event. */
    static final long DIRECT_RECV_POLL_NS = 20_000;

    // ---- completions and errors -------------------------------------------------------------

    boolean completeSend(int s, int status) {
        boolean signaled = sqSigAll || (sq.flags[s] & SendFlags.SIGNALED) != 0 || status != WcStatus.SUCCESS;
        if (!signaled) {
            return true;
        }
        int op = sq.opcode[s];
        int len = (int) sq.length[s];
        return sendCq.push(sq.wrId[s], status, WrOpcode.completionOpcode(op), len, 0, qpn, 0, 0, 0, false);
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
            if (WrOpcode.isReadOrAtomic(q.opcode[s]) && q.npsn[s] > 0) {
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

    /** Ends send request {@code s} with {@code status} (an error) and moves the QP to ERR. */
    void fail(int s, int status) {
        sq.state[s] = SendQueue.DONE;
        sq.status[s] = status;
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
        ctx.directory.publishQp(qpn, state, pd.id, attr.qpAccessFlags, type, mirror == null ? null : mirror.window,
                rc ? attr.destNode : -1, rc ? attr.destQpNum : -1);
    }

    private void requireLive() {
        if (destroyed) {
            throw new RdmaException("QP " + qpn + " was destroyed");
        }
    }

    /** Destroys the QP ({@code ibv_destroy_qp}): outstanding requests are dropped without completions. */
    @Override
    public void close() {
        if (!destroyed) {
            ctx.destroy(this);
        }
    }

    @Override
    public String toString() {
        String peer = attr.destIp != 0 ? ", peer " + Ipv4Address.toString(attr.destIp) : ", peer node " + attr.destNode;
        return type + " QP " + qpn + " (" + state + (type == QpType.RC ? peer + " qp " + attr.destQpNum : "") + ", " + mode + ")";
    }
}
