package dev.nupa.roce;

import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.IntUnaryOperator;

/**
 * A connection manager in the manner of rdma_cm: a server {@link #listen listens} on a port of its
 * node's IPv4 address, a client {@link #connect connects} to an IPv4 address and port; the two
 * exchange QP numbers, starting PSNs, path MTU, READ/atomic depths and up to 56 bytes of private data
 * in REQ, REP and RTU messages (IBA 12's CM, carried as UD SENDs to QP 1, docs/rdma.md), and each side
 * moves its QP to RTS itself, as {@code rdma_connect} and {@code rdma_accept} do. REQ, REP and DREQ are
 * resent until answered; duplicates are answered again, never acted on twice.
 *
 * <p>Like its context it belongs to the context's thread: Futures complete and handlers run there.
 */
public final class RdmaCm implements AutoCloseable {
    /** The QP number the CM listens on (IBA 10.2.4: QP 1 is the general services interface). */
    public static final int CM_QPN = 1;

    /** Transport parameters the CM gives the QPs it connects, and its own retransmission policy. */
    public record Options(int pathMtu, int timeout, int retryCount, int rnrRetry, int minRnrTimer, int rdAtomic,
            long resendNs, int resends) {
        public static Options defaults() {
            return new Options(4096, 14, 7, 7, 12, 4, 100_000_000L, 8);
        }

        public Options withResend(long ns, int times) {
            return new Options(pathMtu, timeout, retryCount, rnrRetry, minRnrTimer, rdAtomic, ns, times);
        }

        public Options withTransport(int timeout, int retryCount, int rnrRetry) {
            return new Options(pathMtu, timeout, retryCount, rnrRetry, minRnrTimer, rdAtomic, resendNs, resends);
        }
    }

    /** What a connection ended up with: the local QP (in RTS), the peer, and the peer's private data. */
    public record Connection(QueuePair qp, int peerNode, int peerQpn, byte[] privateData) {
    }

    /** An incoming connection request: accept it with a QP of your own, or reject it. */
    public interface ConnectRequest {
        int peerNode();

        int port();

        byte[] privateData();

        /** Moves {@code qp} (RC, in RESET or INIT) to RTS and answers with a REP; completes when the RTU arrives. */
        Future<Connection> accept(QueuePair qp, byte[] privateData);

        void reject(byte[] privateData);
    }

    private static final int REQ_SENT = 1;
    private static final int REQ_RECEIVED = 2;
    private static final int REP_SENT = 3;
    private static final int ESTABLISHED = 4;
    private static final int DREQ_SENT = 5;
    private static final int CLOSED = 6;

    private final class Session implements ConnectRequest {
        final int localComm;
        int remoteComm;
        final int peerNode;
        final int port;
        int state;
        QueuePair qp;
        int psn;
        int peerQpn;
        int peerPsn;
        int mtu;
        int peerDepth;
        byte[] peerPrivate = new byte[0];
        byte[] ownPrivate = new byte[0];
        Promise<Connection> promise;
        long deadline;
        int tries;

        Session(int localComm, int peerNode, int port) {
            this.localComm = localComm;
            this.peerNode = peerNode;
            this.port = port;
        }

        @Override
        public int peerNode() {
            return peerNode;
        }

        @Override
        public int port() {
            return port;
        }

        @Override
        public byte[] privateData() {
            return peerPrivate.clone();
        }

        @Override
        public Future<Connection> accept(QueuePair q, byte[] privateData) {
            if (state != REQ_RECEIVED) {
                return Future.failedFuture(new RdmaException("connection request from node " + peerNode + " was already answered"));
            }
            try {
                checkQp(q);
                checkPrivate(privateData);
                qp = q;
                psn = random.nextInt(Psn.MASK + 1);
                ownPrivate = privateData.clone();
                toRts(this);
            } catch (RdmaException e) {
                send(peerNode, CmMessage.REJ, this, 0, CmMessage.REJECT_CONSUMER, new byte[0]);
                forget(this);
                return Future.failedFuture(e);
            }
            promise = Promise.promise();
            state = REP_SENT;
            byQp.put(q, this);
            sendRep(this);
            arm(this);
            return promise.future();
        }

