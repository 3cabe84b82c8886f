package dev.nupa.roce;

import dev.nupa.device.Trace;
import dev.nupa.roce.transport.QpTransport;
import dev.nupa.roce.transport.RcRequester;
import dev.nupa.roce.transport.RcResponder;
import dev.nupa.roce.transport.RnrTimer;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.RoceIp;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.wire.Icrc;
import dev.nupa.roce.wire.Psn;
import static dev.nupa.roce.verbs.QpAttrMask.*;

/**
 * A queue pair ({@code ibv_qp}): a send queue and a receive queue (its own or a shared one) and the
 * transport that serves them. This handle checks each verbs call and hands it to the QP's transport
 * ({@code dev.nupa.roce.transport.QpTransport}: requester, responder and completer, split like Soft-RoCE's),
 * which the context feeds packets and ticks.
 *
 * <p>Like every verbs object it belongs to the context's thread (see {@link RdmaContext}).
 */
public final class QueuePair implements AutoCloseable {
    final RdmaContext ctx;
    final ProtectionDomain pd;
    final CompletionQueue sendCq;
    final CompletionQueue recvCq;
    final SharedReceiveQueue srq;
    final QpTransport transport;

    QueuePair(RdmaContext ctx, ProtectionDomain pd, int qpn, QpInitAttr init) {
        this.ctx = ctx;
        this.pd = pd;
        this.sendCq = init.sendCq();
        this.recvCq = init.recvCq();
        this.srq = init.srq();
        this.transport = new QpTransport(ctx.device, qpn, pd.id, init.type(), init.mode(), init.cap(), init.sqSigAll(),
                sendCq.completions, recvCq.completions, srq == null ? null : srq.queue);
    }

    public int qpNum() {
        return transport.qpn;
    }

    /** The context the QP belongs to (ibv_qp's context). */
    public RdmaContext context() {
        return ctx;
    }

    /** Whether {@code destroy} was called on it (or its context closed). */
    public boolean isDestroyed() {
        return transport.destroyed();
    }

    public QpType type() {
        return transport.type;
    }

    public QpState state() {
        return transport.state();
    }

