package dev.nupa.node.perftest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import dev.nupa.l2.Datapath;
import dev.nupa.perf.LatencyStats;
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
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import io.vertx.core.Promise;
import org.HdrHistogram.Histogram;

/**
 * The RDMA side of one perftest test against a perftest peer: an RC queue pair to the peer's IPv4 address, a
 * region of two halves (the lower the source of this side's writes, sends and reads, the upper the target the
 * peer writes, reads, adds to and sends into, advertised as its vaddr), and the test's loop, run as a timer of the
 * node's datapath, polled every round while the test runs, so the loop never blocks the node's thread.
 *
 * <p>The loops do what perftest's do (its {@code run_iter_lat_write}, {@code run_iter_lat_send}, {@code
 * run_iter_lat}, {@code run_iter_bw}): write-lat bounces RDMA WRITEs whose last byte is the iteration's number,
 * the server writing first, each side watching the last byte of its target; send-lat bounces SENDs, the client
 * first; read-lat and atomic-lat time one READ or FETCH_AND_ADD (of 1) at a time; write-bw keeps {@code txDepth}
 * WRITEs in flight, a completion asked for every {@code cqMod}. A side with nothing to send (the server of read-lat,
 * atomic-lat and write-bw) only answers at the transport. Everything here runs on the datapath thread.
 */
final class PerftestRun implements Datapath.Timer {
    enum Test {
        WRITE_LAT("write-lat", "ib_write_lat"), SEND_LAT("send-lat", "ib_send_lat"), READ_LAT("read-lat", "ib_read_lat"),
        ATOMIC_LAT("atomic-lat", "ib_atomic_lat"), WRITE_BW("write-bw", "ib_write_bw");

        final String name;
        final String perftest;

        Test(String name, String perftest) {
            this.name = name;
            this.perftest = perftest;
        }

        boolean latency() {
            return this != WRITE_BW;
        }

        /** Whether this side's loop sends anything: perftest's server of a one-sided test only answers. */
        boolean active(boolean server) {
            return !server || this == WRITE_LAT || this == SEND_LAT;
        }

        /** QP details exchanges before the measured loop starts (perftest 6.x's main). */
        int handshakesBefore() {
            return this == WRITE_BW ? 3 : 4;
        }

        static Test of(String s) {
            for (Test t : values()) {
                if (t.name.equals(s) || t.perftest.equals(s)) {
                    return t;
                }
            }
            throw new IllegalArgumentException("no perftest test " + s + ": give write-lat, send-lat, read-lat, atomic-lat or write-bw");
        }
    }

    /** The READs and atomics this side answers at once (its responder resources). */
    static final int OUT_READS = 16;
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final int RX_DEPTH = 512;

    final Test test;
    final boolean server;
    final int size;
    final long iterations;
    private final int txDepth;
    private final int cqMod;
    private final int psn;
    private final Datapath datapath;
    private final ProtectionDomain pd;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final MemoryRegion mr;
    private final MemorySegment mem;
    private final long half;
    final QueuePair qp;
    private final WorkCompletion wc = new WorkCompletion();
    private final SendWorkRequest swr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final Histogram rtt = new Histogram(60_000_000_000L, 3);
    private Promise<String> done;
    private boolean running;
    private long posted;
    private long completed;
    private long received;
    private long seen; // write-lat: the last number seen in the target
    private long postedAt;
    private long firstPost;
    private long lastSignal;
    private double peakMBps;
    private long lastFetched;
    private long endedAt;

    /**
     * Creates the QP (in INIT), the region and the receives, on the datapath thread. {@code cycle} is the larger of
     * the two sides' cycle buffers: ib_write_bw cycles its writes through that many bytes of the target.
     */
    PerftestRun(RdmaContext ctx, Datapath datapath, Test test, boolean server, int size, long iterations, int txDepth,
                int cqMod, int psn, int cycle) {
        this.test = test;
        this.server = server;
        this.size = size;
        this.iterations = iterations;
        this.txDepth = txDepth;
        this.cqMod = Math.min(cqMod, txDepth); // a completion at least once per window, or the window never moves
        this.psn = psn;
        this.datapath = datapath;
        this.half = (Math.max(size, cycle) + 63) & ~63L;
        pd = ctx.allocPd();
        sendCq = ctx.createCq(Math.max(256, txDepth * 2));
        recvCq = ctx.createCq(2 * RX_DEPTH);
        mr = pd.allocMr(2 * half, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        mem = mr.memory();
        mem.fill((byte) 0);
        qp = ctx.createQp(pd, QpInitAttr.rc(sendCq, recvCq).withMode(TransferMode.PACKET)
                .withCapacity(Math.max(256, txDepth + 1), RX_DEPTH));
        qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1)
                        .qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        if (test == Test.SEND_LAT) {
            rwr.local(mr, half, size); // posted before the last exchange, as perftest posts its own
            for (int i = 0; i < RX_DEPTH; i++) {
                qp.postRecv(rwr);
            }
        }
    }

