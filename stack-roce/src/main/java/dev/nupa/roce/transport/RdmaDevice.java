package dev.nupa.roce.transport;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.Trace;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkClaim;
import dev.nupa.roce.verbs.CompletionObserver;
import dev.nupa.roce.verbs.GsiAgent;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RoceIp;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.Icrc;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.RocePacket;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * The device behind a verbs context ({@code dev.nupa.roce.RdmaContext}), as Soft-RoCE's rxe_dev is behind an
 * ibv_context: it takes the link's RDMA frames (EtherType 0x8915) and, with an IP layer attached, RoCEv2 datagrams
 * (UDP 4791, IBA annex A17), and hands each to its QP's transport; it holds the QP and region tables the datapath
 * looks up, the frame being written, the directory window that DIRECT peers check against, and the counters. The
 * context checks the verbs calls and owns the handles; this is what runs per packet.
 */
public final class RdmaDevice {
    /** QP 1, the general services interface (IBA 10.2.4): the CM's datagrams go to and from it. */
    public static final int GSI_QPN = 1;
    public final Link link;
    public final LongSupplier clock;
    public final RdmaCounters counters = new RdmaCounters();
    private final FabricWindow directoryWindow;
    private final FabricWindow guardWindow;
    final VerbsDirectory directory;
    final DirectPlacement direct;
    private final Region[] regions;
    /** Memory windows by slot: a window holds its slot from allocation to deallocation, bound or not. */
    private final Mw[] mws;
    /** Withdrawn regions whose windows a peer's direct copy still held when they were deregistered. */
    private Region[] draining = new Region[0];
    private static final long REAP_NS = 100_000_000L;
    private long lastReap = Long.MIN_VALUE / 2;
    private final int[] regionTags;
    private final QpTransport[] qps;
    private QpTransport[] active = new QpTransport[0];
    private final SplittableRandom random = new SplittableRandom();
    private final RocePacket rx = new RocePacket();
    private final LinkClaim claim = new LinkClaim();
    private final MemorySegment lost;
    private MemorySegment tx;
    private boolean txClaimed;
    /** The IP layer RoCEv2 goes through; null until {@link #attachIp}. */
    private RoceIp ip;
    private final RoceV2Receiver roceV2 = new RoceV2Receiver();
    /** DCQCN for QPs with IP peers: CNPs out for CE, rates down for CNPs in (CongestionControl). */
    public final CongestionControl congestion = new CongestionControl(this);
    /** An IPv4 header without options (RFC 791): the last 20 bytes of a UD receive's GRH from an IP peer. */
    private static final int IPV4_HEADER = 20;
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
    private final MemorySegment zeros = Arena.ofAuto().allocate(RcResponder.GRH_BYTES);
    private boolean closed;
    private volatile GsiAgent gsi; // attached from a deploying thread while the datapath may run
    /** Told of signaled posts and send completions; null (the default): nothing is called. */
    CompletionObserver observer;

    /** Opens the device on {@code link} with room for {@code maxQps} QPs and {@code maxMrs} regions (checked by the caller). */
    public RdmaDevice(Link link, int maxQps, int maxMrs, LongSupplier clock) {
        this.link = link;
        this.clock = clock;
        this.regions = new Region[maxMrs];
        this.regionTags = new int[maxMrs];
        this.mws = new Mw[maxMrs];
        this.qps = new QpTransport[maxQps];
        this.lost = Arena.ofAuto().allocate(link.mtu());
        this.ipTx = Arena.ofAuto().allocate(link.mtu());
        FabricDevice device = link.device();
        this.directoryWindow = device.exportWindow(VerbsDirectory.bytes(maxQps, maxMrs),
                FabricWindow.REMOTE_READ | FabricWindow.DIRECTORY);
        // Peers write only the guards (VerbsDirectory): the directory itself stays read-only to them.
        int nodes = device.geometry().maxNodes();
        this.guardWindow = device.exportWindow(VerbsDirectory.guardBytes(maxMrs, nodes), FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE);
        this.directory = new VerbsDirectory(directoryWindow.memory(), guardWindow.memory(), maxQps, maxMrs, nodes, -1,
                dev.nupa.device.HeavyFence.available());
        directory.format(guardWindow);
        this.direct = new DirectPlacement(this, device.geometry().maxNodes());
        link.register(EtherType.NUPA_RDMA, this::onPacket);
        device.addPeerListener(peers);
    }

