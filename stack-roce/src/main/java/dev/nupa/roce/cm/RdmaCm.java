package dev.nupa.roce.cm;

import dev.nupa.roce.Gsi;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.GsiAgent;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.CmMad;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.Psn;
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
 * node's IPv4 address, a client {@link #connect connects} to an IPv4 address and port; each side moves
 * its QP to RTS itself, as {@code rdma_connect} and {@code rdma_accept} do. It speaks the InfiniBand CM
 * (IBA 12: REQ, REP, RTU, REJ, MRA, DREQ and DREP as 256-byte MADs, UD SENDs to QP 1 with the GSI Q_Key;
 * {@link CmMad}) with rdma_cm's service IDs and REQ header, to fabric nodes over the fabric and to IP peers
 * over RoCEv2, so Linux's rdma_cm (rping, perftest -R) connects to it and it to them. REQ, REP and DREQ
 * are resent until answered; an MRA stretches the wait; duplicates are answered again, never acted on twice.
 *
 * <p>Like its context it belongs to the context's thread: Futures complete and handlers run there.
 */
public final class RdmaCm implements AutoCloseable {
    /** The QP number the CM listens on (IBA 10.2.4: QP 1 is the general services interface). */
    public static final int CM_QPN = RdmaContext.GSI_QPN;
    /** Private data a connect carries (rdma_cm's 56 of the REQ's 92 bytes); an accept up to 196, a reject 148. */
    public static final int MAX_CONNECT_PRIVATE = CmMad.MAX_PRIVATE_DATA;
    /**
     * Resends to IP peers wait at least this long, and are tried at least {@link CmMad#MAX_CM_RETRIES} times (as
     * rdma_cm does): a peer's kernel answers within milliseconds, but its application may take seconds to accept,
     * and a REQ given up too soon leaves the peer holding a connection that a new REQ from the same QP collides
     * with (REJ "stale connection").
     */
    static final long IP_RESEND_NS = 1_000_000_000L;

    /**
     * Transport parameters the CM gives the QPs it connects, and its own retransmission policy. {@code pathMtu}
     * is offered to fabric nodes, {@code ipPathMtu} to IP peers (1024 fits a 1500-byte Ethernet with IPv4, UDP,
     * the transport headers and the ICRC, as Linux picks for one); each side takes the smaller offer.
     */
    public record Options(int pathMtu, int timeout, int retryCount, int rnrRetry, int minRnrTimer, int rdAtomic,
            long resendNs, int resends, int ipPathMtu) {
        /**
         * The ACK timeout is 17 (4.096 us x 2^17, about 537 ms a try, 4.3 s over 7 retries), as Linux's rdma_cm gives a
         * RoCE path (CMA_IBOE_PACKET_LIFETIME 16, and cm_ack_timeout adds 1): a responder here is a process, and one
         * the host did not schedule for half a second must not end a connection that nothing lost.
         */
        public static Options defaults() {
            return new Options(4096, 17, 7, 7, 12, 4, 100_000_000L, 8, 1024);
        }

        public Options withResend(long ns, int times) {
            return new Options(pathMtu, timeout, retryCount, rnrRetry, minRnrTimer, rdAtomic, ns, times, ipPathMtu);
        }

        public Options withTransport(int timeout, int retryCount, int rnrRetry) {
            return new Options(pathMtu, timeout, retryCount, rnrRetry, minRnrTimer, rdAtomic, resendNs, resends, ipPathMtu);
        }

        public Options withIpPathMtu(int bytes) {
            return new Options(pathMtu, timeout, retryCount, rnrRetry, minRnrTimer, rdAtomic, resendNs, resends, bytes);
        }
    }

    /**
     * What a connection ended up with: the local QP (in RTS), the peer (a fabric node, or -1 and its IPv4 address),
     * and the peer's private data, the whole area of the message that carried it (56 bytes from a REQ, 196 from
     * a REP, zero-padded, as rdma_cm gives it).
     */
    public record Connection(QueuePair qp, int peerNode, int peerIp, int peerQpn, byte[] privateData) {
    }