    /** This side's QP details for the exchange. */
    PerftestWire.Dest local(int ip) {
        return PerftestWire.Dest.ipv4(OUT_READS, qp.qpNum(), psn, mr.rkey(), mr.addr() + half, ip);
    }

    /** RTR and RTS against the peer, with the attributes perftest gives its own QP. */
    void connect(PerftestWire.Dest peer, int pathMtu) {
        if (peer.outReads() < 1 && test.active(server) && (test == Test.READ_LAT || test == Test.ATOMIC_LAT)) {
            throw new IllegalArgumentException("the perftest peer answers no READs or atomics (out_reads 0): run it with -o N, N >= 1");
        }
        qp.modify(new QpAttr().qpState(QpState.RTR).destIp(peer.ipv4Address()).pathMtu(pathMtu).destQpNum(peer.qpn())
                        .rqPsn(peer.psn()).maxDestRdAtomic(OUT_READS).minRnrTimer(12),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(psn).timeout(14).retryCnt(7).rnrRetry(7)
                        .maxRdAtomic(Math.max(1, Math.min(OUT_READS, peer.outReads()))),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
        target(peer);
    }

    /** Where this side's WRITEs, READs and atomics go: the peer's vaddr and rkey (with -R, all the CM leaves to us). */
    void target(PerftestWire.Dest peer) {
        swr.remote(peer.vaddr(), peer.rkey());
    }

    /** Starts the loop; {@code done} gets this side's result lines, or the reason it failed. */
    void start(Promise<String> done) {
        this.done = done;
        if (!test.active(server)) {
            done.complete(""); // perftest's server of a one-sided test only answers at the transport
            return;
        }
        switch (test) {
            case WRITE_LAT -> swr.opcode(WrOpcode.RDMA_WRITE).local(mr, 0, size);
            case SEND_LAT -> swr.opcode(WrOpcode.SEND).local(mr, 0, size);
            case READ_LAT -> swr.opcode(WrOpcode.RDMA_READ).local(mr, 0, size);
            case ATOMIC_LAT -> swr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).local(mr, 0, 8).compareAdd(1);
            case WRITE_BW -> swr.opcode(WrOpcode.RDMA_WRITE).local(mr, 0, size);
        }
        running = true;
        firstPost = System.nanoTime();
        datapath.addTimer(this);
    }

    @Override
    public long poll(long now) {
        if (!running) {
            return Long.MAX_VALUE;
        }
        try {
            if (step(System.nanoTime())) {
                finish(null);
            }
        } catch (RuntimeException e) {
            finish(e);
        }
        return running ? now : Long.MAX_VALUE;
    }

    /** One look at the loop's state; true when this side's part of the test is over. */
    private boolean step(long now) {
        takeSendCompletions(now);
        return switch (test) {
            case WRITE_LAT -> writeLatStep(now);
            case SEND_LAT -> sendLatStep(now);
            case READ_LAT, ATOMIC_LAT -> oneAtATimeStep(now);
            case WRITE_BW -> bandwidthStep(now);
        };
    }

    /** The server writes n, then waits for n; the client waits for n, then writes n (perftest's order). */
    private boolean writeLatStep(long now) {
        if (server && posted == seen && posted < iterations) {
            post(now, posted + 1);
        }
        if (seen == (server ? posted - 1 : posted) && seen < iterations
                && (byte) BYTE.getAcquire(mem, half + size - 1) == (byte) (seen + 1)) {
            seen++;
            if (server || posted > 0) {
                rtt.recordValue(Math.max(0, now - postedAt)); // from our write to the peer's answer
            }
            if (!server) {
                post(now, seen);
            }
        }
        return seen == iterations && posted == iterations && completed == iterations;
    }

    /** The client sends, then waits for the answer; the server answers each SEND it receives. */
    private boolean sendLatStep(long now) {
        while (recvCq.poll(wc)) {
            check(wc);
            received++;
            qp.postRecv(rwr);
            if (posted > 0) {
                rtt.recordValue(Math.max(0, now - postedAt)); // from our SEND to the peer's answer
            }
            if (server && posted < iterations) {
                post(now, 0);
            }
        }
        if (!server && posted == received && posted < iterations) {
            post(now, 0);
        }
        return received == iterations && posted == iterations && completed == iterations;
    }

