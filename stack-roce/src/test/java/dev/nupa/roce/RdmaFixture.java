package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.roce.ip.Ipv4RoceIp;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.function.UnaryOperator;

/**
 * Verbs contexts on one shm fabric, driven in one thread on virtual time: {@link #pump} polls every
 * link and context until nothing moves, {@link #advance} moves the clock and runs the timers.
 */
public final class RdmaFixture implements AutoCloseable {
    public static final long MS = 1_000_000L;
    public final Path path = Path.of("/dev/shm/nupa-roce-test-" + UUID.randomUUID());
    public final Fabric fabric;
    public final List<RdmaContext> contexts = new ArrayList<>();
    public final List<Link> links = new ArrayList<>();
    public final List<FabricDevice> devices = new ArrayList<>();
    private final List<Ipv4Stack> stacks = new ArrayList<>();
    private final Deque<AutoCloseable> open = new ArrayDeque<>();
    public long now = 1_000 * MS;

    public RdmaFixture() {
        this(64);
    }

    public RdmaFixture(int slots) {
        this(slots, 1);
    }

    /** With {@code rings} receive rings per node (service levels). */
    public RdmaFixture(int slots, int rings) {
        fabric = ShmFabric.create(path, new FabricGeometry(4, rings, slots, 9216, 64, 16L << 20, 10 * MS, 100 * MS, 10_000 * MS));
        open.push(fabric);
    }

    public RdmaContext node(int address) {
        return node(address, d -> d);
    }

    public RdmaContext node(int address, UnaryOperator<FabricDevice> wrap) {
        return node(address, wrap, Link.DEFAULT_MTU);
    }

    public RdmaContext node(int address, UnaryOperator<FabricDevice> wrap, int mtu) {
        FabricDevice dev = wrap.apply(fabric.attach(address));
        open.push(dev);
        Link link = new Link(dev, mtu);
        RdmaContext ctx = RdmaContext.open(link, 64, 64, () -> now);
        open.push(ctx);
        contexts.add(ctx);
        links.add(link);
        devices.add(dev);
        return ctx;
    }

    /** The IPv4 address {@link #ipNode} gives node {@code address}: 10.0.0.(address + 1). */
    public static int ip(int address) {
        return Ipv4Address.of(10, 0, 0, address + 1);
    }

    /** A node with an IP layer (10.0.0.0/24) that its context speaks RoCEv2 through. */
    public RdmaContext ipNode(int address) {
        return ipNode(address, Link.DEFAULT_MTU);
    }

    /** The same with a link MTU of its own. */
    public RdmaContext ipNode(int address, int mtu) {
        return ipNode(address, mtu, UnaryOperator.identity());
    }

    /** The same with the context's IP layer wrapped (a test hop in front of it). */
    public RdmaContext ipNode(int address, int mtu, UnaryOperator<dev.nupa.roce.verbs.RoceIp> wrap) {
        RdmaContext ctx = node(address, d -> d, mtu);
        Link link = links.get(links.size() - 1);
        NeighborDirectory nd = new NeighborDirectory(devices.get(devices.size() - 1));
        open.push(nd);
        Ipv4Stack stack = new Ipv4Stack(link, nd, IpConfig.of(ip(address), 24));
        stacks.add(stack);
        ctx.attachIp(wrap.apply(new Ipv4RoceIp(stack)));
        return ctx;
    }

    /** The IP layer of the {@code i}th node made by {@link #ipNode}. */
    public Ipv4Stack stack(int i) {
        return stacks.get(i);
    }

    /** Polls every node until a whole round finds nothing to do; returns the frames taken. */
    public int pump() {
        int total = 0;
        for (int round = 0; round < 1_000_000; round++) {
            int n = 0;
            for (int i = 0; i < links.size(); i++) {
                n += links.get(i).poll(64, now);
                contexts.get(i).poll(now);
            }
            total += n;
            if (n == 0) {
                return total;
            }
        }
        throw new AssertionError("the nodes never went quiet");
    }

    /** Moves virtual time on, runs the timers, and pumps. */
    public void advance(long ns) {
        now += ns;
        pump();
    }

    /** Pumps and advances time in {@code step} until {@code cq} holds {@code n} completions (or gives up). */
    public void await(CompletionQueue cq, int n, long step) {
        for (int i = 0; i < 100_000 && cq.size() < n; i++) {
            pump();
            if (cq.size() < n) {
                advance(step);
            }
        }
        assertTrue(cq.size() >= n, "expected " + n + " completions, have " + cq.size());
    }

    /** An RC pair: qa on a, qb on b, connected and in RTS, each with every remote access. */
    public static void connect(QueuePair qa, QueuePair qb, int mtu) {
        connect(qa, qb, mtu, 0x100, 0xFFFFF0);
    }

    public static void connect(QueuePair qa, QueuePair qb, int mtu, int psnA, int psnB) {
        connect(qa, qb, mtu, psnA, psnB, 7, 7);
    }

    public static void connect(QueuePair qa, QueuePair qb, int mtu, int psnA, int psnB, int retry, int rnrRetry) {
        int access = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        for (QueuePair q : List.of(qa, qb)) {
            q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(access),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        }
        rtr(qa, qb, mtu, psnB);
        rtr(qb, qa, mtu, psnA);
        rts(qa, psnA, 8, retry, rnrRetry);
        rts(qb, psnB, 8, retry, rnrRetry);
    }

    public static void rtr(QueuePair q, QueuePair peer, int mtu, int peerPsn) {
        q.modify(new QpAttr().qpState(QpState.RTR).destNode(peer.ctx.node()).pathMtu(mtu).destQpNum(peer.qpNum())
                .rqPsn(peerPsn).maxDestRdAtomic(4).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
    }

    public static void rts(QueuePair q, int psn, int timeout, int retry, int rnrRetry) {
        q.modify(new QpAttr().qpState(QpState.RTS).sqPsn(psn).timeout(timeout).retryCnt(retry).rnrRetry(rnrRetry)
                .maxRdAtomic(4), QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT
                | QpAttrMask.RNR_RETRY | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    public static void fill(MemorySegment m, long seed) {
        java.util.Random r = new java.util.Random(seed);
        for (long i = 0; i < m.byteSize(); i++) {
            m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    public static WorkCompletion poll(CompletionQueue cq) {
        WorkCompletion wc = new WorkCompletion();
        assertTrue(cq.poll(wc), "a completion");
        return wc;
    }

    public static void assertStatus(int expected, WorkCompletion wc) {
        assertEquals(WcStatus.name(expected), WcStatus.name(wc.status), wc.toString());
    }

    @Override
    public void close() {
        try {
            while (!open.isEmpty()) {
                open.pop().close();
            }
            Files.deleteIfExists(path);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
