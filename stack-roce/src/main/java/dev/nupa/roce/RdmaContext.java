package dev.nupa.roce;

import dev.nupa.device.FabricWindow;
import dev.nupa.l2.Link;
import dev.nupa.roce.transport.RcResponder;
import dev.nupa.roce.transport.RdmaDevice;
import dev.nupa.roce.transport.Region;
import dev.nupa.roce.verbs.Access;
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

    final RdmaDevice device;
    private final MemoryRegion[] regions;
    private final QueuePair[] qps;
    private int nextQpn = 2; // 0 and 1 are the special QPs of IBA 10.2.4
    private int nextPd = 1;
    private boolean closed;
    /** Told of signaled posts (and, through the device, of send completions); null: nothing is called. */
    RdmaObserver observer;
    private volatile Gsi gsi; // the attached agent's handle (the device holds the agent); attached from a deploying thread

    private RdmaContext(Link link, int maxQps, int maxMrs, LongSupplier clock) {
        if (maxQps < 4 || maxQps > Psn.MASK || maxMrs < 1 || maxMrs > (1 << 24)) {
            throw new RdmaException("a context holds 4..2^24 QPs and 1..2^24 memory regions, not " + maxQps + " and " + maxMrs);
        }
        this.regions = new MemoryRegion[maxMrs];
        this.qps = new QueuePair[maxQps];
        this.device = new RdmaDevice(link, maxQps, maxMrs, clock);
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
        return new ProtectionDomain(this, nextPd++);
    }

    /** Creates a completion queue of {@code cqe} entries ({@code ibv_create_cq}). */
    public CompletionQueue createCq(int cqe) {
        checkThread();
        requireOpen();
        if (cqe < 1 || cqe > (1 << 22)) {
            throw new RdmaException("completion queue size " + cqe + " is outside 1..4194304");
        }
        return new CompletionQueue(this, cqe);
    }

    public SharedReceiveQueue createSrq(ProtectionDomain pd, int maxWr, int maxSge) {
        checkThread();
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
        qps[qpn] = qp;
        pd.users++;
        init.sendCq().users++;
        init.recvCq().users++;
        if (init.srq() != null) {
            init.srq().users++;
        }
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
        device.removeRegion(mr.region);
        regions[mr.region.index] = null;
        mr.pd.users--;
    }

    // ---- the datapath -------------------------------------------------------------------------

    /**
     * Runs timers and transmissions that wait (retries, RNR waits, coalesced ACKs, READ responses a full
     * ring held back); returns the earliest time it wants to run again. Call it after each batch of frames
     * the link delivered, and at that time. Registered as a {@code Datapath.Timer} in a node.
     */
    public long poll(long now) {
        checkThread();
        return device.poll(now);
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
    }
}
