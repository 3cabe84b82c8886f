package dev.nupa.bench;

import dev.nupa.device.Affinity;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.Link;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;

import io.aeron.Aeron;
import io.aeron.ExclusivePublication;
import io.aeron.Image;
import io.aeron.Subscription;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.aeron.logbuffer.FragmentHandler;
import org.HdrHistogram.Histogram;
import org.agrona.BitUtil;
import org.agrona.BufferUtil;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.SleepingMillisIdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Locale;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * Side-by-side ping-pong latency, in one process, of four ways to hand a few bytes to another thread and
 * back (each reported as a half round trip):
 * <ol>
 *   <li><b>shm floor</b>: one 8-byte counter in one cache line of a {@code /dev/shm} file, bounced
 *       between the two threads (release store, acquire spin): the least any shared-memory transport can take;</li>
 *   <li><b>NUPA RDMA write-lat</b> in the manner of perftest's {@code ib_write_lat}: two verbs contexts on
 *       two nodes of one fresh shm fabric, an RC QP each in {@link TransferMode#DIRECT} (direct placement),
 *       8-byte INLINE RDMA WRITEs, signaled every {@value #SIGNAL_EVERY}-th post; each side spins on the last
 *       byte of its own region until the peer's write lands, then writes back;</li>
 *   <li><b>Aeron IPC</b> ping-pong (Aeron's EmbeddedPingPong shape): an embedded MediaDriver, two exclusive
 *       publications over {@code aeron:ipc} (ping and pong streams), 8-byte and 32-byte messages.</li>
 * </ol>
 *
 * <p><b>Interleaved blocks.</b> On a small VM the host moves the two vCPUs between cores that share a cache
 * and cores that do not, so one cache-line hand-off takes 45 ns at one moment and 225 ns a few hundred
 * milliseconds later. Measuring the transports one after the other therefore compares placements, not
 * transports. Here all four are set up at once and the two threads run them in turns of {@value #BLOCK}
 * round trips (about 0.1 ms a block): floor, NUPA, Aeron 8 B, Aeron 32 B, floor, ... The headline ratios are
 * the medians, over every turn, of the block medians' ratios (NUPA against the floor and Aeron blocks next
 * to it), so a placement change weighs on both sides of a ratio alike; pooled percentiles are printed too.
 *
 * <p>The two measuring threads are pinned to CPUs 0 and 1 (sched_setaffinity) when the machine has two; the
 * helper threads (fabric liveness, Aeron driver and client conductors) are not pinned and mostly sleep.
 * A round trip is the time between consecutive {@code System.nanoTime()} reads of the pinging thread within
 * a block (perftest's way); every wait loop spins with {@code Thread.onSpinWait()}.
 *
 * <p>Run (after {@code mvn -B -q package -pl bench}), from the repository root:
 * <pre>
 * $JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *     --add-opens java.base/jdk.internal.misc=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
 *     -cp bench/target/benchmarks.jar dev.nupa.bench.RdmaVsAeronBench [iterations=200000] [warmup=100000] [pin=true|false]
 * </pre>
 * (The shaded jar's Main-Class is JMH; {@code -cp} with a class name runs this one.) {@code iterations} and
 * {@code warmup} count round trips per transport. The fabric file and the Aeron directory are removed on exit.
 */
public final class RdmaVsAeronBench {
    static final int SIGNAL_EVERY = 64;
    /** Round trips per turn of one transport. */
    static final int BLOCK = 500;
    static final int FLOOR = 0;
    static final int NUPA = 1;
    static final int AERON8 = 2;
    static final int AERON32 = 3;
    static final int MODES = 4;
    static final String[] NAMES = {"shm floor (1 cache line)", "NUPA RDMA write-lat 8 B direct", "Aeron IPC ping-pong 8 B",
        "Aeron IPC ping-pong 32 B"};
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    static final int PING_STREAM = 1001;
    static final int PONG_STREAM = 1002;

    static int iterations = 200_000;
    static int warmup = 100_000;
    static boolean pin = true;

    private RdmaVsAeronBench() {
    }

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            String[] kv = a.split("=", 2);
            switch (kv[0]) {
                case "iterations" -> iterations = Integer.parseInt(kv[1]);
                case "warmup" -> warmup = Integer.parseInt(kv[1]);
                case "pin" -> pin = Boolean.parseBoolean(kv[1]);
                default -> throw new IllegalArgumentException("unknown argument " + a + "; use iterations=N warmup=N pin=true|false");
            }
        }
        if (iterations < BLOCK || warmup < 0) {
            throw new IllegalArgumentException("need iterations >= " + BLOCK + " and warmup >= 0, not iterations=" + iterations
                    + " warmup=" + warmup);
        }
        pin = pin && Runtime.getRuntime().availableProcessors() >= 2;
        int warmBlocks = (warmup + BLOCK - 1) / BLOCK;
        int blocks = iterations / BLOCK;
        System.out.printf(Locale.ROOT, "RdmaVsAeronBench: %d round trips per transport in turns of %d after %d warm-up, pinned=%s, "
                + "%d CPUs, %s%n", blocks * BLOCK, BLOCK, warmBlocks * BLOCK, pin, Runtime.getRuntime().availableProcessors(),
                Runtime.version());
        long[][] rtt = new long[MODES][blocks * BLOCK];
        run(warmBlocks, blocks, rtt);

        Histogram[] h = new Histogram[MODES];
        for (int m = 0; m < MODES; m++) {
            h[m] = new Histogram(10_000_000_000L, 3);
            for (long v : rtt[m]) {
                h[m].recordValue(Math.max(1, v));
            }
            report(NAMES[m], h[m]);
        }
        double[] vsFloor = new double[blocks];
        double[] vsAeron8 = new double[blocks];
        double[] vsAeron32 = new double[blocks];
        double[] aeronVsFloor = new double[blocks];
        for (int b = 0; b < blocks; b++) {
            double f = blockMedian(rtt[FLOOR], b);
            double n = blockMedian(rtt[NUPA], b);
            double a8 = blockMedian(rtt[AERON8], b);
            vsFloor[b] = n / f;
            vsAeron8[b] = n / a8;
            vsAeron32[b] = n / blockMedian(rtt[AERON32], b);
            aeronVsFloor[b] = a8 / f;
        }
        System.out.printf(Locale.ROOT, "pooled p50 ratios: NUPA/floor %.2f, NUPA/Aeron 8 B %.2f, NUPA/Aeron 32 B %.2f%n",
                p50(h[NUPA]) / p50(h[FLOOR]), p50(h[NUPA]) / p50(h[AERON8]), p50(h[NUPA]) / p50(h[AERON32]));
        System.out.printf(Locale.ROOT, "ratio NUPA / floor        = %.2f (median over %d turns of block medians; target <= 2)%n",
                median(vsFloor), blocks);
        System.out.printf(Locale.ROOT, "ratio NUPA / Aeron 8 B    = %.2f (target < 1)%n", median(vsAeron8));
        System.out.printf(Locale.ROOT, "ratio NUPA / Aeron 32 B   = %.2f (target < 1)%n", median(vsAeron32));
        System.out.printf(Locale.ROOT, "ratio Aeron 8 B / floor   = %.2f (for scale)%n", median(aeronVsFloor));
    }

    static double half(long rttNs) {
        return rttNs / 2.0;
    }

    static double p50(Histogram h) {
        return half(h.getValueAtPercentile(50));
    }

    /** Prints the half round trip: the histogram holds whole round trips. */
    static void report(String name, Histogram h) {
        System.out.printf(Locale.ROOT, "%-32s half RTT ns: p50 %7.1f  p99 %7.1f  p99.9 %8.1f  mean %7.1f  (n=%d)%n", name,
                half(h.getValueAtPercentile(50)), half(h.getValueAtPercentile(99)), half(h.getValueAtPercentile(99.9)),
                h.getMean() / 2.0, h.getTotalCount());
    }

    static double blockMedian(long[] rtt, int block) {
        long[] b = Arrays.copyOfRange(rtt, block * BLOCK, (block + 1) * BLOCK);
        Arrays.sort(b);
        return b[BLOCK / 2];
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    // ---- the two threads --------------------------------------------------------------------

    /** One side's part of each transport: {@link #ping} sends and waits for the answer, {@link #pong} answers one. */
    interface Side {
        void ping();

        void pong();

        /** Between turns, outside the timed interval (timers, housekeeping). */
        default void idle() {
        }
    }

    /** Sets up everything, then runs the turns on two pinned threads. */
    static void run(int warmBlocks, int blocks, long[][] rtt) throws Exception {
        Path fabricPath = tempPath("fabric");
        Path floorPath = tempPath("floor");
        String aeronDir = tempPath("aeron").toString();
        // 2 nodes (a spare 2 more), one ring of 64 frames of 9216 bytes, 64 windows in 16 MiB,
        // heartbeats every 100 ms, a node dead after 1 s standing still.
        FabricGeometry g = new FabricGeometry(4, 1, 64, 9216, 64, 16L << 20, 100_000_000L, 1_000_000_000L, 1_000_000_000L);
        // The data path of aeron:ipc is the log buffers, between the publisher and subscriber threads; the
        // driver's conductor only sets up and moves the publication limit, so on 2 cores it shares one
        // thread that backs off to parking rather than spinning against the two measuring threads.
        MediaDriver.Context driverCtx = new MediaDriver.Context()
                .aeronDirectoryName(aeronDir)
                .threadingMode(ThreadingMode.SHARED)
                .sharedIdleStrategy(new BackoffIdleStrategy(10, 10, 1_000, 100_000))
                .ipcTermBufferLength(16 << 20)
                .dirDeleteOnStart(true)
                .dirDeleteOnShutdown(true);
        try (Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(floorPath, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                     StandardOpenOption.WRITE);
             Fabric fabric = ShmFabric.create(fabricPath, g);
             FabricNode nodeA = fabric.attach(0);
             FabricNode nodeB = fabric.attach(1);
             MediaDriver driver = MediaDriver.launchEmbedded(driverCtx);
             Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(driver.aeronDirectoryName())
                     .idleStrategy(new SleepingMillisIdleStrategy(1)));
             Subscription pingSub = aeron.addSubscription("aeron:ipc", PING_STREAM);
             Subscription pongSub = aeron.addSubscription("aeron:ipc", PONG_STREAM);
             ExclusivePublication pingPub = aeron.addExclusivePublication("aeron:ipc", PING_STREAM);
             ExclusivePublication pongPub = aeron.addExclusivePublication("aeron:ipc", PONG_STREAM)) {
            MemorySegment line = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!(pingPub.isConnected() && pongPub.isConnected() && pingSub.imageCount() > 0 && pongSub.imageCount() > 0)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Aeron IPC streams did not connect in 10 s");
                }
                Thread.sleep(1);
            }
            Image pongImage = pongSub.imageAtIndex(0);
            Image pingImage = pingSub.imageAtIndex(0);
            Endpoint[] endpoints = new Endpoint[2];
            long[][] counters = new long[2][];
            CyclicBarrier barrier = new CyclicBarrier(2);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] threads = new Thread[2];
            FabricNode[] nodes = {nodeA, nodeB};
            for (int k = 0; k < 2; k++) {
                int side = k;
                threads[k] = new Thread(() -> {
                    if (pin && !Affinity.pin(side)) {
                        System.err.println("could not pin to CPU " + side);
                    }
                    try (Nupa nupa = new Nupa(side, nodes[side], barrier, endpoints)) {
                        Side[] sides = {
                            new FloorSide(line),
                            nupa,
                            new AeronSide(8, side == 0 ? pingPub : pongPub, side == 0 ? pongImage : pingImage),
                            new AeronSide(32, side == 0 ? pingPub : pongPub, side == 0 ? pongImage : pingImage)
                        };
                        barrier.await();
                        turns(sides, side == 0, warmBlocks, blocks, rtt);
                        counters[side] = nupa.counters();
                        barrier.await(); // neither side closes its context while the other may still write into it
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                        barrier.reset(); // wakes a peer waiting at the barrier with BrokenBarrierException
                    }
                }, side == 0 ? "bench-ping" : "bench-pong");
                threads[k].setDaemon(true);
            }
            for (Thread t : threads) {
                t.start();
            }
            for (Thread t : threads) {
                t.join(300_000);
                if (t.isAlive()) {
                    throw new IllegalStateException(t.getName() + " still running after 300 s: a side is stuck"
                            + (failure.get() != null ? " (the other failed: " + failure.get() + ")" : ""));
                }
            }
            Throwable t = failure.get();
            if (t != null && !(t instanceof BrokenBarrierException)) {
                throw new IllegalStateException("bench failed", t);
            }
            for (int k = 0; k < 2; k++) {
                if (counters[k] == null || counters[k][1] != 0 || counters[k][0] < (long) (warmBlocks + blocks) * BLOCK) {
                    throw new IllegalStateException("node " + k + " counters " + Arrays.toString(counters[k])
                            + " (direct operations, fallbacks): the writes did not all go by direct placement");
                }
            }
        } finally {
            Files.deleteIfExists(fabricPath);
            Files.deleteIfExists(floorPath);
            deleteTree(Path.of(aeronDir));
        }
    }

    /** The turns: each block runs one transport; the pinging side times each round trip of recorded blocks. */
    static void turns(Side[] sides, boolean ping, int warmBlocks, int blocks, long[][] rtt) {
        for (int b = 0; b < (warmBlocks + blocks) * MODES; b++) {
            int mode = b % MODES;
            int recorded = b / MODES - warmBlocks;
            Side s = sides[mode];
            if (!ping) {
                for (int i = 0; i < BLOCK; i++) {
                    s.pong();
                }
            } else {
                long[] out = rtt[mode];
                long t0 = System.nanoTime();
                for (int i = 0; i < BLOCK; i++) {
                    s.ping();
                    long t1 = System.nanoTime();
                    if (recorded >= 0) {
                        out[recorded * BLOCK + i] = t1 - t0;
                    }
                    t0 = t1;
                }
            }
            s.idle();
        }
    }

    // ---- 1. the shm floor -----------------------------------------------------------------------

    /** One long in one cache line: ping writes 2i+1 and waits for 2i+2; pong waits for 2i+1 and writes 2i+2. */
    static final class FloorSide implements Side {
        private final MemorySegment line;
        private long value;

        FloorSide(MemorySegment line) {
            this.line = line;
        }

        @Override
        public void ping() {
            long want = value + 2;
            LONG.setRelease(line, 0L, value + 1);
            while ((long) LONG.getAcquire(line, 0L) != want) {
                Thread.onSpinWait();
            }
            value = want;
        }

        @Override
        public void pong() {
            long want = value + 1;
            while ((long) LONG.getAcquire(line, 0L) != want) {
                Thread.onSpinWait();
            }
            LONG.setRelease(line, 0L, want + 1);
            value = want + 1;
        }
    }

    // ---- 2. NUPA RDMA write-lat ---------------------------------------------------------------

    /** Where a side's region is and how to reach its QP: exchanged in memory before the run. */
    record Endpoint(int node, int qpn, int rkey, long addr) {
    }

    /** Offset of the 8 bytes the peer writes (the side spins on its last byte). */
    static final long RECV_OFF = 0;
    /** Offset of the 8 bytes this side sends from. */
    static final long SEND_OFF = 64;

    /** One side of write-lat: its own link, context, region and DIRECT RC QP, all touched only on this thread. */
    static final class Nupa implements Side, AutoCloseable {
        private final Link link;
        private final RdmaContext ctx;
        private final CompletionQueue cq;
        private final QueuePair qp;
        private final MemorySegment mem;
        private final SendWorkRequest wr;
        private final WorkCompletion wc = new WorkCompletion();
        private int posts;
        private byte value;

        Nupa(int k, FabricNode dev, CyclicBarrier barrier, Endpoint[] endpoints) throws Exception {
            link = new Link(dev);
            ctx = RdmaContext.open(link);
            ProtectionDomain pd = ctx.allocPd();
            cq = ctx.createCq(256);
            MemoryRegion mr = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT));
            int psn = k == 0 ? 0x100 : 0xFFFF00;
            qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1)
                    .qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            endpoints[k] = new Endpoint(ctx.node(), qp.qpNum(), mr.rkey(), mr.addr());
            barrier.await();
            Endpoint peer = endpoints[1 - k];
            int peerPsn = k == 0 ? 0xFFFF00 : 0x100;
            qp.modify(new QpAttr().qpState(QpState.RTR).destNode(peer.node()).pathMtu(1024).destQpNum(peer.qpn())
                    .rqPsn(peerPsn).maxDestRdAtomic(4).minRnrTimer(1),
                    QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                            | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
            qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(psn).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(4),
                    QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT
                            | QpAttrMask.RNR_RETRY | QpAttrMask.MAX_QP_RD_ATOMIC);
            barrier.await(); // both QPs in RTS: each peer's directory shows a QP that takes writes
            mem = mr.memory();
            wr = new SendWorkRequest(1).opcode(WrOpcode.RDMA_WRITE).remote(peer.addr() + RECV_OFF, peer.rkey())
                    .local(mr, SEND_OFF, 8);
        }

        private void write(byte v) {
            mem.set(ValueLayout.JAVA_BYTE, SEND_OFF + 7, v);
            boolean signaled = ++posts % SIGNAL_EVERY == 0;
            wr.sendFlags = SendFlags.INLINE | (signaled ? SendFlags.SIGNALED : 0);
            qp.postSend(wr);
            if (signaled) {
                // Direct placement completes on post: the completion is there already.
                while (!cq.poll(wc)) {
                    ctx.poll(System.nanoTime());
                }
                if (wc.status != WcStatus.SUCCESS) {
                    throw new IllegalStateException("write completed with " + wc);
                }
            }
        }

        private void await(byte v) {
            while ((byte) BYTE.getAcquire(mem, RECV_OFF + 7) != v) {
                Thread.onSpinWait();
            }
        }

        @Override
        public void ping() {
            byte v = ++value;
            write(v);
            await(v);
        }

        @Override
        public void pong() {
            byte v = ++value;
            await(v);
            write(v);
        }

        @Override
        public void idle() {
            long now = System.nanoTime();
            link.poll(64, now);
            ctx.poll(now);
        }

        long[] counters() {
            return new long[] {ctx.counter(RdmaCounter.DIRECT_OPS), ctx.counter(RdmaCounter.DIRECT_FALLBACKS)};
        }

        @Override
        public void close() {
            ctx.close();
        }
    }

    // ---- 3. Aeron IPC ping-pong ----------------------------------------------------------------

    /** One side of Aeron's ping-pong: ping offers and polls the pong image; pong polls the ping image and echoes. */
    static final class AeronSide implements Side {
        private final int length;
        private final ExclusivePublication pub;
        private final Image image;
        private final UnsafeBuffer buf = new UnsafeBuffer(BufferUtil.allocateDirectAligned(BitUtil.CACHE_LINE_LENGTH,
                BitUtil.CACHE_LINE_LENGTH));
        private final FragmentHandler ignore = (b, o, l, h) -> { };
        private final FragmentHandler echo;
        private long sent;

        AeronSide(int length, ExclusivePublication pub, Image image) {
            this.length = length;
            this.pub = pub;
            this.image = image;
            this.echo = (b, o, l, h) -> {
                while (pub.offer(b, o, l) < 0) {
                    Thread.onSpinWait();
                }
            };
        }

        @Override
        public void ping() {
            buf.putLong(0, ++sent);
            while (pub.offer(buf, 0, length) < 0) {
                Thread.onSpinWait();
            }
            while (image.poll(ignore, 1) == 0) {
                Thread.onSpinWait();
            }
        }

        @Override
        public void pong() {
            while (image.poll(echo, 1) == 0) {
                Thread.onSpinWait();
            }
        }
    }

    // ---- helpers ----------------------------------------------------------------------------

    static Path tempPath(String tag) {
        return Path.of("/dev/shm", "nupa-bench-" + tag + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    }

    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }
}