        @Override
        public void reject(byte[] privateData) {
            checkPrivate(privateData);
            if (state == REQ_RECEIVED) {
                send(peerNode, CmMessage.REJ, this, 0, CmMessage.REJECT_CONSUMER, privateData);
                forget(this);
            }
        }
    }

    private final RdmaContext ctx;
    private final IntUnaryOperator resolve;
    private final Options options;
    private final SplittableRandom random = new SplittableRandom();
    private final Map<Integer, Handler<ConnectRequest>> listeners = new HashMap<>();
    private final Map<Integer, Session> byComm = new HashMap<>();
    private final Map<Long, Session> byPeerComm = new HashMap<>();
    private final Map<QueuePair, Session> byQp = new HashMap<>();
    private Handler<QueuePair> disconnectHandler = q -> { };
    private boolean closed;
    /** Earliest resend deadline: poll does nothing before it, so an idle CM costs the datapath nothing. */
    private long nextDeadline = Long.MAX_VALUE;

    private RdmaCm(RdmaContext ctx, IntUnaryOperator resolve, Options options) {
        this.ctx = ctx;
        this.resolve = resolve;
        this.options = options;
    }

    /**
     * A CM on {@code ctx}; {@code resolve} maps an IPv4 address to the fabric node that holds it, or -1
     * (pass {@code neighborDirectory::lookup}).
     */
    public static RdmaCm create(RdmaContext ctx, IntUnaryOperator resolve, Options options) {
        RdmaCm cm = new RdmaCm(ctx, resolve, options);
        ctx.attach(cm);
        return cm;
    }

    public void listen(int port, Handler<ConnectRequest> handler) {
        checkPort(port);
        if (listeners.putIfAbsent(port, handler) != null) {
            throw new RdmaException("port " + port + " already has a listener on node " + ctx.node() + "; pick another port");
        }
    }

    public void unlisten(int port) {
        listeners.remove(port);
    }

    /** Runs when a peer disconnects one of our QPs (after the QP moved to ERR and flushed). */
    public void onDisconnect(Handler<QueuePair> handler) {
        this.disconnectHandler = handler;
    }

    /**
     * Connects {@code qp} (RC, in RESET or INIT) to the listener on {@code port} of {@code ipv4}. The
     * Future fails with a message naming the cause: unknown address, refused (no listener), rejected,
     * or timed out.
     */
    public Future<Connection> connect(int ipv4, int port, QueuePair qp, byte[] privateData) {
        try {
            checkPort(port);
            checkQp(qp);
            checkPrivate(privateData);
        } catch (RdmaException e) {
            return Future.failedFuture(e);
        }
        int node = resolve.applyAsInt(ipv4);
        if (node < 0) {
            return Future.failedFuture(new RdmaException("no fabric node holds " + ip(ipv4)
                    + " (rdma_resolve_addr failed); check the address and that the peer published it"));
        }
        Session s = new Session(newComm(), node, port);
        s.qp = qp;
        s.psn = random.nextInt(Psn.MASK + 1);
        s.ownPrivate = privateData.clone();
        s.promise = Promise.promise();
        s.state = REQ_SENT;
        toInit(qp);
        byComm.put(s.localComm, s);
        byQp.put(qp, s);
        sendReq(s);
        arm(s);
        return s.promise.future();
    }

    /** Sends a DREQ for {@code qp}'s connection and moves the QP to ERR (rdma_disconnect). */
    public void disconnect(QueuePair qp) {
        Session s = byQp.get(qp);
        if (s == null || (s.state != ESTABLISHED && s.state != REP_SENT)) {
            throw new RdmaException("QP " + qp.qpNum() + " has no connection made by this CM to disconnect");
        }
        qp.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
        if (s.state == REP_SENT) {
            s.promise.tryFail(new RdmaException("disconnected before the peer's RTU arrived"));
        }
        s.state = DREQ_SENT;
        s.tries = 0;
        send(s.peerNode, CmMessage.DREQ, s, 0, 0, new byte[0]);
        arm(s);
    }