    // ---- peers' death (the liveness thread hands it to the owner) ---------------------------------

    /** A fabric node whose life ended, and the IPv4 addresses it held (none where the IP layer did not say). */
    private record LostNode(int node, int[] addresses) {
    }

    private static final int[] NO_ADDRESSES = new int[0];
    private final dev.nupa.device.PeerListener peers = this::onPeerEvent;
    /** Nodes the liveness thread reported dead or restarted; {@link #poll} ends their QPs on the owner. */
    private final java.util.concurrent.ConcurrentLinkedQueue<LostNode> lostNodes = new java.util.concurrent.ConcurrentLinkedQueue<>();

    private void onPeerEvent(dev.nupa.device.PeerEvent e) {
        if (e.kind() == dev.nupa.device.PeerEvent.Kind.DOWN || e.kind() == dev.nupa.device.PeerEvent.Kind.RESTARTED) {
            lost(new LostNode(e.address(), NO_ADDRESSES));
        }
    }

    private void lost(LostNode n) {
        lostNodes.add(n);
        dev.nupa.l2.Datapath d = link.datapath();
        if (d != null) {
            d.timersChanged(); // the loop polls its timers, this device's among them, on its next round
        }
    }

    /**
     * Puts every RC QP whose peer is fabric node {@code node} in ERR with its requests completed ({@link
     * QpTransport#peerLost}): the node died or restarted. Owner thread; returns how many QPs it ended.
     */
    public int endQpsTo(int node) {
        return endQpsTo(node, NO_ADDRESSES);
    }

    /**
     * As {@link #endQpsTo(int)}, and also every RC QP that talks RoCEv2 to one of the {@code addresses} that node held:
     * the peer behind the address is gone as surely. A QP to an address no fabric node held (a host beyond a gateway)
     * is not one of them. Owner thread; returns how many QPs it ended.
     */
    public int endQpsTo(int node, int[] addresses) {
        int n = 0;
        for (QpTransport qp : qps) {
            if (qp != null && qp.talksTo(node, addresses)) {
                qp.peerLost();
                counters.add(RdmaCounter.PEER_DOWN_QP_ERRORS, 1);
                n++;
            }
        }
        return n;
    }

    /** Takes RoCEv2 from {@code ip} (UDP 4791) and sends it through it; the caller checked that none is attached. */
    public void attachIp(RoceIp ip) {
        ip.open(roceV2);
        this.ip = ip;
    }

    /** The IP layer RoCEv2 goes through, or null. */
    public RoceIp ip() {
        return ip;
    }

    /** This node's fabric address. */
    public int node() {
        return link.address();
    }

    public void observe(CompletionObserver o) {
        observer = o;
    }

    /** Gives QP 1's messages to {@code agent} (the connection manager); null: they count as for an unknown QP. */
    public void attachGsi(GsiAgent agent) {
        gsi = agent;
    }

    // ---- queue pairs --------------------------------------------------------------------------

    /** Puts a new QP in the table packets are dispatched by, and in the directory. */
    public void add(QpTransport qp) {
        qps[qp.qpn] = qp;
        qp.publish();
    }

    /** Takes a destroyed QP out of the directory, the table and the list {@link #poll} serves. */
    void remove(QpTransport qp) {
        directory.publishQp(qp.qpn, null, 0, 0, qp.type, null, -1, -1);
        qps[qp.qpn] = null;
        active = QpTransport.without(active, qp);
    }

    /** Puts a QP on the list {@link #poll} serves (it has a send side now). */
    void activate(QpTransport qp) {
        active = QpTransport.with(active, qp);
    }

    // ---- memory regions ---------------------------------------------------------------------

    /**
     * Registers {@code memory} (in fabric window {@code w}, or null) for protection domain {@code pdId} under a fresh key,
     * and publishes it in the directory; throws when every slot is in use.
     */
    public Region addRegion(int pdId, MemorySegment memory, int access, FabricWindow w) {
        int index = freeSlot();
        Region mr = new Region(pdId, index, (index << 8) | nextTag(index), access, memory, w);
        regions[index] = mr;
        directory.publishMr(mr);
        return mr;
    }

