package dev.nupa.roce;

import dev.nupa.device.FabricWindow;
import dev.nupa.l2.Link;
import dev.nupa.roce.transport.CongestionControl;
import dev.nupa.roce.transport.QpTransport;
import dev.nupa.roce.transport.RcResponder;
import dev.nupa.roce.transport.RdmaDevice;
import dev.nupa.roce.transport.Region;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.AsyncEventType;
import dev.nupa.roce.verbs.DeviceAttr;
import dev.nupa.roce.verbs.Gid;
import dev.nupa.roce.verbs.PortAttr;
import dev.nupa.roce.verbs.GsiAgent;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RoceIp;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.wire.Psn;
import java.lang.foreign.MemorySegment;
import java.util.Map;
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
 *
 * <p>This handle checks the verbs calls and owns the verbs objects; the device behind it
 * ({@code dev.nupa.roce.transport.RdmaDevice}) takes the frames and runs the transport.
 */
public final class RdmaContext implements AutoCloseable {
    public static final int DEFAULT_MAX_QPS = 1024;
    public static final int DEFAULT_MAX_MRS = 4096;
    /** QP 1, the general services interface (IBA 10.2.4): the CM's datagrams go to and from it. */
    public static final int GSI_QPN = RdmaDevice.GSI_QPN;
    /** READs and atomics a QP answers at once at most (ibv_device_attr's max_qp_rd_atom). */
    public static final int MAX_QP_RD_ATOM = RcResponder.MAX_RD_ATOMIC;
    // The limits createCq, createSrq, createQp and allocPd check, which queryDevice reports (ibv_device_attr's names).
    /** Work requests a QP's send or receive queue holds at most (max_qp_wr). */
    public static final int MAX_QP_WR = 1 << 16;
    /** Scatter/gather entries per send or receive request at most (max_sge). */
    public static final int MAX_SGE = 64;
    /** Bytes a send may carry inline at most (the largest ibv_qp_cap.max_inline_data). */
    public static final int MAX_INLINE_DATA = 4096;
    /** Entries a completion queue holds at most (max_cqe). */
    public static final int MAX_CQE = 1 << 22;
    /** Completion queues open at once at most (max_cq). */
    public static final int MAX_CQ = 1 << 14;
    /** Protection domains allocated at once at most (max_pd). */
    public static final int MAX_PD = 1 << 15;
    /** Shared receive queues open at once at most (max_srq). */
    public static final int MAX_SRQ = 1 << 14;
    /** Requests a shared receive queue holds at most (max_srq_wr). */
    public static final int MAX_SRQ_WR = 1 << 20;
    /** Scatter/gather entries per shared receive request at most (max_srq_sge). */
    public static final int MAX_SRQ_SGE = 64;
    /**
     * ibv_device_attr's vendor_id: 0xFFFFFF, no IEEE OUI, as Soft-RoCE reports (RXE_VENDOR_ID); vendor_part_id
     * ({@link #VENDOR_PART_ID}) and hw_ver 0.
     */
    public static final int VENDOR_ID = 0xFFFFFF;
    public static final int VENDOR_PART_ID = 0;
    /**
     * The node GUID is this prefix with the fabric address in its low 32 bits: 02:4E ("N") with the EUI-64
     * universal/local bit set, so it is a locally assigned identifier that names the node on its fabric.
     */
    public static final long NODE_GUID_PREFIX = 0x024E_0000_0000_0000L;
    /** The port a context has: port 1 (ports are numbered from 1; a RoCE device has one per netdev). */
    public static final int PORT = 1;
    /** Asynchronous events held for {@link #pollAsyncEvent} at most; more are dropped and counted. */
    public static final int ASYNC_EVENT_QUEUE = 256;

    final RdmaDevice device;
    private final MemoryRegion[] regions;
    /** Memory windows by slot (they share the region table's slots, as rxe's indices). */
    private final MemoryWindow[] windows;
    private final QueuePair[] qps;
    private int nextQpn = 2; // 0 and 1 are the special QPs of IBA 10.2.4
    private int nextPd = 1;
    int pds;
    int cqs;
    int srqs;
    private boolean closed;
    /** Events not yet polled, oldest first; rare, so a plain deque. */
    private final java.util.ArrayDeque<AsyncEvent> asyncEvents = new java.util.ArrayDeque<>();
    /** Runs on the context's thread, from {@link #poll}, while events wait; null: none. */
    private Runnable asyncHandler;
    /** Set by the liveness thread when the fabric evicted this node; the port is DOWN from then on. */
    private volatile boolean portLost;
    private boolean portErrRaised;
    private final dev.nupa.device.PeerListener portListener = this::onPeerEvent;
    /** Told of signaled posts (and, through the device, of send completions); null: nothing is called. */
    RdmaObserver observer;
    private volatile Gsi gsi; // the attached agent's handle (the device holds the agent); attached from a deploying thread