    /**
     * Before {@code qp} is destroyed: disconnects its connection (as {@link #disconnect}), or withdraws a
     * connect still waiting for its REP (its Future fails); nothing if the CM holds nothing for it.
     */
    public void release(QueuePair qp) {
        Session s = byQp.get(qp);
        if (s == null) {
            return;
        }
        if (s.state == ESTABLISHED || s.state == REP_SENT) {
            disconnect(qp);
        } else if (s.state == REQ_SENT) {
            forget(s); // the peer's REP then finds no session and its accept times out waiting for the RTU
            s.promise.tryFail(new RdmaException("QP " + qp.qpNum() + " was released before the connection was made"));
        }
    }

    // ---- receiving ------------------------------------------------------------------------

    void onMessage(int srcNode, RocePacket pkt) {
        MemorySegment m = pkt.segment();
        long o = pkt.payload();
        if (closed || Deth.qkey(m, pkt.deth()) != CmMessage.GSI_QKEY || !CmMessage.valid(m, o, pkt.payloadLength())) {
            ctx.counters.add(RdmaCounter.MALFORMED, 1);
            return;
        }
        int id = CmMessage.id(m, o);
        switch (id) {
            case CmMessage.REQ -> onReq(srcNode, m, o);
            case CmMessage.REP -> onRep(srcNode, m, o);
            case CmMessage.RTU -> {
                Session s = byComm.get(CmMessage.remoteComm(m, o));
                if (s != null && s.peerNode == srcNode && s.state == REP_SENT) {
                    established(s);
                }
            }
            case CmMessage.REJ -> {
                Session s = byComm.get(CmMessage.remoteComm(m, o));
                if (s != null && s.peerNode == srcNode && s.state == REQ_SENT) {
                    int reason = CmMessage.reason(m, o);
                    forget(s);
                    s.promise.fail(new RdmaException(reason == CmMessage.REJECT_INVALID_SERVICE_ID
                            ? "connection refused: node " + srcNode + " has no listener on port " + s.port
                            : "connection rejected by node " + srcNode + " (reason " + reason + ")"));
                }
            }
            case CmMessage.DREQ -> {
                Session s = byComm.get(CmMessage.remoteComm(m, o));
                if (s != null && s.peerNode == srcNode) {
                    boolean hadQp = s.qp != null && !s.qp.destroyed && s.state != REQ_RECEIVED;
                    if (s.promise != null) {
                        s.promise.tryFail(new RdmaException("node " + srcNode + " disconnected before the connection was established"));
                    }
                    s.state = CLOSED; // a request not yet answered is simply withdrawn: accept() then fails
                    if (hadQp) {
                        s.qp.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
                        disconnectHandler.handle(s.qp);
                    }
                    send(srcNode, CmMessage.DREP, s, 0, 0, new byte[0]);
                    forget(s); // a duplicate DREQ finds nothing; its sender gives up after its resends
                }
            }
            case CmMessage.DREP -> {
                Session s = byComm.get(CmMessage.remoteComm(m, o));
                if (s != null && s.peerNode == srcNode && s.state == DREQ_SENT) {
                    s.state = CLOSED;
                    forget(s);
                }
            }
            default -> ctx.counters.add(RdmaCounter.MALFORMED, 1);
        }
    }

    private void onReq(int srcNode, MemorySegment m, long o) {
        int remoteComm = CmMessage.localComm(m, o);
        long key = ((long) srcNode << 32) | (remoteComm & 0xFFFFFFFFL);
        Session s = byPeerComm.get(key);
        if (s != null) {
            if (s.state == REP_SENT || s.state == ESTABLISHED) {
                sendRep(s); // our REP was lost: answer the duplicate REQ again
            }
            return;
        }
        int port = CmMessage.port(m, o);
        Handler<ConnectRequest> h = listeners.get(port);
        s = new Session(newComm(), srcNode, port);
        s.remoteComm = remoteComm;
        if (h == null) {
            send(srcNode, CmMessage.REJ, s, 0, CmMessage.REJECT_INVALID_SERVICE_ID, new byte[0]);
            return;
        }
        s.peerQpn = CmMessage.qpn(m, o);
        s.peerPsn = CmMessage.psn(m, o) & Psn.MASK;
        s.mtu = Math.min(options.pathMtu(), CmMessage.mtu(m, o));
        s.peerDepth = CmMessage.initiatorDepth(m, o);
        s.peerPrivate = CmMessage.privateData(m, o);
        s.state = REQ_RECEIVED;
        byComm.put(s.localComm, s);
        byPeerComm.put(key, s);
        h.handle(s);
    }