    /** A free region slot; throws when every slot is in use. */
    private int freeSlot() {
        if (draining.length > 0) {
            reapDraining();
        }
        for (int i = 1; i < regions.length; i++) { // index 0 stays empty so no key is 0
            if (slotFree(i)) {
                return i;
            }
        }
        throw new RdmaException("all " + (regions.length - 1) + " memory region slots are in use (memory windows take them too); close"
                + " regions or windows, or open the context with more");
    }

    /** The low byte changes with each reuse of a slot, so a stale key never matches (IBA 10.6.3.3's key byte). */
    private int nextTag(int index) {
        int tag = (regionTags[index] + 1 + random.nextInt(255)) & 0xFF;
        regionTags[index] = tag;
        return tag;
    }

    // ---- memory windows (type 2, IBA 10.6.7; rxe_mw.c) ----------------------------------------

    /** Allocates a type 2 memory window of protection domain {@code pdId}, free (unbound), in a slot of its own. */
    public Mw allocMw(int pdId) {
        int index = freeSlot();
        Mw mw = new Mw(pdId, index, (index << 8) | nextTag(index));
        mws[index] = mw;
        return mw;
    }

    /** Frees an unbound window's slot (the caller checked it is not bound). */
    public void deallocMw(Mw mw) {
        mw.closed = true;
        mws[mw.index] = null;
    }

    /** The window whose slot {@code rkey} names, or null. */
    private Mw mwAt(int rkey) {
        int index = rkey >>> 8;
        return index < mws.length ? mws[index] : null;
    }

    /**
     * Executes a bind work request of a QP of domain {@code pdId} (rxe_bind_mw): the window {@code rkey}'s slot names
     * is bound to {@code [addr, addr + length)} of region {@code mrKey} with {@code access} and takes {@code rkey} as its
     * key; it is then in the directory as a region is. False (IBV_WC_MW_BIND_ERR), nothing changed, when a check of
     * rxe_check_bind_mw fails: no such window, another domain (C10-72), bound already (a type 2 window binds only
     * from Free, o10-37.2.30), no length (o10-37.2.40), no such region or another domain's, no MW_BIND (C10-73),
     * remote write or atomic without the region's LOCAL_WRITE (C10-74), a range outside the region (C10-75).
     */
    boolean bindMw(int pdId, int rkey, int mrKey, long addr, long length, int access) {
        Mw mw = mwAt(rkey);
        Region mr = region(mrKey);
        if (mw == null || mw.pdId != pdId || mw.bound != null || length <= 0 || mr == null || mr.isWindow()
                || mr.pdId != pdId || (mr.access & dev.nupa.roce.verbs.Access.MW_BIND) == 0
                || ((access & (dev.nupa.roce.verbs.Access.REMOTE_WRITE | dev.nupa.roce.verbs.Access.REMOTE_ATOMIC)) != 0
                        && (mr.access & dev.nupa.roce.verbs.Access.LOCAL_WRITE) == 0)
                || !mr.covers(addr, length)) {
            return false;
        }
        Region w = new Region(mr, mw.index, rkey, access, addr, length); // binds are rare: one object each
        mw.key = rkey;
        mw.bound = w;
        mr.boundWindows++;
        regions[mw.index] = w;
        directory.publishMr(w);
        return true;
    }

    /**
     * Invalidates the window {@code rkey} names for a QP of domain {@code pdId} (LOCAL_INV, or a SEND_WITH_INV's IETH;
     * rxe_invalidate_mw): withdrawn from the directory and drained of direct copies exactly as a deregistered region
     * is ({@link #removeRegion}), so once this returns no byte of a later or in-flight direct operation lands in its
     * range. False, nothing changed, unless {@code rkey} is a bound window's current key of that domain (a region's
     * key, another generation's, another domain's window).
     */
    boolean invalidate(int pdId, int rkey) {
        Mw mw = mwAt(rkey);
        if (mw == null || mw.bound == null || mw.key != rkey || mw.pdId != pdId) {
            return false;
        }
        Region w = mw.bound;
        mw.bound = null;
        w.parent.boundWindows--;
        removeRegion(w);
        return true;
    }

