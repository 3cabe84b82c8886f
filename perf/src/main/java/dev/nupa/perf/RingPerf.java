package dev.nupa.perf;

import dev.nupa.device.Affinity;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.Datapath;
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
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.ring.RingCompletion;
import dev.nupa.roce.ring.WorkRing;
import dev.nupa.roce.ring.WorkRingLayout;
import dev.nupa.roce.ring.WorkRingProxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf ring`: what a work ring costs (docs/work-rings.md). A target node and a proxy node share one fresh fabric
 * in this process; the proxy's thread drives its link, verbs context and {@link WorkRingProxy}, busy-polling. First
 * the verbs API is called in process, on the proxy's own thread and QP kind (a DIRECT RC QP to the target): RDMA
 * WRITE latency (post to completion), the rate of 8-byte WRITEs and the bandwidth of 64 KiB ones. Then a poster
 * thread on another CPU does the same work through the ring. Each ratio is ring over verbs, in the same run.
 */
@Command(name = "ring", mixinStandardHelpOptions = true,
        description = "The cost of a work ring: RDMA WRITEs posted through a proxy's ring against the verbs API called in process.")
final class RingPerf implements Callable<Integer> {
    @Option(names = "-n", paramLabel = "N", defaultValue = "200000", description = "Operations per measure (default: ${DEFAULT-VALUE}).")
    int iterations;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "50000", description = "Unmeasured operations first (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--depth", paramLabel = "N", defaultValue = "64",
            description = "WRITEs outstanding in the rate and bandwidth measures (default: ${DEFAULT-VALUE}).")
    int depth;

    @Option(names = "--json", description = "Print one JSON object with the results on the last line.")
    boolean json;

    private static final int BIG = 65_536;
    private static final int RING_ENTRIES = 256;

    private volatile boolean stop;

    @Override
    public Integer call() throws Exception {
        if (iterations < 1 || warmup < 0 || depth < 1 || depth > RING_ENTRIES / 2) {
            throw new IllegalArgumentException("-n must be at least 1, --warmup not negative, --depth 1.." + RING_ENTRIES / 2);
        }
        int cpus = Runtime.getRuntime().availableProcessors();
        Path path = PerfRunner.freshFabricPath("ring-perf");
        long data = (long) depth * BIG;
        long windows = WorkRingLayout.windowBytes(RING_ENTRIES, RING_ENTRIES, data) + 2 * data + (8L << 20);
        try (Fabric fabric = ShmFabric.create(path, FabricGeometry.defaults().withWindows(64, RdmaPerf.roundUp(windows, 1L << 20)));
                FabricNode targetNode = fabric.attach(1); FabricNode proxyNode = fabric.attach(2)) {
            Link targetLink = new Link(targetNode);
            Link proxyLink = new Link(proxyNode);
            RdmaContext target = RdmaContext.open(targetLink, 16, 64, System::nanoTime);
            RdmaContext ctx = RdmaContext.open(proxyLink, 16, 64, System::nanoTime);
            ProtectionDomain tpd = target.allocPd();
            MemoryRegion region = tpd.allocMr(data, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            ProtectionDomain pd = ctx.allocPd();
            MemoryRegion source = pd.allocMr(data, Access.LOCAL_WRITE);
            CompletionQueue verbsCq = ctx.createCq(RING_ENTRIES);
            QueuePair verbsQp = connected(ctx, pd, verbsCq, target, tpd);
            CompletionQueue ringCq = ctx.createCq(RING_ENTRIES);
            QueuePair ringQp = connected(ctx, pd, ringCq, target, tpd);

            // The verbs API in process, on the thread that will serve the ring.
            Measures verbs = new Measures();
            Thread serving = Thread.ofPlatform().name("proxy").start(() -> {
                pin(cpus, 1);
                verbs.measure(new VerbsPoster(ctx, verbsQp, verbsCq, source, region), iterations, warmup, depth);
            });
            serving.join();

            FabricWindow w = proxyNode.exportWindow(WorkRingLayout.windowBytes(RING_ENTRIES, RING_ENTRIES, data),
                    FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE | FabricWindow.WORK_RING);
            WorkRingProxy.format(w, 0, RING_ENTRIES, RING_ENTRIES, data, region.addr(), region.length(), region.rkey(), ringQp.qpNum(), 1,
                    ringQp.qpNum());
            WorkRingProxy proxy = new WorkRingProxy(w, proxyNode, pd, ringQp, ringCq, RING_ENTRIES, 1_000, Long.MAX_VALUE / 4);
            Thread proxyThread = Thread.ofPlatform().name("proxy").start(() -> {
                pin(cpus, 1);
                long ctxNext = 0;
                long targetNext = 0;
                while (!stop) { // as a datapath's round: the links always, the contexts when due or fed
                    long now = System.nanoTime();
                    int work = proxyLink.poll(16, now) + targetLink.poll(16, now);
                    if (work > 0 || now >= ctxNext) {
                        ctxNext = ctx.poll(now);
                    }
                    if (work > 0 || now >= targetNext) {
                        targetNext = target.poll(now);
                    }
                    proxy.poll(Datapath.BATCH, now); // a source of the round, as on a datapath
                }
            });
            Measures ring = new Measures();
            Thread poster = Thread.ofPlatform().name("poster").start(() -> {
                pin(cpus, 0);
                ring.measure(new RingPoster(WorkRing.of(w)), iterations, warmup, depth);
            });
            poster.join();
            stop = true;
            proxyThread.join();
            report(cpus, verbs, ring);
            proxy.close();
            w.close();
            target.close();
            ctx.close();
        } finally {
            Files.deleteIfExists(path);
        }
        return 0;
    }

    private static void pin(int cpus, int cpu) {
        if (cpus >= 2) {
            Affinity.pin(cpu);
        }
    }

    private void report(int cpus, Measures verbs, Measures ring) {
        double latRatio = ring.latP50 / verbs.latP50;
        double rateRatio = ring.rate / verbs.rate;
        double bwRatio = ring.gbps / verbs.gbps;
        String where = cpus > 2 ? "proxy pinned to CPU 1, poster to CPU 0" : "proxy and poster on CPUs 1 and 0 of " + cpus
                + ", whose place on the host is the host's";
        System.out.printf(Locale.ROOT, "ring: %s; %d operations a measure, %d outstanding%n", where, iterations, depth);
        System.out.printf(Locale.ROOT, "%-32s %12s %12s %8s%n", "", "verbs", "ring", "ratio");
        System.out.printf(Locale.ROOT, "%-32s %12.0f %12.0f %8.2f%n", "WRITE 8 B post->completion p50 ns", verbs.latP50, ring.latP50, latRatio);
        System.out.printf(Locale.ROOT, "%-32s %12.0f %12.0f %8s%n", "  p99 ns", verbs.latP99, ring.latP99, "");
        System.out.printf(Locale.ROOT, "%-32s %12.2f %12.2f %8.2f%n", "WRITE 8 B rate, M/s", verbs.rate / 1e6, ring.rate / 1e6, rateRatio);
        System.out.printf(Locale.ROOT, "%-32s %12.2f %12.2f %8.2f%n", "WRITE 64 KiB, Gbit/s", verbs.gbps, ring.gbps, bwRatio);
        if (json) {
            System.out.printf(Locale.ROOT, "{\"tool\":\"ring\",\"verbs_lat_p50_ns\":%s,\"ring_lat_p50_ns\":%s,\"lat_ratio\":%s,"
                    + "\"verbs_rate\":%s,\"ring_rate\":%s,\"rate_ratio\":%s,\"verbs_gbps\":%s,\"ring_gbps\":%s,\"bw_ratio\":%s,"
                    + "\"cpus\":%d}%n", JsonNumber.of(verbs.latP50, 1), JsonNumber.of(ring.latP50, 1), JsonNumber.of(latRatio, 4),
                    JsonNumber.of(verbs.rate, 0), JsonNumber.of(ring.rate, 0), JsonNumber.of(rateRatio, 4), JsonNumber.of(verbs.gbps, 3),
                    JsonNumber.of(ring.gbps, 3), JsonNumber.of(bwRatio, 4), cpus);
        }
    }

    /** An RC QP of {@code ctx}, DIRECT, connected to a fresh QP of the target. */
    private static QueuePair connected(RdmaContext ctx, ProtectionDomain pd, CompletionQueue cq, RdmaContext target, ProtectionDomain tpd) {
        CompletionQueue tcq = target.createCq(16);
        QueuePair a = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT).withCapacity(RING_ENTRIES, 1));
        QueuePair b = target.createQp(tpd, QpInitAttr.rc(tcq, tcq).withMode(TransferMode.DIRECT).withCapacity(16, 1));
        rts(a, target.node(), b.qpNum());
        rts(b, ctx.node(), a.qpNum());
        return a;
    }

    private static void rts(QueuePair qp, int peer, int peerQpn) {
        qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        qp.modify(new QpAttr().qpState(QpState.RTR).destNode(peer).pathMtu(4096).destQpNum(peerQpn).rqPsn(0).maxDestRdAtomic(16).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(0).timeout(17).retryCnt(7).rnrRetry(7).maxRdAtomic(16),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    /** Posts signaled WRITEs of slot-sized chunks and takes their completions, in order. */
    private interface Poster {
        /** Posts a WRITE of {@code length} bytes from slot {@code slot}; false when there is no room now. */
        boolean post(long id, int slot, int length);

        /** Takes one completion if there is one: its id, or -1. */
        long poll();
    }

    private static final class VerbsPoster implements Poster {
        private final RdmaContext ctx;
        private final QueuePair qp;
        private final CompletionQueue cq;
        private final MemoryRegion source;
        private final MemoryRegion target;
        private final SendWorkRequest wr = new SendWorkRequest(1);
        private final WorkCompletion wc = new WorkCompletion();

        VerbsPoster(RdmaContext ctx, QueuePair qp, CompletionQueue cq, MemoryRegion source, MemoryRegion target) {
            this.ctx = ctx;
            this.qp = qp;
            this.cq = cq;
            this.source = source;
            this.target = target;
            wr.opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED);
        }

        @Override
        public boolean post(long id, int slot, int length) {
            wr.wrId(id).local(source, (long) slot * BIG, length).remote(target.addr() + (long) slot * BIG, target.rkey());
            qp.postSend(wr);
            return true;
        }

        @Override
        public long poll() {
            if (cq.poll(wc)) {
                check(wc.status);
                return wc.wrId;
            }
            ctx.poll(System.nanoTime());
            return -1;
        }
    }

    private static final class RingPoster implements Poster {
        private final WorkRing ring;
        private final RingCompletion c = new RingCompletion();

        RingPoster(WorkRing ring) {
            this.ring = ring;
        }

        @Override
        public boolean post(long id, int slot, int length) {
            return ring.postWrite(id, (long) slot * BIG, (long) slot * BIG, length, true) >= 0;
        }

        @Override
        public long poll() {
            if (ring.poll(c) == 1) {
                check(c.status);
                return c.wrId;
            }
            return -1;
        }
    }

    private static void check(int status) {
        if (status != WcStatus.SUCCESS) {
            throw new IllegalStateException("a WRITE completed with " + WcStatus.name(status));
        }
    }

    /** Latency (one WRITE at a time), the rate of 8-byte WRITEs and the bandwidth of 64 KiB ones, {@code depth} outstanding. */
    private static final class Measures {
        double latP50;
        double latP99;
        double rate;
        double gbps;

        void measure(Poster p, int n, int warmup, int depth) {
            Histogram h = LatencyStats.newHistogram();
            for (int i = 0; i < warmup + n; i++) {
                long t0 = System.nanoTime();
                while (!p.post(i, 0, 8)) {
                    Thread.onSpinWait();
                }
                while (p.poll() < 0) {
                    Thread.onSpinWait();
                }
                if (i >= warmup) {
                    h.recordValue(System.nanoTime() - t0);
                }
            }
            latP50 = h.getValueAtPercentile(50);
            latP99 = h.getValueAtPercentile(99);
            stream(p, warmup, 8, depth);
            long t0 = System.nanoTime();
            stream(p, n, 8, depth);
            rate = n / ((System.nanoTime() - t0) / 1e9);
            int big = Math.max(1, n / 20);
            stream(p, Math.max(1, warmup / 20), BIG, depth);
            t0 = System.nanoTime();
            stream(p, big, BIG, depth);
            gbps = big * (double) BIG * 8 / (System.nanoTime() - t0);
        }

        /** {@code n} WRITEs of {@code size}, at most {@code depth} outstanding, each from and to its own slot. */
        private static void stream(Poster p, int n, int size, int depth) {
            long posted = 0;
            long done = 0;
            while (done < n) {
                while (posted < n && posted - done < depth && p.post(posted, (int) (posted % depth), size)) {
                    posted++;
                }
                long id = p.poll();
                if (id >= 0) {
                    if (id != done) {
                        throw new IllegalStateException("completion " + id + " came where " + done + " was due");
                    }
                    done++;
                }
            }
        }
    }
}