    private void onRep(int srcNode, MemorySegment m, long o) {
        Session s = byComm.get(CmMessage.remoteComm(m, o));
        if (s == null || s.peerNode != srcNode) {
            return;
        }
        if (s.state == ESTABLISHED) {
            send(srcNode, CmMessage.RTU, s, 0, 0, new byte[0]); // our RTU was lost
            return;
        }
        if (s.state != REQ_SENT) {
            return;
        }
        s.remoteComm = CmMessage.localComm(m, o);
        s.peerQpn = CmMessage.qpn(m, o);
        s.peerPsn = CmMessage.psn(m, o) & Psn.MASK;
        s.mtu = Math.min(options.pathMtu(), CmMessage.mtu(m, o));
        s.peerDepth = CmMessage.initiatorDepth(m, o);
        s.peerPrivate = CmMessage.privateData(m, o);
        try {
            toRts(s);
        } catch (RdmaException e) {
            send(srcNode, CmMessage.REJ, s, 0, CmMessage.REJECT_CONSUMER, new byte[0]);
            forget(s);
            s.promise.fail(e);
            return;
        }
        send(srcNode, CmMessage.RTU, s, 0, 0, new byte[0]);
        established(s);
    }

    private void established(Session s) {
        s.state = ESTABLISHED;
        s.deadline = 0;
        s.promise.tryComplete(new Connection(s.qp, s.peerNode, s.peerQpn, s.peerPrivate.clone()));
    }

    // ---- QP transitions ---------------------------------------------------------------------