    /**
     * Withdraws a region: its key stops matching, and once no peer's direct copy is in flight into or out of its
     * window the window closes. A copy takes microseconds; deregistration waits for one as long as its node is up,
     * up to the fabric's heartbeat timeout (after which a stalled node is declared down). A window a copy still
     * holds then (its requester died or stopped mid-copy) is held back, its memory not handed out again, until the
     * copy ends ({@link #reapDraining}); its slot is not reused before.
     */
    public void removeRegion(Region mr) {
        if (mr.closed) {
            return;
        }
        mr.closed = true;
        regions[mr.index] = null;
        FabricDevice fabric = link.device();
        boolean drained = directory.withdrawMr(mr, System.nanoTime() + fabric.geometry().heartbeatTimeoutNs(), fabric::isUp);
        if (mr.window == null) {
            return;
        }
        if (!drained) {
            counters.add(RdmaCounter.DEREG_DRAIN_TIMEOUTS, 1);
        }
        if (drained && !heldByWindow(mr, draining.length)) {
            if (!mr.isWindow()) {
                mr.window.close(); // a window's memory is its region's: that region's deregistration closes it
            }
        } else {
            draining = java.util.Arrays.copyOf(draining, draining.length + 1);
            draining[draining.length - 1] = mr;
        }
    }

    /** Whether one of the first {@code n} draining entries is a memory window of region {@code mr}. */
    private boolean heldByWindow(Region mr, int n) {
        for (int i = 0; i < n; i++) {
            if (draining[i].parent == mr) {
                return true;
            }
        }
        return false;
    }

    /** Closes the windows of withdrawn regions whose last direct copy has ended; returns how many are still held. */
    int reapDraining() {
        int windows = 0; // memory windows first: a region's window closes only once none of its windows is held
        for (Region r : draining) {
            if (!r.isWindow() || !directory.drained(r)) {
                draining[windows++] = r;
            }
        }
        int kept = 0;
        for (int i = 0; i < windows; i++) {
            Region mr = draining[i];
            if (!mr.isWindow() && !heldByWindow(mr, windows) && directory.drained(mr)) {
                mr.window.close();
            } else {
                draining[kept++] = mr;
            }
        }
        if (kept < draining.length) {
            draining = java.util.Arrays.copyOf(draining, kept);
        }
        return kept;
    }

    /** Whether region slot {@code index} is free: no live region and no withdrawn one whose window a copy holds. */
    private boolean slotFree(int index) {
        if (regions[index] != null || mws[index] != null) {
            return false;
        }
        for (Region mr : draining) {
            if (mr.index == index) {
                return false;
            }
        }
        return true;
    }

    /** The live region with key {@code key}, or null. */
    Region region(int key) {
        int index = key >>> 8;
        if (index >= regions.length) {
            return null;
        }
        Region mr = regions[index];
        return mr != null && mr.key == key ? mr : null;
    }

    // ---- the datapath -------------------------------------------------------------------------

    private void onPacket(int sourceNode, MemorySegment memory, long offset, int length) {
        receive(sourceNode, 0, zeros, memory, offset, length);
    }

    /**
     * RoCEv2 from an IP peer: the ICRC is checked over the whole datagram, then the packet goes the fabric's way; and
     * the IPv4 addresses of lost nodes, whose QPs {@link #poll} ends.
     */
    private final class RoceV2Receiver implements RoceIp.Listener {
        @Override
        public void onDatagram(int sourceAddress, MemorySegment ip, long ipOffset, int ipLength, MemorySegment data, long offset,
                int length) {
            // Without the IP header nothing can be checked.
            if (ip == null || length < Icrc.LENGTH || !Icrc.verify(ip, ipOffset, ipLength - Icrc.LENGTH)) {
                counters.add(RdmaCounter.BAD_ICRC, 1);
                return;
            }
            counters.add(RdmaCounter.ROCEV2_RECEIVED, 1);
            if (congestion.onDatagram(sourceAddress, ip, ipOffset, data, offset, length - Icrc.LENGTH, link.now())) {
                return; // a CNP
            }
            MemorySegment.copy(ip, ipOffset, ipGrh, RcResponder.GRH_BYTES - IPV4_HEADER, IPV4_HEADER);
            receive(-1, sourceAddress, ipGrh, data, offset, length - Icrc.LENGTH);
        }