    /** An incoming connection request: accept it with a QP of your own, or reject it. */
    public interface ConnectRequest {
        /** The fabric node that asked, or -1 for an IP peer ({@link #peerIp}). */
        int peerNode();

        /** The IPv4 address that asked (from rdma_cm's header, or the RoCEv2 packet's source). */
        int peerIp();

        int port();

        /** The application's 56 bytes of the REQ's private data. */
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

    /** Who a message came from or goes to: a fabric node, or (node -1) an IP peer. */
    private record Peer(int node, int ip) {
        @Override
        public String toString() {
            return node >= 0 ? "node " + node : RdmaCm.ip(ip);
        }
    }

    /** A peer's communication ID: how a duplicate REQ is known. */
    private record PeerComm(Peer peer, int comm) {
    }

    private final class Session implements ConnectRequest {
        final int localComm;
        int remoteComm;
        final Peer peer;
        final int port;
        int state;
        long tid;
        QueuePair qp;
        int psn; // what we receive first: our RQ PSN, announced in our REQ or REP
        int peerQpn;
        int peerPsn; // what we send first
        int mtu;
        int responderResources; // the peer's READs and atomics we answer at once: our QP's max_dest_rd_atomic
        int initiatorDepth; // ours we keep outstanding, no more than the peer answers: our QP's max_rd_atomic
        int requestIp; // the peer's IPv4 address as the application named it (rdma_cm's header); 0: the packets'
        byte[] peerPrivate = new byte[0];
        byte[] ownPrivate = new byte[0];
        Promise<Connection> promise;
        long deadline;
        int tries;
        long giveUpAt; // a REQ is resent until then even past its count of resends

        Session(int localComm, Peer peer, int port) {
            this.localComm = localComm;
            this.peer = peer;
            this.port = port;
        }

        @Override
        public int peerNode() {
            return peer.node;
        }

        @Override
        public int peerIp() {
            return requestIp != 0 ? requestIp : peer.ip;
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
            ctx.checkThread();
            if (state != REQ_RECEIVED) {
                return Future.failedFuture(new RdmaException("connection request from " + peer + " was already answered"));
            }
            try {
                checkQp(q);
                checkPrivate(privateData, CmMad.REP_PRIVATE, "an accept");
                qp = q;
                psn = random.nextInt(Psn.MASK + 1);
                ownPrivate = privateData.clone();
                toRts(this);
            } catch (RdmaException e) {
                sendRej(this, CmMad.MSG_REQ, CmMad.REJECT_CONSUMER, new byte[0]);
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
            ctx.checkThread();
            checkPrivate(privateData, CmMad.REJ_PRIVATE, "a reject");
            if (state == REQ_RECEIVED) {
                sendRej(this, CmMad.MSG_REQ, CmMad.REJECT_CONSUMER, privateData);
                forget(this);
            }
        }
    }

    private final RdmaContext ctx;
    private Gsi gsi;
    private final IntUnaryOperator resolve;
    private final Options options;
    private final SplittableRandom random = new SplittableRandom();
    /** This CM's CA GUID (IBA 12.7.4): with a communication ID it names a connection to the peer. */
    private final long caGuid = 0x0200000000000000L | (random.nextLong() & 0x00FFFFFFFFFFFFFFL);
    private final Map<Integer, Handler<ConnectRequest>> listeners = new HashMap<>();
    private final Map<Integer, Session> byComm = new HashMap<>();
    private final Map<PeerComm, Session> byPeerComm = new HashMap<>();
    private final Map<QueuePair, Session> byQp = new HashMap<>();
    private Handler<QueuePair> disconnectHandler = q -> { };
    private boolean closed;
    private long nextTid = random.nextLong() & 0x7FFFFFFF00000000L;
    /** Earliest resend deadline: poll does nothing before it, so an idle CM costs the datapath nothing. */
    private long nextDeadline = Long.MAX_VALUE;

    private RdmaCm(RdmaContext ctx, IntUnaryOperator resolve, Options options) {
        this.ctx = ctx;
        this.resolve = resolve;
        this.options = options;
    }