    /**
     * Moves a QP in RESET to INIT with remote write, read and atomic enabled, as {@code rdma_create_qp} does, so that
     * receives can be posted before the connection is made; a QP already past RESET is left as it is.
     */
    public static void toInit(QueuePair qp) {
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1)
                    .qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        }
    }

    private void toRts(Session s) {
        QueuePair qp = s.qp;
        toInit(qp);
        int depth = Math.min(options.rdAtomic(), RcResponder.MAX_RD_ATOMIC);
        qp.modify(new QpAttr().qpState(QpState.RTR).destNode(s.peerNode).pathMtu(s.mtu).destQpNum(s.peerQpn).rqPsn(s.peerPsn)
                .maxDestRdAtomic(depth).minRnrTimer(options.minRnrTimer()),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(s.psn).timeout(options.timeout()).retryCnt(options.retryCount())
                .rnrRetry(options.rnrRetry()).maxRdAtomic(Math.min(depth, Math.max(1, s.peerDepth))),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    // ---- sending, timers --------------------------------------------------------------------

    private void sendReq(Session s) {
        send(s.peerNode, CmMessage.REQ, s, s.qp.qpNum(), 0, s.ownPrivate);
    }

    private void sendRep(Session s) {
        send(s.peerNode, CmMessage.REP, s, s.qp.qpNum(), 0, s.ownPrivate);
    }

    private void send(int node, int id, Session s, int qpn, int reason, byte[] privateData) {
        int n = CmMessage.HEADER + privateData.length;
        int pad = (-n) & 3;
        long o = ctx.claim(node, 0, CM_QPN, Bth.LENGTH + Deth.LENGTH + n + pad);
        if (o < 0) {
            return; // a full ring: REQ, REP and DREQ are resent by the timer, the rest answer duplicates
        }
        MemorySegment m = ctx.txMemory();
        Bth.write(m, o, Opcode.UD_SEND_ONLY, false, pad, Bth.DEFAULT_PKEY, CM_QPN, false, 0);
        Deth.write(m, o + Bth.LENGTH, CmMessage.GSI_QKEY, CM_QPN);
        long p = o + Bth.LENGTH + Deth.LENGTH;
        int depth = Math.min(options.rdAtomic(), RcResponder.MAX_RD_ATOMIC);
        CmMessage.write(m, p, id, s.localComm, s.remoteComm, s.port, qpn, s.psn, options.pathMtu(), depth, depth,
                options.retryCount(), options.rnrRetry(), options.timeout(), reason, privateData);
        m.asSlice(p + n, pad).fill((byte) 0);
        ctx.publish();
    }

    private void arm(Session s) {
        s.deadline = ctx.clock.getAsLong() + options.resendNs();
        nextDeadline = Math.min(nextDeadline, s.deadline);
    }

    /** Resends unanswered REQs, REPs and DREQs; gives up after {@link Options#resends}. */
    long poll(long now) {
        if (now - nextDeadline < 0) {
            return nextDeadline;
        }
        long next = Long.MAX_VALUE;
        List<Session> expired = null;
        for (Session s : byComm.values()) {
            if (s.deadline == 0) {
                continue;
            }
            if (now - s.deadline >= 0) {
                if (++s.tries > options.resends()) {
                    (expired == null ? expired = new ArrayList<>() : expired).add(s);
                    continue;
                }
                switch (s.state) {
                    case REQ_SENT -> sendReq(s);
                    case REP_SENT -> sendRep(s);
                    case DREQ_SENT -> send(s.peerNode, CmMessage.DREQ, s, 0, 0, new byte[0]);
                    default -> {
                        s.deadline = 0;
                        continue;
                    }
                }
                s.deadline = now + options.resendNs();
            }
            next = Math.min(next, s.deadline);
        }
        if (expired != null) {
            for (Session s : expired) {
                forget(s);
                if (s.promise != null && s.state != DREQ_SENT) {
                    s.promise.tryFail(new RdmaException("connection to node " + s.peerNode + " port " + s.port + " timed out: no "
                            + (s.state == REQ_SENT ? "REP" : "RTU") + " after " + options.resends() + " resends"));
                }
            }
        }
        nextDeadline = next;
        return next;
    }

    private void forget(Session s) {
        byComm.remove(s.localComm);
        byPeerComm.remove(((long) s.peerNode << 32) | (s.remoteComm & 0xFFFFFFFFL));
        if (s.qp != null && byQp.get(s.qp) == s) {
            byQp.remove(s.qp);
        }
        s.deadline = 0;
    }

    private int newComm() {
        int c;
        do {
            c = random.nextInt();
        } while (c == 0 || byComm.containsKey(c));
        return c;
    }

    private void checkQp(QueuePair qp) {
        if (qp == null || qp.ctx != ctx || qp.type != QpType.RC || (qp.state() != QpState.RESET && qp.state() != QpState.INIT)) {
            throw new RdmaException("the CM connects RC QPs of its own context in RESET or INIT; "
                    + (qp == null ? "got null" : "QP " + qp.qpNum() + " is " + qp.type + " in " + qp.state()));
        }
    }

    private static void checkPrivate(byte[] privateData) {
        if (privateData.length > CmMessage.MAX_PRIVATE_DATA) {
            throw new RdmaException(privateData.length + " bytes of private data exceed the " + CmMessage.MAX_PRIVATE_DATA + " a CM message carries");
        }
    }

    private static void checkPort(int port) {
        if (port < 1 || port > 0xFFFF) {
            throw new RdmaException("port " + port + " is outside 1..65535");
        }
    }

    private static String ip(int a) {
        return (a >>> 24) + "." + ((a >>> 16) & 0xFF) + "." + ((a >>> 8) & 0xFF) + "." + (a & 0xFF);
    }

    @Override
    public void close() {
        closed = true;
        listeners.clear();
        for (Session s : new ArrayList<>(byComm.values())) {
            forget(s);
            if (s.promise != null) {
                s.promise.tryFail(new RdmaException("the connection manager was closed"));
            }
        }
        ctx.attach(null);
    }
}