        @Override
        public void onNodeLost(int node, int[] addresses) {
            lost(new LostNode(node, addresses));
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
        GsiAgent g = gsi;
        if (qpn == GSI_QPN && g != null && (pkt.flags() & Opcode.DETH) != 0) {
            g.onMessage(sourceNode, sourceIp, Deth.qkey(pkt.segment(), pkt.deth()), pkt.segment(), pkt.payload(), pkt.payloadLength());
            return;
        }
        QpTransport qp = qpn < qps.length ? qps[qpn] : null;
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
     * ring held back); returns the earliest time it wants to run again.
     */
    public long poll(long now) {
        if (draining.length > 0 && now - lastReap >= REAP_NS) {
            lastReap = now; // each look costs a heavy fence: a held-back window is looked at ten times a second
            reapDraining();
        }
        if (!lostNodes.isEmpty()) {
            for (LostNode n; (n = lostNodes.poll()) != null; ) {
                endQpsTo(n.node(), n.addresses());
            }
        }
        if (ipTxPending) {
            flushIp();
        }
        long next = Long.MAX_VALUE;
        QpTransport[] a = active;
        for (QpTransport qp : a) {
            next = Math.min(next, qp.poll(now));
        }
        // The CM after the QPs: an ACK a QP still owes from ERR goes out ahead of a DREQ the CM resends.
        GsiAgent g = gsi;
        return g == null ? next : Math.min(next, g.poll(now));
    }

    /** QP {@code qpn}, or null when there is none. */
    QpTransport qp(int qpn) {
        return qpn >= 0 && qpn < qps.length ? qps[qpn] : null;
    }

    /** {@link #claim(int, int, int, int)} to the peer of RC QP {@code qp}. */
    long claim(QpTransport qp, int length) {
        return claim(qp.attr.destNode, qp.attr.destIp, qp.qpn, length, qp.attr.sl);
    }

    /**
     * Claims a frame of {@code length} payload bytes to fabric node {@code node}, or, with node -1, a RoCEv2
     * datagram to IP peer {@code destIp} from QP {@code srcQpn}; returns where to write the packet in
     * {@link #txMemory()}, or -1 when the ring is full (try again later). A frame to a node that is down
     * is written to a scratch buffer and lost, as on a wire with nobody at the end: the retry timer decides.
     */
    public long claim(int node, int destIp, int srcQpn, int length) {
        return claim(node, destIp, srcQpn, length, 0);
    }

    /** {@link #claim(int, int, int, int)} at service level {@code sl}: into the ring of {@code node} the link names for it. */
    long claim(int node, int destIp, int srcQpn, int length, int sl) {
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
        int rc = link.tryClaim(node, EtherType.NUPA_RDMA, length, sl, claim);
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

    public MemorySegment txMemory() {
        return tx;
    }

    public void publish() {
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
        int rc = ip.send(ipTxPort, ipTxDest, ipTx, 0, ipTxLength);
        if (rc == RoceIp.BACK_PRESSURED) {
            return false;
        }
        ipTxPending = false;
        counters.add(RdmaCounter.PACKETS_SENT, 1);
        counters.add(rc == RoceIp.SENT ? RdmaCounter.ROCEV2_SENT : RdmaCounter.ROCEV2_SEND_FAILED, 1);
        return true;
    }

    void abort() {
        ipTxClaimed = false;
        if (txClaimed) {
            txClaimed = false;
            claim.abort();
        }
    }

    /**
     * Stops taking frames and datagrams, destroys every QP's transport and withdraws every region (their windows
     * close), then closes the directory window (unless a peer's stalled direct copy still holds a region's guard). The context releases its handles after.
     */
    public void close() {
        closed = true;
        link.device().removePeerListener(peers);
        link.unregister(EtherType.NUPA_RDMA);
        if (ip != null) {
            ip.close();
        }
        for (QpTransport qp : qps) {
            if (qp != null) {
                qp.destroy();
            }
        }
        for (Region mr : regions) {
            if (mr != null && mr.isWindow()) {
                removeRegion(mr); // bound memory windows first, before the regions whose windows they lie in
            }
        }
        for (Region mr : regions) {
            if (mr != null) {
                removeRegion(mr);
            }
        }
        if (reapDraining() == 0) {
            directoryWindow.close();
            guardWindow.close();
        } // else a stalled copy still holds a guard: the guards and those windows go when the node leaves
    }
}