    /**
     * A CM on {@code ctx}; {@code resolve} maps an IPv4 address to the fabric node that holds it, or -1
     * (pass {@code neighborDirectory::lookup}). An address no fabric node holds is reached over RoCEv2 when
     * the context has an IP layer ({@link RdmaContext#attachIp}).
     */
    public static RdmaCm create(RdmaContext ctx, IntUnaryOperator resolve, Options options) {
        ctx.checkThread();
        RdmaCm cm = new RdmaCm(ctx, resolve, options);
        cm.gsi = ctx.attachGsi(new GsiAgent() {
            @Override
            public void onMessage(int srcNode, int srcIp, int qkey, MemorySegment m, long offset, int length) {
                cm.onMessage(srcNode, srcIp, qkey, m, offset, length);
            }

            @Override
            public long poll(long now) {
                return cm.poll(now);
            }
        });
        return cm;
    }

    public void listen(int port, Handler<ConnectRequest> handler) {
        ctx.checkThread();
        checkPort(port);
        if (listeners.putIfAbsent(port, handler) != null) {
            throw new RdmaException("port " + port + " already has a listener on node " + gsi.node() + "; pick another port");
        }
    }

    public void unlisten(int port) {
        ctx.checkThread();
        listeners.remove(port);
    }

    /** Runs when a peer disconnects one of our QPs (after the QP moved to ERR and flushed). */
    public void onDisconnect(Handler<QueuePair> handler) {
        ctx.checkThread();
        this.disconnectHandler = handler;
    }

    /**
     * Connects {@code qp} (RC, in RESET or INIT) to the listener on {@code port} of {@code ipv4}: a fabric node
     * that holds the address, else an IP peer over RoCEv2. The Future fails with a message naming the cause:
     * unknown address, refused (no listener), rejected, or timed out.
     */
    public Future<Connection> connect(int ipv4, int port, QueuePair qp, byte[] privateData) {
        return connect(ipv4, port, qp, privateData, 0);
    }

    /**
     * As {@link #connect(int, int, QueuePair, byte[])}, with the REQ resent for up to {@code waitNs} while nothing
     * answers it (at least the CM's own count of resends): for a peer that is still starting. Trying again with a
     * fresh REQ instead would race with the peer's answer to the last one: a REP that comes after we gave up finds no
     * session, and the peer's application waits on it until its own resends run out.
     */
    public Future<Connection> connect(int ipv4, int port, QueuePair qp, byte[] privateData, long waitNs) {
        ctx.checkThread();
        try {
            checkPort(port);
            checkQp(qp);
            checkPrivate(privateData, MAX_CONNECT_PRIVATE, "a connect");
        } catch (RdmaException e) {
            return Future.failedFuture(e);
        }
        int node = resolve.applyAsInt(ipv4);
        if (node < 0 && !gsi.hasIp()) {
            return Future.failedFuture(new RdmaException("no fabric node holds " + ip(ipv4)
                    + " (rdma_resolve_addr failed) and this context has no IP layer to reach it over RoCEv2;"
                    + " check the address, or attach the node's IP layer"));
        }
        Session s = new Session(newComm(), node >= 0 ? new Peer(node, 0) : new Peer(-1, ipv4), port);
        s.requestIp = ipv4;
        s.qp = qp;
        s.psn = random.nextInt(Psn.MASK + 1);
        s.ownPrivate = privateData.clone();
        s.promise = Promise.promise();
        s.state = REQ_SENT;
        s.tid = newTid();
        s.giveUpAt = gsi.now() + Math.max(0, waitNs);
        toInit(qp);
        byComm.put(s.localComm, s);
        byQp.put(qp, s);
        sendReq(s);
        arm(s);
        return s.promise.future();
    }

