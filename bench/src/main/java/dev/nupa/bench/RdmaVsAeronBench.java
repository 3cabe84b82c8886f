package dev.nupa.bench;

import dev.nupa.device.Affinity;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.Link;
import dev.nupa.roce.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpAttr;
import dev.nupa.roce.QpAttrMask;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RdmaCounter;
import dev.nupa.roce.SendFlags;
import dev.nupa.roce.SendWorkRequest;
import dev.nupa.roce.TransferMode;
import dev.nupa.roce.WcStatus;
import dev.nupa.roce.WorkCompletion;
import dev.nupa.roce.WrOpcode;

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
import org.agrona.concurrent.BusySpinIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.NoOpIdleStrategy;
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
import java.util.Comparator;
import java.util.Locale;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * Side-by-side ping-pong latency, in one process, of three ways to hand 8 bytes to another thread and
 * back (each a half round trip, p50/p99/p99.9/mean over {@code iterations} after {@code warmup}):
 * <ol>
 *   <li><b>shm floor</b>: one 8-byte counter in one cache line of a {@code /dev/shm} file, bounced
 *       between the two threads (release store, acquire spin): the least any shared-memory transport can take;</li>
 *   <li><b>NUPA RDMA write-lat</b> in the manner of perftest's {@code ib_write_lat}: two verbs contexts on
 *       two nodes of one fresh shm fabric, an RC QP each in {@link TransferMode#DIRECT} (direct placement),
 *       8-byte INLINE RDMA WRITEs, signaled every {@value #SIGNAL_EVERY}-th post; each side spins on the last
 *       byte of its own region until the peer's write lands, then writes back;</li>
 *   <li><b>Aeron IPC</b> ping-pong (Aeron's EmbeddedPingPong shape): an embedded MediaDriver, two exclusive
 *       publications over {@code aeron:ipc} (ping and pong streams), 32-byte and 8-byte messages.</li>
 * </ol>
 * The two measuring threads are pinned to CPUs 0 and 1 (sched_setaffinity) when the machine has two; the
 * helper threads (fabric liveness, Aeron driver and client conductors) are not pinned and mostly sleep.
 * Latency is taken as perftest does: one {@code System.nanoTime()} per iteration, the difference between
 * consecutive iterations is one round trip, halved. Every wait loop spins with {@code Thread.onSpinWait()}
 * (Aeron's BusySpinIdleStrategy); {@code spin=none} drops the pause in all three (Aeron: NoOpIdleStrategy).
 *
 * <p>Run (after {@code mvn -B -q package -pl bench}), from the repository root:
 * <pre>
 * $JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
 *     --add-opens java.base/jdk.internal.misc=ALL-UNNAMED --add-opens java.base/java.nio=ALL-UNNAMED \
 *     -cp bench/target/benchmarks.jar dev.nupa.bench.RdmaVsAeronBench [iterations=200000] [warmup=100000] [spin=pause|none] [pin=true|false]
 * </pre>
 * (The shaded jar's Main-Class is JMH; {@code -cp} with a class name runs this one.) It prints one line per
 * measurement and the ratios NUPA p50 / floor p50 (target at most 2) and NUPA p50 / Aeron p50 (target below 1).
 * The fabric file and the Aeron directory are removed on exit.
 */
public final class RdmaVsAeronBench {
    static final int SIGNAL_EVERY = 64;
    /** Both sides run the fabric and verbs timers every this many iterations, outside the timed interval. */
    static final int POLL_EVERY = 4096;
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    static int iterations = 200_000;
    static int warmup = 100_000;
    static boolean pause = true;
    static boolean pin = true;

    private RdmaVsAeronBench() {
    }

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            String[] kv = a.split("=", 2);
            switch (kv[0]) {
                case "iterations" -> iterations = Integer.parseInt(kv[1]);
                case "warmup" -> warmup = Integer.parseInt(kv[1]);
                case "spin" -> pause = !"none".equals(kv[1]);
                case "pin" -> pin = Boolean.parseBoolean(kv[1]);
                default -> throw new IllegalArgumentException("unknown argument " + a
                        + "; use iterations=N warmup=N spin=pause|none pin=true|false");
            }
        }
        pin = pin && Runtime.getRuntime().availableProcessors() >= 2;
        System.out.printf(Locale.ROOT, "RdmaVsAeronBench: %d iterations after %d warm-up, spin=%s, pinned=%s, %d CPUs, %s%n",
                iterations, warmup, pause ? "pause" : "none", pin, Runtime.getRuntime().availableProcessors(),
                Runtime.version());
        Histogram floor = shmFloor();
        report("shm floor (1 cache line)", floor);
        Histogram nupa = nupaWriteLat();
        report("NUPA RDMA write-lat 8 B direct", nupa);
        Histogram aeron32 = aeronIpc(32);
        report("Aeron IPC ping-pong 32 B", aeron32);
        Histogram aeron8 = aeronIpc(8);
        report("Aeron IPC ping-pong 8 B", aeron8);
        double n = half(nupa.getValueAtPercentile(50));
        System.out.printf(Locale.ROOT, "ratio NUPA p50 / floor p50      = %.2f (target <= 2)%n", n / half(floor.getValueAtPercentile(50)));
        System.out.printf(Locale.ROOT, "ratio NUPA p50 / Aeron 32 B p50 = %.2f (target < 1)%n", n / half(aeron32.getValueAtPercentile(50)));
        System.out.printf(Locale.ROOT, "ratio NUPA p50 / Aeron 8 B p50  = %.2f (target < 1)%n", n / half(aeron8.getValueAtPercentile(50)));
    }

    static double half(long rttNs) {
        return rttNs / 2.0;
    }

    /** Prints the half round trip: the histogram holds whole round trips. */
    static void report(String name, Histogram h) {
        System.out.printf(Locale.ROOT, "%-32s half RTT ns: p50 %7.1f  p99 %7.1f  p99.9 %8.1f  mean %7.1f  (n=%d)%n", name,
                half(h.getValueAtPercentile(50)), half(h.getValueAtPercentile(99)), half(h.getValueAtPercentile(99.9)),
                h.getMean() / 2.0, h.getTotalCount());
    }

    static Histogram histogram(long[] rtt) {
        Histogram h = new Histogram(10_000_000_000L, 3);
        for (long v : rtt) {
            h.recordValue(Math.max(1, v));
        }
        return h;
    }

    static void spin() {
        if (pause) {
            Thread.onSpinWait();
        }
    }

    // ---- running two sides ------------------------------------------------------------------

    /** A side of a ping-pong: set up on its own thread, meet the peer at the barrier, then run. */
    interface Side {
        void run(CyclicBarrier barrier) throws Exception;
    }

    /** Runs {@code ping} on CPU 0 and {@code pong} on CPU 1 and waits for both; rethrows the first failure. */
    static void runPair(String name, Side ping, Side pong) throws Exception {
        CyclicBarrier barrier = new CyclicBarrier(2);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] threads = new Thread[2];
        Side[] sides = {ping, pong};
        for (int k = 0; k < 2; k++) {
            int cpu = k;
            Side side = sides[k];
            threads[k] = new Thread(() -> {
                if (pin && !Affinity.pin(cpu)) {
                    System.err.println(name + ": could not pin to CPU " + cpu);
                }
                try {
                    side.run(barrier);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                    barrier.reset(); // wakes a peer waiting at the barrier with BrokenBarrierException
                }
            }, name + (k == 0 ? "-ping" : "-pong"));
            threads[k].setDaemon(true);
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join(120_000);
            if (t.isAlive()) {
                throw new IllegalStateException(t.getName() + " still running after 120 s: a side is stuck"
                        + (failure.get() != null ? " (the other failed: " + failure.get() + ")" : ""));
            }
        }
        Throwable t = failure.get();
        if (t != null && !(t instanceof BrokenBarrierException)) {
            throw new IllegalStateException(name + " failed", t);
        }
    }

    // ---- 1. the shm floor -----------------------------------------------------------------------

    /** One long in one cache line: ping writes 2i+1 and waits for 2i+2; pong waits for 2i+1 and writes 2i+2. */
    static Histogram shmFloor() throws Exception {
        Path path = tempPath("floor");
        long[] rtt = new long[iterations];
        try (Arena arena = Arena.ofShared();
             FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                     StandardOpenOption.WRITE)) {
            MemorySegment line = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, arena);
            int total = warmup + iterations;
            runPair("floor", barrier -> {
                barrier.await();
                long t0 = System.nanoTime();
                for (int i = 0; i < total; i++) {
                    long want = 2L * i + 2;
                    LONG.setRelease(line, 0L, 2L * i + 1);
                    while ((long) LONG.getAcquire(line, 0L) != want) {
                        spin();
                    }
                    long t1 = System.nanoTime();
                    if (i >= warmup) {
                        rtt[i - warmup] = t1 - t0;
                    }
                    t0 = t1;
                }
            }, barrier -> {
                barrier.await();
                for (int i = 0; i < total; i++) {
                    long want = 2L * i + 1;
                    while ((long) LONG.getAcquire(line, 0L) != want) {
                        spin();
                    }
                    LONG.setRelease(line, 0L, want + 1);
                }
            });
        } finally {
            Files.deleteIfExists(path);
        }
        return histogram(rtt);
    }

    // ---- 2. NUPA RDMA write-lat ---------------------------------------------------------------

    /** Where a side's region is and how to reach its QP: exchanged in memory before the run. */
    record Endpoint(int node, int qpn, int rkey, long addr) {
    }

    /** Offset of the 8 bytes the peer writes (the side spins on its last byte). */
    static final long RECV_OFF = 0;
    /** Offset of the 8 bytes this side sends from. */
    static final long SEND_OFF = 64;

    static Histogram nupaWriteLat() throws Exception {
        Path path = tempPath("fabric");
        // 2 nodes (a spare 2 more), one ring of 64 frames of 9216 bytes, 64 windows in 16 MiB,
        // heartbeats every 100 ms, a node dead after 1 s standing still.
        FabricGeometry g = new FabricGeometry(4, 1, 64, 9216, 64, 16L << 20, 100_000_000L, 1_000_000_000L,
                1_000_000_000L);
        long[] rtt = new long[iterations];
        Endpoint[] endpoints = new Endpoint[2];
        long[][] counters = new long[2][];
        Fabric fabric = ShmFabric.create(path, g);
        try {
            FabricNode a = fabric.attach(0);
            FabricNode b = fabric.attach(1);
            try {
                runPair("nupa", barrier -> nupaSide(0, a, barrier, endpoints, rtt, counters),
                        barrier -> nupaSide(1, b, barrier, endpoints, null, counters));
            } finally {
                b.close();
                a.close();
            }
        } finally {
            fabric.close();
            Files.deleteIfExists(path);
        }
        for (int k = 0; k < 2; k++) {
            if (counters[k] != null && (counters[k][1] != 0 || counters[k][0] < warmup + iterations)) {
                throw new IllegalStateException("node " + k + " made " + counters[k][0] + " direct operations and "
                        + counters[k][1] + " fallbacks: the writes did not all go by direct placement");
            }
        }
        return histogram(rtt);
    }

    /**
     * One side of write-lat: its own link, context, region and DIRECT RC QP, all touched only on this thread.
     * Side 0 (ping, {@code rtt != null}) writes first and times; side 1 answers each write with one.
     */
    static void nupaSide(int k, FabricNode dev, CyclicBarrier barrier, Endpoint[] endpoints, long[] rtt,
            long[][] counters) throws Exception {
        Link link = new Link(dev);
        try (RdmaContext ctx = RdmaContext.open(link)) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(256);
            MemoryRegion mr = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT));
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

            MemorySegment mem = mr.memory();
            SendWorkRequest wr = new SendWorkRequest(1).opcode(WrOpcode.RDMA_WRITE)
                    .remote(peer.addr() + RECV_OFF, peer.rkey()).local(mr, SEND_OFF, 8);
            WorkCompletion wc = new WorkCompletion();
            long last = RECV_OFF + 7;
            int total = warmup + iterations;
            boolean ping = rtt != null;
            long t0 = System.nanoTime();
            for (int i = 0; i < total; i++) {
                byte v = (byte) (i + 1);
                if (!ping) {
                    while ((byte) BYTE.getAcquire(mem, last) != v) {
                        spin();
                    }
                }
                mem.set(ValueLayout.JAVA_BYTE, SEND_OFF + 7, v);
                boolean signaled = i % SIGNAL_EVERY == SIGNAL_EVERY - 1;
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
                if (ping) {
                    while ((byte) BYTE.getAcquire(mem, last) != v) {
                        spin();
                    }
                    long t1 = System.nanoTime();
                    if (i >= warmup) {
                        rtt[i - warmup] = t1 - t0;
                    }
                    t0 = t1;
                }
                if (i % POLL_EVERY == POLL_EVERY - 1) {
                    long now = System.nanoTime();
                    link.poll(64, now);
                    ctx.poll(now);
                    t0 = System.nanoTime();
                }
            }
            counters[k] = new long[] {ctx.counter(RdmaCounter.DIRECT_OPS), ctx.counter(RdmaCounter.DIRECT_FALLBACKS)};
            barrier.await(); // neither side closes its context while the other may still write into it
        }
    }

    // ---- 3. Aeron IPC ping-pong ----------------------------------------------------------------

    static final int PING_STREAM = 1001;
    static final int PONG_STREAM = 1002;

    static Histogram aeronIpc(int length) throws Exception {
        String dir = tempPath("aeron").toString();
        long[] rtt = new long[iterations];
        // The data path of aeron:ipc is the log buffers, between the publisher and subscriber threads; the
        // driver's conductor only sets up and moves the publication limit, so on 2 cores it shares one
        // thread that backs off to parking rather than spinning against the two measuring threads.
        MediaDriver.Context driverCtx = new MediaDriver.Context()
                .aeronDirectoryName(dir)
                .threadingMode(ThreadingMode.SHARED)
                .sharedIdleStrategy(new BackoffIdleStrategy(10, 10, 1_000, 100_000))
                .ipcTermBufferLength(16 << 20)
                .dirDeleteOnStart(true)
                .dirDeleteOnShutdown(true);
        try (MediaDriver driver = MediaDriver.launchEmbedded(driverCtx);
             Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(driver.aeronDirectoryName())
                     .idleStrategy(new SleepingMillisIdleStrategy(1)));
             Subscription pingSub = aeron.addSubscription("aeron:ipc", PING_STREAM);
             Subscription pongSub = aeron.addSubscription("aeron:ipc", PONG_STREAM);
             ExclusivePublication pingPub = aeron.addExclusivePublication("aeron:ipc", PING_STREAM);
             ExclusivePublication pongPub = aeron.addExclusivePublication("aeron:ipc", PONG_STREAM)) {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!(pingPub.isConnected() && pongPub.isConnected() && pingSub.imageCount() > 0 && pongSub.imageCount() > 0)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Aeron IPC streams did not connect in 10 s");
                }
                Thread.sleep(1);
            }
            Image pongImage = pongSub.imageAtIndex(0);
            Image pingImage = pingSub.imageAtIndex(0);
            int total = warmup + iterations;
            runPair("aeron" + length, barrier -> {
                IdleStrategy idle = pause ? new BusySpinIdleStrategy() : new NoOpIdleStrategy();
                UnsafeBuffer buf = new UnsafeBuffer(BufferUtil.allocateDirectAligned(
                        Math.max(length, BitUtil.CACHE_LINE_LENGTH), BitUtil.CACHE_LINE_LENGTH));
                FragmentHandler ignore = (b, o, l, h) -> { };
                barrier.await();
                long t0 = System.nanoTime();
                for (int i = 0; i < total; i++) {
                    buf.putLong(0, i);
                    while (pingPub.offer(buf, 0, length) < 0) {
                        idle.idle();
                    }
                    idle.reset();
                    while (pongImage.poll(ignore, 1) == 0) {
                        idle.idle();
                    }
                    long t1 = System.nanoTime();
                    if (i >= warmup) {
                        rtt[i - warmup] = t1 - t0;
                    }
                    t0 = t1;
                }
            }, barrier -> {
                IdleStrategy idle = pause ? new BusySpinIdleStrategy() : new NoOpIdleStrategy();
                FragmentHandler echo = (b, o, l, h) -> {
                    while (pongPub.offer(b, o, l) < 0) {
                        idle.idle();
                    }
                };
                barrier.await();
                for (int i = 0; i < total; i++) {
                    while (pingImage.poll(echo, 1) == 0) {
                        idle.idle();
                    }
                }
            });
        } finally {
            deleteTree(Path.of(dir));
        }
        return histogram(rtt);
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
