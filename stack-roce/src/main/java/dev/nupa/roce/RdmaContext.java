package dev.nupa.roce;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.Trace;
import dev.nupa.ip.Ipv4Header;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.UdpReceiver;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkClaim;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.Icrc;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.Psn;
import dev.nupa.roce.wire.RocePacket;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * A verbs device context ({@code ibv_context}) on one node's {@link Link}: it owns the node's queue
 * pairs, memory regions and completion queues, takes the link's RDMA frames (EtherType 0x8915), and
 * publishes its QP and region tables in a fabric directory window for {@link TransferMode#DIRECT} peers.
 * With the node's IP layer attached ({@link #attachIp}) it also speaks RoCEv2 (UDP 4791, IBA annex A17) to
 * peers named by an IPv4 address ({@link QpAttr#destIp}, {@link SendWorkRequest#udIp}): beyond the fabric,
 * through a gateway, or on it.
 *
 * <p><b>Threading.</b> Like the link, a context belongs to one thread: the one that polls the link
 * (a node's datapath loop, or a tool or benchmark that polls in line). Verbs calls, {@link #poll} and
 * completion polling happen on it; a post transmits at once, with no hand-off to another thread.
 *
 * <p><b>Time.</b> The transport reads no clock of its own: {@link #poll} is given {@code now} and
 * says when it wants to run again; posts take the time from the context's clock (System.nanoTime
 * unless a test supplies virtual time).
 */
public final class RdmaContext implements AutoCloseable {
    public static final int DEFAULT_MAX_QPS = 1024;
    public static final int DEFAULT_MAX_MRS = 4096;
    /** QP 1, the general services interface (IBA 10.2.4): the CM's datagrams go to and from it. */
    public static final int GSI_QPN = 1;
    /** READs and atomics a QP answers at once at most (ibv_device_attr's max_qp_rd_atom). */
    public static final int MAX_QP_RD_ATOM = RcResponder.MAX_RD_ATOMIC;

    final Link link;
    final LongSupplier clock;
    final RdmaCounters counters = new RdmaCounters();
    final FabricWindow directoryWindow;
    final VerbsDirectory directory;
    final DirectPlacement direct;
    private final MemoryRegion[] regions;
    private final int[] regionTags;
    private final QueuePair[] qps;
    private QueuePair[] active = new QueuePair[0];
    private int nextQpn = 2; // 0 and 1 are the special QPs of IBA 10.2.4
    private int nextPd = 1;
    private final SplittableRandom random = new SplittableRandom();
    private final RocePacket rx = new RocePacket();
    private final LinkClaim claim = new LinkClaim();
    private final MemorySegment lost;
    private MemorySegment tx;
    private boolean txClaimed;
    /** The IP layer RoCEv2 goes through; null until {@link #attachIp}. */
    private Ipv4Stack ip;
    private final RoceV2Receiver roceV2 = new RoceV2Receiver();
    /** A packet to an IP peer is built here and sent, with its headers and ICRC, by {@link #publish}. */
    private final MemorySegment ipTx;
    private int ipTxDest;
    private int ipTxPort;
    private int ipTxLength;
    private boolean ipTxClaimed;
    /** A published packet to an IP peer that a full ring held back: sent before any other, never dropped for that. */
    private boolean ipTxPending;
    /** The GRH of a UD datagram from an IP peer: 20 zero bytes, then its IPv4 header (as RoCEv2 NICs deliver it). */
    private final MemorySegment ipGrh = Arena.ofAuto().allocate(RcResponder.GRH_BYTES);
    final MemorySegment scratch8 = Arena.ofAuto().allocate(8, 8);
    final MemorySegment zeros = Arena.ofAuto().allocate(RcResponder.GRH_BYTES);
    private boolean closed;
    private volatile Gsi gsi; // attached from a deploying thread while the datapath may run
    /** Told of signaled posts and send completions; null (the default): nothing is called. */
    RdmaObserver observer;

    private RdmaContext(Link link, int maxQps, int maxMrs, LongSupplier clock) {
        if (maxQps < 4 || maxQps > Psn.MASK || maxMrs < 1 || maxMrs > (1 << 24)) {
            throw new RdmaException("a context holds 4..2^24 QPs and 1..2^24 memory regions, not " + maxQps + " and " + maxMrs);
        }
        this.link = link;
        this.clock = clock;
        this.regions = new MemoryRegion[maxMrs];
        this.regionTags = new int[maxMrs];
        this.qps = new QueuePair[maxQps];
        this.lost = Arena.ofAuto().allocate(link.mtu());
        this.ipTx = Arena.ofAuto().allocate(link.mtu());
        FabricDevice device = link.device();
        this.directoryWindow = device.exportWindow(VerbsDirectory.bytes(maxQps, maxMrs),
                FabricWindow.REMOTE_READ | FabricWindow.DIRECTORY);
        this.directory = new VerbsDirectory(directoryWindow.memory(), maxQps, maxMrs);
        directory.format();
        this.direct = new DirectPlacement(this, device.geometry().maxNodes());
        link.register(EtherType.NUPA_RDMA, this::onPacket);
    }

    /** Opens a context on {@code link} with default limits and the system clock. */
    public static RdmaContext open(Link link) {
        return open(link, DEFAULT_MAX_QPS, DEFAULT_MAX_MRS, System::nanoTime);
    }

    /** Opens a context on {@code link}; throws if another context already serves it. */
    public static RdmaContext open(Link link, int maxQps, int maxMrs, LongSupplier clock) {
        return new RdmaContext(link, maxQps, maxMrs, clock);
    }

    /**
     * Speaks RoCEv2 through {@code stack}, the node's IP layer on this context's thread: binds UDP port 4791
     * there, so QPs may name IPv4 peers. Throws if the port is taken or an IP layer is attached already.
     */
    public void attachIp(Ipv4Stack stack) {
        requireOpen();
        if (ip != null) {
            throw new RdmaException("node " + link.address() + " already speaks RoCEv2 through " + ip + "; attach one IP layer");
        }
        if (stack.link() != link) {
            throw new RdmaException("the IP layer " + stack + " runs on another link than this context's; attach the node's own");
        }
        stack.bindUdp(Icrc.UDP_PORT, roceV2);
        ip = stack;
    }

    /** The IP layer RoCEv2 goes through, or null. */
    Ipv4Stack ip() {
        return ip;
    }

    /** This node's fabric address (what peers put in an address vector). */
    public int node() {
        return link.address();
    }

    public Link link() {
        return link;
    }

    public ProtectionDomain allocPd() {
        requireOpen();
        return new ProtectionDomain(this, nextPd++);
    }

    /** Creates a completion queue of {@code cqe} entries ({@code ibv_create_cq}). */
    public CompletionQueue createCq(int cqe) {
        requireOpen();
        if (cqe < 1 || cqe > (1 << 22)) {
            throw new RdmaException("completion queue size " + cqe + " is outside 1..4194304");
        }
        return new CompletionQueue(this, cqe);
    }

    public SharedReceiveQueue createSrq(ProtectionDomain pd, int maxWr, int maxSge) {
        requireOpen();
        checkPd(pd);
        if (maxWr < 1 || maxWr > (1 << 20) || maxSge < 1 || maxSge > 64) {
            throw new RdmaException("a shared receive queue holds 1..1048576 requests of 1..64 entries, not " + maxWr + " of " + maxSge);
        }
        pd.users++;
        return new SharedReceiveQueue(pd, maxWr, maxSge);
    }

    /** Creates a queue pair in RESET ({@code ibv_create_qp}). */
    public QueuePair createQp(ProtectionDomain pd, QpInitAttr init) {
        requireOpen();
        checkPd(pd);
        if (init.type() == null || init.sendCq() == null || init.recvCq() == null || init.mode() == null) {
            throw new RdmaException("QpInitAttr needs a type, a send CQ, a receive CQ and a transfer mode");
        }
        if (init.sendCq().context != this || init.recvCq().context != this || init.sendCq().closed || init.recvCq().closed) {
            throw new RdmaException("the QP's completion queues must be open and belong to this context");
        }
        if (init.srq() != null && init.srq().pd.context != this) {
            throw new RdmaException("the shared receive queue belongs to another context");
        }
        if (init.maxSendWr() < 1 || init.maxSendWr() > (1 << 16) || init.maxRecvWr() < 1 || init.maxRecvWr() > (1 << 16)) {
            throw new RdmaException("max_send_wr and max_recv_wr must be 1..65536, not " + init.maxSendWr() + " and " + init.maxRecvWr());
        }
        if (init.maxSendSge() < 1 || init.maxSendSge() > 64 || init.maxRecvSge() < 1 || init.maxRecvSge() > 64) {
            throw new RdmaException("max_send_sge and max_recv_sge must be 1..64");
        }
        if (init.maxInlineData() < 0 || init.maxInlineData() > 4096) {
            throw new RdmaException("max_inline_data must be 0..4096, not " + init.maxInlineData());
        }
        int qpn = allocQpn();
        QueuePair qp = new QueuePair(this, pd, qpn, init);
        // The path MTU a UD QP uses (RC sets it on INIT->RTR): the largest IB MTU the link carries.
        int mtu = 4096;
        while (mtu > 256 && mtu + RcRequester.MAX_HEADERS > link.mtu()) {
            mtu >>= 1;
        }
        qp.attr.pathMtu = mtu;
        qps[qpn] = qp;
        pd.users++;
        init.sendCq().users++;
        init.recvCq().users++;
        if (init.srq() != null) {
            init.srq().users++;
        }
        qp.publish();
        return qp;
    }

    private int allocQpn() {
        for (int i = 0; i < qps.length - 2; i++) {
            int q = nextQpn;
            nextQpn = nextQpn + 1 >= qps.length ? 2 : nextQpn + 1;
            if (qps[q] == null) {
                return q;
            }
        }
        throw new RdmaException("all " + (qps.length - 2) + " QP numbers are in use; destroy QPs or open the context with more");
    }

    void destroy(QueuePair qp) {
        qp.destroyed = true;
        qp.state = QpState.RESET;
        directory.publishQp(qp.qpn, null, 0, 0, qp.type, null, -1, -1);
        qps[qp.qpn] = null;
        if (qp.mirror != null) {
            qp.mirror.close(); // a requester that checked before the epoch moved fails its claim
            qp.recvCq.removeDirect(qp);
            qp.mirror.window.close();
        }
        active = QueuePair.without(active, qp);
        qp.pd.users--;
        qp.sendCq.users--;
        qp.recvCq.users--;
        if (qp.srq != null) {
            qp.srq.users--;
        }
    }

    /** Sets (or, with null, removes) the observer of signaled posts and send completions. On the context's thread. */
    public void setObserver(RdmaObserver o) {
        this.observer = o;
    }

    /** The live queue pairs, by QP number (a snapshot; for tools, not the datapath). */
    public java.util.List<QueuePair> queuePairs() {
        java.util.List<QueuePair> live = new java.util.ArrayList<>();
        for (QueuePair qp : qps) {
            if (qp != null) {
                live.add(qp);
            }
        }
        return live;
    }

    /** Puts a QP on the list {@link #poll} serves (it has a send side now). */
    void activate(QueuePair qp) {
        active = QueuePair.with(active, qp);
    }

    // ---- memory regions ---------------------------------------------------------------------

    MemoryRegion register(ProtectionDomain pd, MemorySegment memory, int access) {
        requireOpen();
        checkPd(pd);
        Access.checkRegion(access);
        return add(pd, memory, access, null);
    }

    MemoryRegion allocRegion(ProtectionDomain pd, long length, int access) {
        requireOpen();
        checkPd(pd);
        Access.checkRegion(access);
        // Peers write the window for remote writes and atomics, and for direct SENDs into receives (LOCAL_WRITE).
        int windowAccess = FabricWindow.REMOTE_READ
                | ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC | Access.LOCAL_WRITE)) != 0 ? FabricWindow.REMOTE_WRITE : 0);
        FabricWindow w = link.device().exportWindow(length, windowAccess);
        try {
            return add(pd, w.memory().asSlice(0, length), access, w);
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
    }

    private MemoryRegion add(ProtectionDomain pd, MemorySegment memory, int access, FabricWindow w) {
        int index = -1;
        for (int i = 1; i < regions.length; i++) { // index 0 stays empty so no key is 0
            if (regions[i] == null) {
                index = i;
                break;
            }
        }
        if (index < 0) {
            throw new RdmaException("all " + (regions.length - 1) + " memory region slots are in use; close regions or open the context with more");
        }
        // The low byte changes with each reuse of a slot, so a stale key never matches (IBA 10.6.3.3's key byte).
        int tag = (regionTags[index] + 1 + random.nextInt(255)) & 0xFF;
        regionTags[index] = tag;
        MemoryRegion mr = new MemoryRegion(pd, index, (index << 8) | tag, access, memory, w);
        regions[index] = mr;
        pd.users++;
        directory.publishMr(mr);
        return mr;
    }

    void deregister(MemoryRegion mr) {
        if (mr.closed) {
            return;
        }
        mr.closed = true;
        directory.withdrawMr(mr.index);
        regions[mr.index] = null;
        mr.pd.users--;
        if (mr.window != null) {
            mr.window.close();
        }
    }

    /** The live region with key {@code key}, or null. */
    MemoryRegion region(int key) {
        int index = key >>> 8;
        if (index >= regions.length) {
            return null;
        }
        MemoryRegion mr = regions[index];
        return mr != null && mr.key == key ? mr : null;
    }

    // ---- the datapath -------------------------------------------------------------------------

    private void onPacket(int sourceNode, MemorySegment memory, long offset, int length) {
        receive(sourceNode, 0, zeros, memory, offset, length);
    }

    /** RoCEv2 from an IP peer: the ICRC is checked over the whole datagram, then the packet goes the fabric's way. */
    private final class RoceV2Receiver implements UdpReceiver {
        @Override
        public void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset, int length) {
            counters.add(RdmaCounter.BAD_ICRC, 1); // the IP layer always gives the header; without it nothing can be checked
        }

        @Override
        public void onDatagram(Ipv4Header h, int sourcePort, MemorySegment data, long offset, int length) {
            if (length < Icrc.LENGTH || !Icrc.verify(h.segment(), h.offset(), h.totalLength() - Icrc.LENGTH)) {
                counters.add(RdmaCounter.BAD_ICRC, 1);
                return;
            }
            counters.add(RdmaCounter.ROCEV2_RECEIVED, 1);
            MemorySegment.copy(h.segment(), h.offset(), ipGrh, RcResponder.GRH_BYTES - Ipv4Header.MIN_HEADER, Ipv4Header.MIN_HEADER);
            receive(-1, h.sourceAddress(), ipGrh, data, offset, length - Icrc.LENGTH);
        }
    }

    /**
     * One transport packet from fabric node {@code sourceNode}, or (node -1) from IP peer {@code sourceIp}, whose
     * UD receives get {@code grh} as their first 40 bytes.
     */
    private void receive(int sourceNode, int sourceIp, MemorySegment grh, MemorySegment memory, long offset, int length) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.RDMA_IN);
        }
        counters.add(RdmaCounter.PACKETS_RECEIVED, 1);
        RocePacket pkt = rx;
        if (closed || pkt.wrap(memory, offset, length) != RocePacket.OK) {
            counters.add(RdmaCounter.MALFORMED, 1);
            return;
        }
        int qpn = pkt.destQp();
        Gsi g = gsi;
        if (qpn == GSI_QPN && g != null && (pkt.flags() & Opcode.DETH) != 0) {
            g.agent().onMessage(sourceNode, sourceIp, Deth.qkey(pkt.segment(), pkt.deth()), pkt.segment(), pkt.payload(), pkt.payloadLength());
            return;
        }
        QueuePair qp = qpn < qps.length ? qps[qpn] : null;
        if (qp == null) {
            counters.add(RdmaCounter.UNKNOWN_QP, 1);
            return;
        }
        long now = link.now();
        int flags = pkt.flags();
        if (qp.type == QpType.UD) {
            if ((flags & Opcode.DETH) == 0) {
                counters.add(RdmaCounter.MALFORMED, 1);
                return;
            }
            qp.responder.onDatagram(pkt, sourceNode, grh);
            return;
        }
        if ((flags & Opcode.DETH) != 0 || sourceNode != qp.attr.destNode || sourceIp != qp.attr.destIp) {
            counters.add(RdmaCounter.UNKNOWN_QP, 1); // RC packets come only from the connected peer
            return;
        }
        if ((flags & Opcode.RESPONSE) != 0) {
            qp.completer.onResponse(pkt, now);
        } else {
            qp.responder.onRequest(pkt, now);
        }
    }

    /**
     * Runs timers and transmissions that wait (retries, RNR waits, coalesced ACKs, READ responses a full
     * ring held back); returns the earliest time it wants to run again. Call it after each batch of frames
     * the link delivered, and at that time. Registered as a {@code Datapath.Timer} in a node.
     */
    public long poll(long now) {
        if (ipTxPending) {
            flushIp();
        }
        Gsi g = gsi;
        long next = g == null ? Long.MAX_VALUE : g.agent().poll(now);
        QueuePair[] a = active;
        for (QueuePair qp : a) {
            next = Math.min(next, qp.poll(now));
        }
        return next;
    }

    /** {@link #claim(int, int, int, int)} to the peer of RC QP {@code qp}. */
    long claim(QueuePair qp, int length) {
        return claim(qp.attr.destNode, qp.attr.destIp, qp.qpn, length);
    }

    /**
     * Claims a frame of {@code length} payload bytes to fabric node {@code node}, or, with node -1, a RoCEv2
     * datagram to IP peer {@code destIp} from QP {@code srcQpn}; returns where to write the packet in
     * {@link #txMemory()}, or -1 when the ring is full (try again later). A frame to a node that is down
     * is written to a scratch buffer and lost, as on a wire with nobody at the end: the retry timer decides.
     */
    long claim(int node, int destIp, int srcQpn, int length) {
        if (txClaimed || ipTxClaimed) {
            abort(); // an earlier frame threw while being written: never leave its slot claimed
        }
        if (node < 0 && destIp != 0) {
            if (ipTxPending && !flushIp()) {
                counters.add(RdmaCounter.BACK_PRESSURED, 1);
                return -1;
            }
            // IBA A17.4.2: the source port carries a flow's entropy; one per QP keeps a QP's packets on one path.
            ipTxDest = destIp;
            ipTxPort = 0xC000 | (srcQpn & 0x3FFF);
            ipTxLength = length;
            ipTxClaimed = true;
            tx = ipTx;
            return 0;
        }
        int rc = link.tryClaim(node, EtherType.NUPA_RDMA, length, claim);
        if (rc == FabricDevice.OK) {
            tx = claim.memory();
            txClaimed = true;
            return claim.payloadOffset();
        }
        if (rc == FabricDevice.BACK_PRESSURED) {
            counters.add(RdmaCounter.BACK_PRESSURED, 1);
            return -1;
        }
        tx = lost;
        txClaimed = false;
        return 0;
    }

    MemorySegment txMemory() {
        return tx;
    }

    void publish() {
        if (ipTxClaimed) {
            ipTxClaimed = false;
            ipTxPending = true;
            flushIp(); // counts the packet once it has left (or was lost), not while a full ring holds it
            return;
        }
        if (txClaimed) {
            txClaimed = false;
            claim.publish();
        }
        counters.add(RdmaCounter.PACKETS_SENT, 1);
    }

    /**
     * Sends the pending packet to its IP peer without waiting; false while the ring to the next hop is full (it
     * stays pending, and claims to IP peers answer -1 meanwhile, as a full ring does). Any other failure (no route,
     * too big for the way) drops it, as a wire would, for the retry timer to resend.
     */
    private boolean flushIp() {
        int rc = ip.sendRoceV2(ipTxPort, ipTxDest, ipTx, 0, ipTxLength, 0);
        if (rc == FabricDevice.BACK_PRESSURED) {
            return false;
        }
        ipTxPending = false;
        counters.add(RdmaCounter.PACKETS_SENT, 1);
        counters.add(rc == SendStatus.OK ? RdmaCounter.ROCEV2_SENT : RdmaCounter.ROCEV2_SEND_FAILED, 1);
        return true;
    }

    void abort() {
        ipTxClaimed = false;
        if (txClaimed) {
            txClaimed = false;
            claim.abort();
        }
    }

    // ---- observation, lifecycle -------------------------------------------------------------

    public long counter(RdmaCounter c) {
        return counters.get(c);
    }

    public Map<RdmaCounter, Long> counters() {
        return counters.snapshot();
    }

    /** Attaches the agent (the connection manager) that takes QP 1's messages; {@link Gsi#detach} removes it. */
    public Gsi attachGsi(GsiAgent agent) {
        if (agent == null) {
            throw new RdmaException("attachGsi needs an agent; to detach one, call detach() on the Gsi it returned");
        }
        if (gsi != null) {
            throw new RdmaException("node " + link.address() + " already has a connection manager on QP 1; close it first");
        }
        Gsi g = new Gsi(this, agent);
        gsi = g;
        return g;
    }

    void detach(Gsi g) {
        if (gsi == g) {
            gsi = null;
        }
    }

    private void checkPd(ProtectionDomain pd) {
        if (pd == null || pd.context != this || pd.closed) {
            throw new RdmaException("protection domain is " + (pd == null ? "null" : pd.closed ? "closed" : "of another context"));
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new RdmaException("RDMA context of node " + link.address() + " is closed");
        }
    }

    /** Closes the context: QPs are destroyed, regions deregistered and their windows withdrawn. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        link.unregister(EtherType.NUPA_RDMA);
        if (ip != null) {
            ip.unbindUdp(Icrc.UDP_PORT, roceV2);
        }
        for (QueuePair qp : qps) {
            if (qp != null) {
                destroy(qp);
            }
        }
        for (MemoryRegion mr : regions) {
            if (mr != null) {
                deregister(mr);
            }
        }
        directoryWindow.close();
    }
}