    /** Sends a DREQ for {@code qp}'s connection and moves the QP to ERR (rdma_disconnect). */
    public void disconnect(QueuePair qp) {
        ctx.checkThread();
        Session s = byQp.get(qp);
        if (s == null || (s.state != ESTABLISHED && s.state != REP_SENT)) {
            throw new RdmaException("QP " + qp.qpNum() + " has no connection made by this CM to disconnect");
        }
        // ERR first: the move sends the ACK the QP owes for requests it executed, so it reaches the peer before the DREQ.
        qp.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
        if (s.state == REP_SENT) {
            s.promise.tryFail(new RdmaException("disconnected before the peer's RTU arrived"));
        }
        s.state = DREQ_SENT;
        s.tries = 0;
        s.tid = newTid();
        sendDreq(s);
        arm(s);
    }

    /**
     * Before {@code qp} is destroyed: disconnects its connection (as {@link #disconnect}), or withdraws a
     * connect still waiting for its REP (its Future fails); nothing if the CM holds nothing for it.
     */
    public void release(QueuePair qp) {
        ctx.checkThread();
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

    /** A UD SEND to QP 1 from fabric node {@code srcNode}, or (node -1) from IP peer {@code srcIp}: its payload at {@code o}. */
    private void onMessage(int srcNode, int srcIp, int qkey, MemorySegment m, long o, int length) {
        if (closed || qkey != CmMad.GSI_QKEY || !CmMad.valid(m, o, length)) {
            gsi.malformed();
            return;
        }
        Peer from = new Peer(srcNode, srcNode >= 0 ? 0 : srcIp);
        int id = CmMad.attribute(m, o);
        switch (id) {
            case CmMad.REQ -> onReq(from, m, o);
            case CmMad.REP -> onRep(from, m, o);
            case CmMad.RTU -> {
                Session s = session(from, m, o);
                if (s != null && s.state == REP_SENT) {
                    established(s);
                }
            }
            case CmMad.REJ -> {
                Session s = session(from, m, o);
                if (s != null && (s.state == REQ_SENT || s.state == REP_SENT)) {
                    int reason = CmMad.rejReason(m, o);
                    if (s.state == REP_SENT) {
                        s.qp.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
                    }
                    forget(s);
                    s.promise.tryFail(new ConnectionRejected(reason == CmMad.REJECT_INVALID_SERVICE_ID
                            ? "connection refused: " + from + " has no listener on port " + s.port
                            : "connection rejected by " + from + " (IBA reason " + reason + ")", reason));
                }
            }
            case CmMad.MRA -> {
                Session s = session(from, m, o);
                if (s != null && (s.state == REQ_SENT || s.state == REP_SENT)) {
                    // IBA 12.6.6: the peer needs longer to answer; wait that, and count no resend.
                    s.deadline = gsi.now() + CmMad.timeoutNs(CmMad.mraTimeout(m, o)) + resendNs(s);
                    s.tries = 0;
                    nextDeadline = Math.min(nextDeadline, s.deadline);
                }
            }
            case CmMad.DREQ -> onDreq(from, m, o);
            case CmMad.DREP -> {
                Session s = session(from, m, o);
                if (s != null && s.state == DREQ_SENT) {
                    s.state = CLOSED;
                    forget(s);
                }
            }
            default -> gsi.malformed();
        }
    }

    /** The session a message from {@code from} names by our communication ID, or null. */
    private Session session(Peer from, MemorySegment m, long o) {
        Session s = byComm.get(CmMad.remoteComm(m, o));
        return s != null && s.peer.equals(from) ? s : null;
    }

    private void onReq(Peer from, MemorySegment m, long o) {
        int remoteComm = CmMad.localComm(m, o);
        PeerComm key = new PeerComm(from, remoteComm);
        Session dup = byPeerComm.get(key);
        if (dup != null) {
            if (dup.state == REP_SENT || dup.state == ESTABLISHED) {
                sendRep(dup); // our REP was lost: answer the duplicate REQ again
            } else if (dup.state == REQ_RECEIVED) {
                send(dup.peer, (mm, p) -> CmMad.writeMra(mm, p, dup.tid, dup.localComm, dup.remoteComm, CmMad.MSG_REQ,
                        CmMad.CM_RESPONSE_TIMEOUT)); // the application has not answered yet: ask for time
            }
            return;
        }
        long tid = CmMad.tid(m, o);
        Session s;
        long sid = CmMad.serviceId(m, o);
        int port = (int) (sid & 0xFFFF);
        Handler<ConnectRequest> h = (sid >>> 16) == CmMad.PS_TCP ? listeners.get(port) : null;
        s = new Session(newComm(), from, port);
        s.remoteComm = remoteComm;
        s.tid = tid;
        if (h == null) {
            sendRej(s, CmMad.MSG_REQ, CmMad.REJECT_INVALID_SERVICE_ID, new byte[0]);
            return;
        }
        if (CmMad.reqTransport(m, o) != 0 || !CmMad.reqHasCmaHeader(m, o)) {
            sendRej(s, CmMad.MSG_REQ, CmMad.REJECT_CONSUMER, new byte[0]); // as rdma_cm: RC, with its header
            return;
        }
        s.peerQpn = CmMad.reqQpn(m, o);
        s.peerPsn = CmMad.reqPsn(m, o);
        s.mtu = mtuBytes(CmMad.reqMtu(m, o)); // the REQ's path MTU binds both sides (Linux takes it as it is)
        // IBA 12.7.29 / 12.7.30: the REP answers no more READs and atomics than the REQ's initiator depth asks for,
        // and keeps no more outstanding than its responder resources offer (librdmacm's rdma_accept takes the least of
        // the request's and the device's); 0 means none: a READ or atomic is then NAKed as an invalid request, as rxe does.
        s.responderResources = Math.min(depth(), CmMad.reqInitiatorDepth(m, o));
        s.initiatorDepth = Math.min(depth(), CmMad.reqResponderResources(m, o));
        s.peerPrivate = CmMad.reqPrivateData(m, o);
        s.requestIp = CmMad.reqCmaSource(m, o); // the address the peer asked from
        s.state = REQ_RECEIVED;
        byComm.put(s.localComm, s);
        byPeerComm.put(key, s);
        try {
            h.handle(s);
        } catch (RuntimeException e) {
            // The listener failed on it: the peer hears a reject now rather than MRAs until it gives up.
            if (s.state == REQ_RECEIVED) {
                sendRej(s, CmMad.MSG_REQ, CmMad.REJECT_CONSUMER, new byte[0]);
                forget(s);
            }
        }
    }

    private void onRep(Peer from, MemorySegment m, long o) {
        Session s = session(from, m, o);
        if (s == null) {
            return;
        }
        if (s.state == ESTABLISHED) {
            sendShort(s, CmMad.RTU); // our RTU was lost
            return;
        }
        if (s.state != REQ_SENT) {
            return;
        }
        s.remoteComm = CmMad.localComm(m, o);
        s.peerQpn = CmMad.repQpn(m, o);
        s.peerPsn = CmMad.repPsn(m, o);
        // The active side takes the REP's figures as Linux's cm_rep_handler does, never more than its REQ offered.
        s.initiatorDepth = Math.min(depth(), CmMad.repResponderResources(m, o));
        s.responderResources = Math.min(depth(), CmMad.repInitiatorDepth(m, o));
        s.peerPrivate = CmMad.repPrivateData(m, o);
        try {
            toRts(s);
        } catch (RdmaException e) {
            sendRej(s, CmMad.MSG_REP, CmMad.REJECT_CONSUMER, new byte[0]);
            forget(s);
            s.promise.fail(e);
            return;
        }
        sendShort(s, CmMad.RTU);
        established(s);
    }

    private void onDreq(Peer from, MemorySegment m, long o) {
        Session s = session(from, m, o);
        long tid = CmMad.tid(m, o);
        int local = CmMad.remoteComm(m, o);
        int remote = CmMad.localComm(m, o);
        if (s != null && s.qp != null && CmMad.dreqQpn(m, o) != s.qp.qpNum() && s.state != REQ_RECEIVED) {
            return; // IBA 12.6.10: a DREQ for another QP is not for this connection (Linux drops it too)
        }
        if (s != null) {
            // Crossing DREQs: a QP its application disconnected itself is not reported again.
            boolean hadQp = s.qp != null && !s.qp.isDestroyed() && s.state != REQ_RECEIVED && s.state != DREQ_SENT;
            if (s.promise != null) {
                s.promise.tryFail(new RdmaException(from + " disconnected before the connection was established"));
            }
            s.state = CLOSED; // a request not yet answered is simply withdrawn: accept() then fails
            if (hadQp) {
                s.qp.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
                disconnectHandler.handle(s.qp);
            }
            forget(s);
        }
        // A DREP answers every DREQ, a duplicate or one for a connection already gone (as Linux's cm_issue_drep).
        send(from, (mm, p) -> CmMad.writeShort(mm, p, CmMad.DREP, tid, local, remote));
    }

    private void established(Session s) {
        s.state = ESTABLISHED;
        s.deadline = 0;
        s.promise.tryComplete(new Connection(s.qp, s.peer.node, s.peerIp(), s.peerQpn, s.peerPrivate.clone()));
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

    /**
     * RTR and RTS as the CM's messages settle them (Linux's cm_init_qp_rtr_attr, cm_init_qp_rts_attr): we receive
     * from the PSN we announced and send from the peer's; we answer as many READs and atomics at once as the REQ and REP
     * settled ({@code rdAtomic} at most) and keep no more outstanding than the peer answers.
     */
    private void toRts(Session s) {
        QueuePair qp = s.qp;
        toInit(qp);
        QpAttr rtr = new QpAttr().qpState(QpState.RTR).pathMtu(s.mtu).destQpNum(s.peerQpn).rqPsn(s.psn)
                .maxDestRdAtomic(s.responderResources).minRnrTimer(options.minRnrTimer());
        if (s.peer.node >= 0) {
            rtr.destNode(s.peer.node);
        } else {
            rtr.destIp(s.peer.ip);
        }
        qp.modify(rtr, QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(s.peerPsn).timeout(options.timeout()).retryCnt(options.retryCount())
                .rnrRetry(options.rnrRetry()).maxRdAtomic(s.initiatorDepth),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    private int depth() {
        return Math.min(options.rdAtomic(), RdmaContext.MAX_QP_RD_ATOM);
    }

    private int offeredMtu(Peer p) {
        return p.node >= 0 ? options.pathMtu() : Math.min(options.pathMtu(), options.ipPathMtu());
    }

    private static int mtuNumber(int bytes) {
        return Integer.numberOfTrailingZeros(bytes) - 7;
    }

    /** {@code ibv_mtu}'s number as bytes; a number outside 1..5 is taken as 256, the smallest. */
    private static int mtuBytes(int number) {
        return number >= 1 && number <= 5 ? 128 << number : 256;
    }

    // ---- sending, timers --------------------------------------------------------------------

    private void sendReq(Session s) {
        int local = gsi.localIp();
        int mtu = offeredMtu(s.peer);
        s.mtu = mtu;
        send(s.peer, (m, p) -> CmMad.writeReq(m, p, s.tid, s.localComm, s.port, caGuid, s.qp.qpNum(), s.psn, depth(), depth(),
                options.retryCount(), options.rnrRetry(), mtuNumber(mtu), options.timeout(), local, s.peerIp(),
                0xC000 | (s.qp.qpNum() & 0x3FFF), s.ownPrivate));
    }

    private void sendRep(Session s) {
        send(s.peer, (m, p) -> CmMad.writeRep(m, p, s.tid, s.localComm, s.remoteComm, s.qp.qpNum(), s.psn, s.responderResources,
                s.initiatorDepth, options.timeout(), options.rnrRetry(), caGuid, s.ownPrivate));
    }

    private void sendDreq(Session s) {
        send(s.peer, (m, p) -> CmMad.writeDreq(m, p, s.tid, s.localComm, s.remoteComm, s.peerQpn));
    }

    private void sendShort(Session s, int id) {
        send(s.peer, (m, p) -> CmMad.writeShort(m, p, id, s.tid, s.localComm, s.remoteComm));
    }

    private void sendRej(Session s, int rejected, int reason, byte[] privateData) {
        send(s.peer, (m, p) -> CmMad.writeRej(m, p, s.tid, s.localComm, s.remoteComm, rejected, reason, privateData));
    }

    /** One MAD to QP 1 of {@code to}: over the fabric, or as RoCEv2 to an IP peer. */
    private void send(Peer to, Gsi.Writer mad) {
        // A full ring sends nothing: REQ, REP and DREQ are resent by the timer, the rest answer duplicates.
        gsi.send(to.node, to.ip, Bth.LENGTH + Deth.LENGTH + CmMad.LENGTH, (m, o) -> {
            Bth.write(m, o, Opcode.UD_SEND_ONLY, false, 0, Bth.DEFAULT_PKEY, CM_QPN, false, 0);
            Deth.write(m, o + Bth.LENGTH, CmMad.GSI_QKEY, CM_QPN);
            mad.write(m, o + Bth.LENGTH + Deth.LENGTH);
        });
    }

    private long resendNs(Session s) {
        return s.peer.node >= 0 ? options.resendNs() : Math.max(options.resendNs(), IP_RESEND_NS);
    }

    private int resends(Session s) {
        return s.peer.node >= 0 ? options.resends() : Math.max(options.resends(), CmMad.MAX_CM_RETRIES);
    }

    private void arm(Session s) {
        s.deadline = gsi.now() + resendNs(s);
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
                if (s.state == REP_SENT && received(s)) {
                    // IBA 12.9.6: the QP's first packet stands for a lost RTU (COMM_EST; Linux's ib_cm_notify).
                    established(s);
                    continue;
                }
                if (++s.tries > resends(s) && (s.state != REQ_SENT || now - s.giveUpAt >= 0)) {
                    (expired == null ? expired = new ArrayList<>() : expired).add(s);
                    continue;
                }
                switch (s.state) {
                    case REQ_SENT -> sendReq(s);
                    case REP_SENT -> sendRep(s);
                    case DREQ_SENT -> sendDreq(s);
                    default -> {
                        s.deadline = 0;
                        continue;
                    }
                }
                s.deadline = now + resendNs(s);
            }
            next = Math.min(next, s.deadline);
        }
        if (expired != null) {
            for (Session s : expired) {
                forget(s);
                if (s.promise != null && s.state != DREQ_SENT) {
                    s.promise.tryFail(new RdmaException("connection to " + s.peer + " port " + s.port + " timed out: no "
                            + (s.state == REQ_SENT ? "REP" : "RTU") + " after " + (s.tries - 1) + " resends"));
                }
            }
        }
        nextDeadline = next;
        return next;
    }

    /** Whether the session's QP has taken a request from the peer: its expected PSN has moved past our first. */
    private static boolean received(Session s) {
        return !s.qp.isDestroyed() && s.qp.query(new QpAttr()).rqPsn != s.psn;
    }

    private void forget(Session s) {
        byComm.remove(s.localComm);
        byPeerComm.remove(new PeerComm(s.peer, s.remoteComm));
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

    /** A fresh transaction ID for a REQ or DREQ; the answers echo it (IBA 13.4.6.4). */
    private long newTid() {
        return ++nextTid;
    }

    private void checkQp(QueuePair qp) {
        if (qp == null || qp.context() != ctx || qp.type() != QpType.RC || (qp.state() != QpState.RESET && qp.state() != QpState.INIT)) {
            throw new RdmaException("the CM connects RC QPs of its own context in RESET or INIT; "
                    + (qp == null ? "got null" : "QP " + qp.qpNum() + " is " + qp.type() + " in " + qp.state()));
        }
    }

    private static void checkPrivate(byte[] privateData, int max, String what) {
        if (privateData.length > max) {
            throw new RdmaException(privateData.length + " bytes of private data exceed the " + max + " that " + what + " carries");
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
        ctx.checkThread();
        closed = true;
        listeners.clear();
        for (Session s : new ArrayList<>(byComm.values())) {
            forget(s);
            if (s.promise != null) {
                s.promise.tryFail(new RdmaException("the connection manager was closed"));
            }
        }
        gsi.detach();
    }
}