    public TransferMode mode() {
        return transport.mode;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** Copies the current attributes into {@code into} ({@code ibv_query_qp}) and returns it. */
    public QpAttr query(QpAttr into) {
        ctx.checkThread();
        return transport.query(into);
    }

    /**
     * Changes attributes and, with {@link QpAttrMask#STATE}, the state ({@code ibv_modify_qp}). The
     * transition and the attribute mask are checked against IBA 10.3.1 / table 91 first; an illegal one
     * throws RdmaException naming it and changes nothing.
     */
    public void modify(QpAttr a, int mask) {
        ctx.checkThread();
        requireLive();
        QpState state = transport.state();
        QpState to = (mask & STATE) != 0 ? a.qpState : state;
        if ((mask & CUR_STATE) != 0 && a.curQpState != state) {
            throw new RdmaException("modify says the QP is in " + a.curQpState + " but QP " + qpNum() + " is in " + state);
        }
        QpTransitions.check(transport.type, state, to, mask);
        if ((mask & (ALT_PATH | PATH_MIG_STATE)) != 0) {
            // IBA 17.2.8 path migration needs an alternate path; the fabric has one path between two nodes.
            throw new RdmaException("modify of QP " + qpNum() + ": path migration (ALT_PATH, PATH_MIG_STATE) is not supported"
                    + " (the fabric has one path between two nodes); leave these bits out of the mask");
        }
        validate(a, mask);
        transport.modify(a, mask, to);
    }

    private void validate(QpAttr a, int mask) {
        if ((mask & PATH_MTU) != 0 && (a.pathMtu < 256 || a.pathMtu > 4096 || Integer.bitCount(a.pathMtu) != 1)) {
            throw new RdmaException("path MTU " + a.pathMtu + " is not an InfiniBand MTU; use 256, 512, 1024, 2048 or 4096");
        }
        if ((mask & PATH_MTU) != 0 && a.pathMtu + RcRequester.MAX_HEADERS > ctx.link().mtu()) {
            throw new RdmaException("path MTU " + a.pathMtu + " plus " + RcRequester.MAX_HEADERS
                    + " header bytes exceeds the link MTU of " + ctx.link().mtu() + "; pick a smaller path MTU");
        }
        if ((mask & ACCESS_FLAGS) != 0) {
            Access.check(a.qpAccessFlags, "queue pair");
        }
        if ((mask & AV) != 0 && (a.sl < 0 || a.sl > 15)) {
            throw new RdmaException("service level " + a.sl + " is outside 0..15 (ibv_ah_attr.sl)");
        }
        if ((mask & AV) != 0 && a.destIp != 0) {
            if (a.destNode >= 0) {
                throw new RdmaException("address vector names fabric node " + a.destNode + " and IP peer "
                        + RoceIp.toString(a.destIp) + "; name one (destNode for the fabric, destIp for RoCEv2)");
            }
            if (ctx.ip() == null) {
                throw new RdmaException("address vector names IP peer " + RoceIp.toString(a.destIp) + " but node " + ctx.node()
                        + " has no IP layer for RoCEv2; attach it (RdmaContext.attachIp) or name a fabric node");
            }
            if (transport.mode == TransferMode.DIRECT) {
                throw new RdmaException("QP " + qpNum() + " places DIRECT, which needs a fabric peer; create it with TransferMode.PACKET"
                        + " to reach IP peer " + RoceIp.toString(a.destIp));
            }
            int path = (mask & PATH_MTU) != 0 ? a.pathMtu : transport.pathMtu();
            int room = ctx.ip().maxUdpPayload() - Icrc.LENGTH;
            if (path + RcRequester.MAX_HEADERS > room) {
                throw new RdmaException("path MTU " + path + " plus " + RcRequester.MAX_HEADERS + " header bytes exceeds the "
                        + room + " bytes a RoCEv2 datagram carries on this node's IP layer; pick a smaller path MTU (1024 for Ethernet)");
            }
        } else if ((mask & AV) != 0 && (a.destNode < 0 || a.destNode >= ctx.link().device().geometry().maxNodes())) {
            throw new RdmaException("address vector names fabric node " + a.destNode + ", outside 0.."
                    + (ctx.link().device().geometry().maxNodes() - 1));
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
        ctx.checkThread();
        QpTransport t = transport;
        requireLive();
        QpState state = t.state();
        if (state != QpState.RTS && state != QpState.SQD && state != QpState.ERR && state != QpState.SQE) {
            throw new RdmaException("QP " + t.qpn + " is in state " + state + "; postSend needs RTS: modify it to RTR, then RTS");
        }
        RdmaObserver o = ctx.observer;
        if (o != null && (t.sqSigAll || (wr.sendFlags & SendFlags.SIGNALED) != 0)) {
            o.posted(this, wr, ctx.device.clock.getAsLong()); // before: a direct operation completes within the post
        }
        t.post(wr);
    }

    /** Posts a receive request ({@code ibv_post_recv}); throws if the QP uses a shared receive queue or is in RESET. */
    public void postRecv(RecvWorkRequest wr) {
        ctx.checkThread();
        requireLive();
        if (srq != null) {
            throw new RdmaException("QP " + qpNum() + " takes its receives from a shared receive queue; post to it instead");
        }
        if (transport.state() == QpState.RESET) {
            throw new RdmaException("QP " + qpNum() + " is in RESET; modify it to INIT before posting receives");
        }
        transport.postRecv(wr);
    }

    private void requireLive() {
        if (transport.destroyed()) {
            throw new RdmaException("QP " + qpNum() + " was destroyed");
        }
    }

    /** Destroys the QP ({@code ibv_destroy_qp}): outstanding requests are dropped without completions. */
    @Override
    public void close() {
        ctx.checkThread();
        if (!transport.destroyed()) {
            ctx.destroy(this);
        }
    }

    @Override
    public String toString() {
        return transport.toString();
    }
}