    /** read-lat, atomic-lat: one operation at a time, each timed to its completion. */
    private boolean oneAtATimeStep(long now) {
        if (posted == completed && posted < iterations) {
            post(now, 0);
        }
        return completed == iterations;
    }

    private boolean bandwidthStep(long now) {
        while (posted < iterations && posted - completed < txDepth) {
            long n = posted + 1;
            swr.sendFlags(n % cqMod == 0 || n == iterations ? SendFlags.SIGNALED : 0).wrId(n);
            qp.postSend(swr);
            posted = n;
        }
        return completed == iterations;
    }

    private void post(long now, long number) {
        if (test == Test.WRITE_LAT) {
            mem.set(ValueLayout.JAVA_BYTE, size - 1, (byte) number);
        }
        swr.sendFlags(SendFlags.SIGNALED).wrId(posted + 1);
        qp.postSend(swr);
        posted++;
        postedAt = now;
    }

    private void takeSendCompletions(long now) {
        while (sendCq.poll(wc)) {
            check(wc);
            if (test == Test.WRITE_BW) {
                long before = completed;
                completed = wc.wrId;
                double seconds = (now - (before == 0 ? firstPost : lastSignal)) / 1e9;
                if (seconds > 0) {
                    peakMBps = Math.max(peakMBps, (completed - before) * (double) size / seconds / (1 << 20));
                }
                lastSignal = now;
            } else {
                completed++;
                if (test == Test.READ_LAT || test == Test.ATOMIC_LAT) {
                    rtt.recordValue(Math.max(0, now - postedAt));
                }
                if (test == Test.ATOMIC_LAT) {
                    checkFetched();
                }
            }
        }
    }

    /** Each FETCH_AND_ADD of 1 returns what the one before left: the peer's atomics add up. */
    private void checkFetched() {
        long v = mem.get(ValueLayout.JAVA_LONG, 0); // host order, as the responder keeps it
        if (completed > 1 && v != lastFetched + 1) {
            throw new IllegalStateException(test.name + ": FETCH_AND_ADD " + completed + " returned " + v + " after " + lastFetched
                    + ": the peer's atomics did not add up");
        }
        lastFetched = v;
    }

    /** The 64-bit value at this side's vaddr (host order): what the peer's FETCH_AND_ADDs left there. */
    long targetValue() {
        return mem.get(ValueLayout.JAVA_LONG, half);
    }

    private void check(WorkCompletion w) {
        if (w.status != WcStatus.SUCCESS) {
            throw new IllegalStateException(test.name + ": a work request completed with " + WcStatus.name(w.status)
                    + " (" + (w.opcode == WcOpcode.RECV ? "receive" : "send queue") + ", wr_id " + w.wrId + ")");
        }
    }

    private void finish(RuntimeException failure) {
        running = false;
        endedAt = System.nanoTime();
        datapath.removeTimer(this);
        if (failure != null) {
            done.tryFail(failure);
        } else {
            done.tryComplete(result());
        }
    }

    /** perftest's result lines for this side: its latency columns, or bytes, iterations and rates. */
    private String result() {
        if (test.latency()) {
            LatencyStats s = test == Test.READ_LAT || test == Test.ATOMIC_LAT ? LatencyStats.of(rtt) : LatencyStats.ofRoundTrips(rtt);
            return LatencyStats.perftestHeader() + "\n" + s.perftestRow(test == Test.ATOMIC_LAT ? 8 : size);
        }
        return String.format(java.util.Locale.ROOT, "%8s %12s %16s %19s %15s%n%8d %12d %16.2f %19.2f %15.6f", "#bytes",
                "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]", "MsgRate[Mpps]", size, iterations, peakMBps,
                averageMBps(), messageRate());
    }

    /** write-bw: MB/s (MB = 2^20 bytes, as perftest) from the first post to the last completion. */
    double averageMBps() {
        return iterations * (double) size / ((endedAt - firstPost) / 1e9) / (1 << 20);
    }

    double messageRate() {
        return iterations / ((endedAt - firstPost) / 1e9) / 1e6;
    }

    double peakMBps() {
        return peakMBps;
    }

    /** Gives the QP, queues and region back; on the datapath thread, after the test. */
    void close() {
        running = false;
        datapath.removeTimer(this);
        qp.close();
        sendCq.close();
        recvCq.close();
        mr.close();
        pd.close();
    }
}