    private RdmaContext(Link link, int maxQps, int maxMrs, LongSupplier clock) {
        if (maxQps < 4 || maxQps > Psn.MASK || maxMrs < 1 || maxMrs > (1 << 24)) {
            throw new RdmaException("a context holds 4..2^24 QPs and 1..2^24 memory regions, not " + maxQps + " and " + maxMrs);
        }
        this.regions = new MemoryRegion[maxMrs];
        this.windows = new MemoryWindow[maxMrs];
        this.qps = new QueuePair[maxQps];
        this.device = new RdmaDevice(link, maxQps, maxMrs, clock);
        link.device().addPeerListener(portListener);
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
     * Speaks RoCEv2 through {@code stack}, the node's IP layer on this context's thread (over {@code Ipv4Stack}:
     * {@code new dev.nupa.roce.ip.Ipv4RoceIp(stack)}): binds UDP port 4791 there, so QPs may name IPv4 peers. Throws if
     * the port is taken or an IP layer is attached already.
     */
    public void attachIp(RoceIp stack) {
        checkThread();
        requireOpen();
        RoceIp ip = device.ip();
        if (ip != null) {
            throw new RdmaException("node " + node() + " already speaks RoCEv2 through " + ip + "; attach one IP layer");
        }
        if (stack.link() != device.link) {
            throw new RdmaException("the IP layer " + stack + " runs on another link than this context's; attach the node's own");
        }
        device.attachIp(stack);
    }

    /** The IP layer RoCEv2 goes through, or null. */
    RoceIp ip() {
        return device.ip();
    }

    /** This node's fabric address (what peers put in an address vector). */
    public int node() {
        return device.node();
    }

    /**
     * Throws IllegalStateException, naming the remedy, unless the caller owns the context: every verb (create,
     * destroy, register, query, post, poll, modify, notify, the CM's calls) runs on the link's owner, the datapath
     * loop, as the link's own sends do, and from another thread throws before changing anything. A compare in line.
     */
    public void checkThread() {
        if (!device.link.isOwner()) {
            throw new IllegalStateException("node " + node() + "'s RDMA context belongs to its datapath loop; thread "
                    + Thread.currentThread().getName() + " may not call its verbs: run the call on the loop with"
                    + " rdma().execute(ctx -> ...) (NodeRdma.execute; Link.execute for a bare link), or from a handler"
                    + " that runs on the loop");
        }
    }

    public Link link() {
        return device.link;
    }

    public ProtectionDomain allocPd() {
        checkThread();
        requireOpen();
        if (pds == MAX_PD) {
            throw new RdmaException("all " + MAX_PD + " protection domains (max_pd) are allocated; deallocate one first");
        }
        pds++;
        return new ProtectionDomain(this, nextPd++);
    }

    /** Creates a completion queue of {@code cqe} entries ({@code ibv_create_cq}). */
    public CompletionQueue createCq(int cqe) {
        return createCq(cqe, null);
    }

    /**
     * DCQCN for this context's QPs with IP peers (on by default): turn it off, or set the line rate and the CNP
     * interval, as mlx5's sysfs knobs do for a RoCE NIC (docs/rdma.md, "Congestion control"). On the owner thread.
     */
    public CongestionControl congestion() {
        checkThread();
        return device.congestion;
    }

    /** Creates a completion channel ({@code ibv_create_comp_channel}) for completion queues to report their events to. */
    public CompChannel createCompChannel() {
        checkThread();
        requireOpen();
        return new CompChannel(this);
    }

    /**
     * Creates a completion queue of {@code cqe} entries whose completion events go to {@code channel} ({@code
     * ibv_create_cq} with a channel); with null, as {@link #createCq(int)}.
     */
    public CompletionQueue createCq(int cqe, CompChannel channel) {
        checkThread();
        requireOpen();
        if (channel != null && (channel.context != this || channel.closed)) {
            throw new RdmaException("the completion channel is " + (channel.closed ? "destroyed" : "of another context"));
        }
        if (cqe < 1 || cqe > MAX_CQE) {
            throw new RdmaException("completion queue size " + cqe + " is outside 1.." + MAX_CQE + " (max_cqe)");
        }
        if (cqs == MAX_CQ) {
            throw new RdmaException("all " + MAX_CQ + " completion queues (max_cq) are open; destroy one first");
        }
        cqs++;
        return new CompletionQueue(this, cqe, channel);
    }

    public SharedReceiveQueue createSrq(ProtectionDomain pd, int maxWr, int maxSge) {
        checkThread();
        requireOpen();
        checkPd(pd);
        if (maxWr < 1 || maxWr > MAX_SRQ_WR || maxSge < 1 || maxSge > MAX_SRQ_SGE) {
            throw new RdmaException("a shared receive queue holds 1.." + MAX_SRQ_WR + " requests (max_srq_wr) of 1.." + MAX_SRQ_SGE
                    + " entries (max_srq_sge), not " + maxWr + " of " + maxSge);
        }
        if (srqs == MAX_SRQ) {
            throw new RdmaException("all " + MAX_SRQ + " shared receive queues (max_srq) are open; destroy one first");
        }
        srqs++;
        pd.users++;
        return new SharedReceiveQueue(pd, maxWr, maxSge);
    }

    /** Creates a queue pair in RESET ({@code ibv_create_qp}). */
    public QueuePair createQp(ProtectionDomain pd, QpInitAttr init) {
        checkThread();
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
        if (init.maxSendWr() < 1 || init.maxSendWr() > MAX_QP_WR || init.maxRecvWr() < 1 || init.maxRecvWr() > MAX_QP_WR) {
            throw new RdmaException("max_send_wr and max_recv_wr must be 1.." + MAX_QP_WR + " (max_qp_wr), not " + init.maxSendWr()
                    + " and " + init.maxRecvWr());
        }
        if (init.maxSendSge() < 1 || init.maxSendSge() > MAX_SGE || init.maxRecvSge() < 1 || init.maxRecvSge() > MAX_SGE) {
            throw new RdmaException("max_send_sge and max_recv_sge must be 1.." + MAX_SGE + " (max_sge), not " + init.maxSendSge()
                    + " and " + init.maxRecvSge());
        }
        if (init.maxInlineData() < 0 || init.maxInlineData() > MAX_INLINE_DATA) {
            throw new RdmaException("max_inline_data must be 0.." + MAX_INLINE_DATA + ", not " + init.maxInlineData());
        }
        int qpn = allocQpn();
        QueuePair qp = new QueuePair(this, pd, qpn, init);
        qps[qpn] = qp;
        pd.users++;
        init.sendCq().users++;
        init.recvCq().users++;
        if (init.srq() != null) {
            init.srq().users++;
        }
        qp.transport.events = type -> raise(AsyncEvent.of(type, qp));
        device.add(qp.transport);
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
        checkThread();
        qp.transport.destroy();
        release(qp);
    }

    /** Lets go of what a destroyed QP used. */
    private void release(QueuePair qp) {
        qps[qp.qpNum()] = null;
        qp.pd.users--;
        qp.sendCq.users--;
        qp.recvCq.users--;
        if (qp.srq != null) {
            qp.srq.users--;
        }
    }

    /** Sets (or, with null, removes) the observer of signaled posts and send completions. On the context's thread. */
    public void setObserver(RdmaObserver o) {
        checkThread();
        observer = o;
        device.observe(o);
    }

    /** The live queue pairs, by QP number (a snapshot; for tools, not the datapath). */
    public java.util.List<QueuePair> queuePairs() {
        checkThread();
        java.util.List<QueuePair> live = new java.util.ArrayList<>();
        for (QueuePair qp : qps) {
            if (qp != null) {
                live.add(qp);
            }
        }
        return live;
    }

    // ---- memory regions ---------------------------------------------------------------------

    MemoryRegion register(ProtectionDomain pd, MemorySegment memory, int access) {
        checkThread();
        requireOpen();
        checkPd(pd);
        Access.checkRegion(access);
        return add(pd, memory, access, null);
    }

    MemoryRegion allocRegion(ProtectionDomain pd, long length, int access) {
        checkThread();
        requireOpen();
        checkPd(pd);
        Access.checkRegion(access);
        // Peers write the window for remote writes and atomics, and for direct SENDs into receives (LOCAL_WRITE).
        int windowAccess = FabricWindow.REMOTE_READ
                | ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC | Access.LOCAL_WRITE)) != 0 ? FabricWindow.REMOTE_WRITE : 0);
        FabricWindow w = device.link.device().exportWindow(length, windowAccess);
        try {
            return add(pd, w.memory().asSlice(0, length), access, w);
        } catch (RuntimeException e) {
            w.close();
            throw e;
        }
    }

    private MemoryRegion add(ProtectionDomain pd, MemorySegment memory, int access, FabricWindow w) {
        Region r = device.addRegion(pd.id, memory, access, w);
        MemoryRegion mr = new MemoryRegion(pd, r);
        regions[r.index] = mr;
        pd.users++;
        return mr;
    }

    void deregister(MemoryRegion mr) {
        checkThread();
        if (mr.region.closed()) {
            return;
        }
        if (mr.region.boundWindows() > 0) {
            // rxe_dereg_mr refuses a region with windows bound to it (ibv_dereg_mr fails with EBUSY).
            throw new RdmaException("EBUSY: " + mr + " has " + mr.region.boundWindows()
                    + " memory window(s) bound to it; invalidate them first (WrOpcode.LOCAL_INV)");
        }
        device.removeRegion(mr.region);
        regions[mr.region.index] = null;
        mr.pd.users--;
    }

    MemoryWindow allocMw(ProtectionDomain pd) {
        checkThread();
        requireOpen();
        checkPd(pd);
        MemoryWindow mw = new MemoryWindow(pd, device.allocMw(pd.id));
        windows[mw.mw.index] = mw;
        pd.users++;
        return mw;
    }

    void deallocMw(MemoryWindow mw) {
        if (windows[mw.mw.index] != mw) {
            return; // deallocated already, or the context closed
        }
        if (mw.mw.bound()) {
            throw new RdmaException(mw + " is bound; invalidate it first (WrOpcode.LOCAL_INV, or a peer's SEND_WITH_INV)");
        }
        device.deallocMw(mw.mw);
        windows[mw.mw.index] = null;
        mw.pd.users--;
    }

    // ---- the datapath -------------------------------------------------------------------------

    /**
     * Runs timers and transmissions that wait (retries, RNR waits, coalesced ACKs, READ responses a full
     * ring held back); returns the earliest time it wants to run again. Call it after each batch of frames
     * the link delivered, and at that time. Registered as a {@code Datapath.Timer} in a node.
     */
    public long poll(long now) {
        checkThread();
        if (portLost && !portErrRaised) {
            portErrRaised = true;
            raise(AsyncEvent.port(AsyncEventType.PORT_ERR, PORT));
        }
        long next = device.poll(now);
        if (asyncHandler != null && !asyncEvents.isEmpty()) {
            asyncHandler.run();
        }
        return next;
    }

    // ---- queries (ibv_query_device, ibv_query_port, ibv_query_gid) -----------------------------

    /** The device's attributes and the limits this context enforces ({@code ibv_query_device}). */
    public DeviceAttr queryDevice() {
        checkThread();
        requireOpen();
        long guid = NODE_GUID_PREFIX | (node() & 0xFFFF_FFFFL);
        return new DeviceAttr("", guid, guid, Long.MAX_VALUE, VENDOR_ID, VENDOR_PART_ID, 0, qps.length - 2, MAX_QP_WR, MAX_SGE,
                MAX_CQ, MAX_CQE, regions.length - 1, MAX_PD, MAX_QP_RD_ATOM, (qps.length - 2) * MAX_QP_RD_ATOM, MAX_QP_RD_ATOM,
                DeviceAttr.ATOMIC_HCA, MAX_SRQ, MAX_SRQ_WR, MAX_SRQ_SGE, 1, 1, MAX_INLINE_DATA);
    }

    /**
     * Port {@code port}'s attributes ({@code ibv_query_port}): ACTIVE while the node is in the fabric, DOWN once the
     * fabric evicted it or the context closed; the MTUs are the largest InfiniBand MTU whose packets fit the link (what
     * {@code modify} lets a QP's path MTU be); one GID per IPv4 address of the IP layer; one P_Key (index 0).
     */
    public PortAttr queryPort(int port) {
        checkThread();
        checkPort(port);
        int mtu = PortAttr.mtu(QpTransport.largestPathMtu(device.link.mtu()));
        return new PortAttr(portLost || closed ? PortAttr.PORT_DOWN : PortAttr.PORT_ACTIVE, mtu, mtu, gidTableLength(), 1,
                PortAttr.LINK_LAYER_ETHERNET, PortAttr.CAP_CM_SUP);
    }

    /**
     * Entry {@code index} of port {@code port}'s GID table ({@code ibv_query_gid}): the RoCEv2 GID {@code ::ffff:a.b.c.d}
     * of each IPv4 address the attached IP layer holds (Linux's RoCE GID table has one per IPv4 address of the netdev).
     */
    public Gid queryGid(int port, int index) {
        checkThread();
        checkPort(port);
        int n = gidTableLength();
        if (index < 0 || index >= n) {
            throw new RdmaException("GID index " + index + " is outside port " + port + "'s table of " + n + " entr"
                    + (n == 1 ? "y" : "ies") + (n == 0 ? ": attach the node's IP layer (attachIp) for a RoCEv2 GID" : ""));
        }
        return Gid.ofIpv4(device.ip().address());
    }

    private int gidTableLength() {
        return device.ip() == null ? 0 : 1; // the IP layer holds one IPv4 address
    }

    private static void checkPort(int port) {
        if (port != PORT) {
            throw new RdmaException("port " + port + " does not exist; a context has port " + PORT);
        }
    }

    // ---- asynchronous events (ibv_get_async_event) --------------------------------------------

    /** The fabric's liveness, on its own thread: this node was evicted, so its port is DOWN. */
    private void onPeerEvent(dev.nupa.device.PeerEvent e) {
        if (e.kind() == dev.nupa.device.PeerEvent.Kind.EVICTED && e.address() == node()) {
            portLost = true;
            dev.nupa.l2.Datapath d = device.link.datapath();
            if (d != null) {
                d.timersChanged(); // the loop polls this context on its next round, which raises PORT_ERR
            }
        }
    }

    /** Queues {@code e} (on the context's thread); a full queue drops it and counts it. */
    void raise(AsyncEvent e) {
        if (asyncEvents.size() == ASYNC_EVENT_QUEUE) {
            device.counters.add(RdmaCounter.ASYNC_EVENTS_DROPPED, 1);
            return;
        }
        asyncEvents.add(e);
        dev.nupa.l2.Datapath d = device.link.datapath();
        if (asyncHandler != null && d != null) {
            d.timersChanged(); // the handler runs from poll, after the work that raised it, not inside it
        }
    }

    /**
     * The oldest asynchronous event not yet taken, or null ({@code ibv_get_async_event} without blocking; there is
     * nothing to acknowledge: the event is the caller's). Events wait in a queue of {@link #ASYNC_EVENT_QUEUE}; more are
     * dropped and counted as {@link RdmaCounter#ASYNC_EVENTS_DROPPED}.
     */
    public AsyncEvent pollAsyncEvent() {
        checkThread();
        return asyncEvents.poll();
    }

    /**
     * Runs {@code handler} on the context's thread, from {@link #poll}, whenever events wait to be taken with {@link
     * #pollAsyncEvent} (the async event file becoming readable); null removes it.
     */
    public void onAsyncEvent(Runnable handler) {
        checkThread();
        asyncHandler = handler;
    }

    // ---- observation, lifecycle -------------------------------------------------------------

    public long counter(RdmaCounter c) {
        return device.counters.get(c);
    }

    public Map<RdmaCounter, Long> counters() {
        return device.counters.snapshot();
    }

    /** Attaches the agent (the connection manager) that takes QP 1's messages; {@link Gsi#detach} removes it. */
    public Gsi attachGsi(GsiAgent agent) {
        checkThread();
        if (agent == null) {
            throw new RdmaException("attachGsi needs an agent; to detach one, call detach() on the Gsi it returned");
        }
        if (gsi != null) {
            throw new RdmaException("node " + node() + " already has a connection manager on QP 1; close it first");
        }
        Gsi g = new Gsi(this);
        gsi = g;
        device.attachGsi(agent);
        return g;
    }

    void detach(Gsi g) {
        checkThread();
        if (gsi == g) {
            gsi = null;
            device.attachGsi(null);
        }
    }

    private void checkPd(ProtectionDomain pd) {
        if (pd == null || pd.context != this || pd.closed) {
            throw new RdmaException("protection domain is " + (pd == null ? "null" : pd.closed ? "closed" : "of another context"));
        }
    }

    private void requireOpen() {
        if (closed) {
            throw new RdmaException("RDMA context of node " + node() + " is closed");
        }
    }

    /** Closes the context: QPs are destroyed, regions deregistered and their windows withdrawn. */
    @Override
    public void close() {
        checkThread();
        if (closed) {
            return;
        }
        closed = true;
        link().device().removePeerListener(portListener);
        device.close();
        for (QueuePair qp : qps) {
            if (qp != null) {
                release(qp);
            }
        }
        for (MemoryRegion mr : regions) {
            if (mr != null) {
                mr.pd.users--;
            }
        }
        java.util.Arrays.fill(regions, null);
        for (MemoryWindow mw : windows) {
            if (mw != null) {
                mw.pd.users--;
            }
        }
        java.util.Arrays.fill(windows, null);
    }
}
