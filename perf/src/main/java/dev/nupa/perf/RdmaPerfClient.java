package dev.nupa.perf;

import dev.nupa.ip.IpConfig;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.HdrHistogram.Histogram;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WrOpcode;

/** The client side of an {@link RdmaPerf} tool: connects to the server, then measures latency or bandwidth beside the floor. */
final class RdmaPerfClient extends RdmaPerfEnd {
    private int serverIp;
    private int ourPort;
    private int ackSeq = -1;
    private long ackValue;
    private boolean helloed;
    private long peerBuffer;
    private int sendSeq;
    private long atomicExpect;
    private boolean atomicStarted;

    RdmaPerfClient(RdmaPerf cmd) {
        super(cmd);
    }

    // ---- client ------------------------------------------------------------------------------

    @Override
    int run() {
        try {
            long iterations = o.iterations != null ? o.iterations : cmd.defaultIterations();
            open(false, bufferBytes());
            serverIp = IpConfig.fabricPlan(o.serverAddress).address();
            ourPort = pn.ip.bindUdp(0, this::clientControl);
            createQp(mode.equals("direct") ? TransferMode.DIRECT : TransferMode.PACKET);
            int ourPsn = new SplittableRandom().nextInt(1 << 24);
            hello(ourPsn);
            int[] sizes = cmd.sizes(Math.min(half, peerBuffer));
            if (sizes.length == 0 || sizes[sizes.length - 1] > peerBuffer) {
                throw new IllegalArgumentException(name + ": the server's buffer holds " + peerBuffer + " bytes, less than "
                        + bufferBytes() + "; start it with the same -s or -a");
            }
            if (bw) {
                bandwidth(sizes, iterations);
            } else {
                latency(sizes, iterations);
            }
            return 0;
        } finally {
            try {
                if (pn != null && helloed) {
                    control.set(ValueLayout.JAVA_BYTE, 0, BYE);
                    pn.ip.sendUdp(ourPort, serverIp, RdmaPerf.CONTROL_PORT, control, 0, 1);
                }
            } finally {
                close();
            }
        }
    }

    private void clientControl(int src, int srcPort, int dst, MemorySegment m, long off, int len) {
        byte c = len > 0 ? m.get(ValueLayout.JAVA_BYTE, off) : 0;
        if (c == HELLO && len >= 40 && !helloed) {
            int qpn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
            int psn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
            peerRkey = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 12);
            peerAddr = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16);
            peerBuffer = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 24);
            floorWindow = pn.node.openWindow(m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 32),
                    m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 36));
            connect(o.serverAddress, qpn, psn, helloPsn);
            helloed = true;
        } else if (c == ACK && len >= 16) {
            ackValue = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8);
            ackSeq = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
        }
    }

    private int helloPsn;

    private void hello(int ourPsn) {
        helloPsn = ourPsn;
        long deadline = System.nanoTime() + 30_000_000_000L;
        control.set(ValueLayout.JAVA_BYTE, 0, HELLO);
        control.set(ValueLayout.JAVA_BYTE, 1, (byte) (mode.equals("direct") ? 1 : 0));
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, ctx.node());
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 8, qp.qpNum());
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 12, ourPsn);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 16, mr.rkey());
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 20, mr.addr());
        while (!helloed) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + name + " server at node " + o.serverAddress + " of " + o.fabric
                        + " after 30 s; start one with --server");
            }
            pn.ip.sendUdp(ourPort, serverIp, RdmaPerf.CONTROL_PORT, control, 0, 28);
            long until = System.nanoTime() + 10_000_000L;
            while (!helloed && System.nanoTime() < until) {
                pn.link.poll(64, System.nanoTime());
                ctx.poll(System.nanoTime());
            }
        }
        progress();
    }

    /** Starts a server phase and waits for its acknowledgement; returns the server's receive count. */
    private long command(byte c, int size, long count, long start) {
        int seq = ++sendSeq;
        control.set(ValueLayout.JAVA_BYTE, 0, c);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, seq);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 8, size);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 12, count);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 20, start);
        pn.ip.sendUdp(ourPort, serverIp, RdmaPerf.CONTROL_PORT, control, 0, 28);
        progress();
        while (ackSeq != seq) {
            pump();
            drainSends();
        }
        progress();
        return ackValue;
    }

    // ---- client: latency ---------------------------------------------------------------------

    private long floorCounter;
    private PerfTrace trace;

    private void floor(long n, Histogram h) {
        command(FLOOR, 0, n, floorCounter);
        floorCounter = FloorLine.measure(floorWindow.memory(), floorCounter, n, h);
        progress();
    }

    private void latency(int[] sizes, long iterations) {
        Histogram floor = LatencyStats.newHistogram();
        List<LatencyStats> rows = new ArrayList<>();
        double[] ratios = new double[sizes.length];
        Turns turns = null;
        PerfReport report = o.report(name);
        trace = o.tracing(describe() + ", mode " + mode).attach(report);
        boolean halved = op == RdmaPerf.Op.WRITE || op == RdmaPerf.Op.SEND;
        long warm = Math.min(warmup, iterations);
        floor(warm, null);
        for (int i = 0; i < sizes.length; i++) {
            int size = sizes[i];
            prepare(size);
            ops(size, warm, null);
            turns = new Turns(2, iterations) // 0 ours, 1 floor
                    .observe(report, o.progress(name + " " + size + " B", iterations), "ours", "floor");
            for (int t = 0; t < turns.count(); t++) {
                long n = turns.length(t);
                floor(n, turns.turn(1));
                ops(size, n, turns.turn(0));
                turns.endTurn();
            }
            rows.add(halved ? LatencyStats.ofRoundTrips(turns.pooled(0)) : LatencyStats.of(turns.pooled(0)));
            ratios[i] = turns.ratio(0, 1);
            floor.add(turns.pooled(1));
        }
        trace.export();
        LatencyStats f = halved ? LatencyStats.ofRoundTrips(floor) : LatencyStats.of(floor);
        System.out.println(name + ": " + describe() + ", " + modeLine() + (halved ? ", half round trip" : ", each op to its completion")
                + ", fabric " + o.fabric);
        System.out.println(LatencyStats.perftestHeader());
        StringBuilder json = new StringBuilder();
        for (int i = 0; i < sizes.length; i++) {
            LatencyStats a = rows.get(i);
            System.out.println(a.perftestRow(sizes[i]));
            if (i > 0) {
                json.append(',');
            }
            json.append(String.format(Locale.ROOT, "{\"bytes\":%d,%s,\"ratio\":%s}", sizes[i], a.json(), JsonNumber.of(ratios[i], 3)));
        }
        LatencyStats last = rows.get(rows.size() - 1);
        double ratio = ratios[sizes.length - 1];
        System.out.printf(Locale.ROOT, "floor p50 %.3f us, ratio %.2f  (one cache line handed off between the same two processes%s;"
                        + " the ratio is the median over turns of %d of each turn's p50 ratio)%n",
                f.p50() / 1000, ratio, halved ? ", one way" : ", round trip", Turns.TURN);
        if (o.json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"mode\":\"%s\",\"bytes\":%d,\"round_trip\":%b,%s,\"floor\":{\"bytes\":8,%s},"
                            + "\"ratio\":%s,\"pooled_ratio\":%s,\"turns\":%d%s}%n", name, mode, sizes[sizes.length - 1], !halved,
                    last.json(), f.json(), JsonNumber.of(ratio, 3), JsonNumber.of(turns.pooledRatio(0, 1), 3), turns.count(),
                    all ? ",\"rows\":[" + json + "]" : "");
        }
    }

    private String modeLine() {
        return "mode " + mode;
    }

    private String describe() {
        return switch (op) {
            case WRITE -> bw ? "RDMA WRITE stream" : "RDMA WRITE ping-pong";
            case SEND -> bw ? "SEND stream" : "SEND ping-pong";
            case READ -> bw ? "RDMA READ stream" : "RDMA READ";
            case ATOMIC -> "FETCH_AND_ADD";
        };
    }

    /** Sets the work request for one size (built once, posted many times). */
    private void prepare(int size) {
        switch (op) {
            case WRITE -> swr.opcode(WrOpcode.RDMA_WRITE).local(mr, half, size).remote(peerAddr, peerRkey);
            case SEND -> swr.opcode(WrOpcode.SEND).local(mr, half, size);
            case READ -> swr.opcode(WrOpcode.RDMA_READ).local(mr, 0, size).remote(peerAddr, peerRkey);
            case ATOMIC -> swr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).local(mr, 0, 8).remote(peerAddr, peerRkey).compareAdd(1);
        }
    }

    private void ops(int size, long n, Histogram h) {
        switch (op) {
            case WRITE -> writePingPong(size, n, h);
            case SEND -> sendPingPong(size, n, h);
            case READ, ATOMIC -> oneByOne(n, h);
        }
    }

    private void writePingPong(int size, long n, Histogram h) {
        BYTE.setRelease(mem, (long) size - 1, (byte) 0);
        command(WRITE_ECHO, size, n, 0);
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = writeRound(size);
            if (traced) {
                trace.end();
            }
            if (h != null) {
                h.recordValue(t);
            }
            drainSends();
            progress();
        }
    }

    /**
     * One timed round trip of write-lat, in a method of its own called per round (and so the server's
     * {@link #echoRound}). Measured in alternating runs: p50 85-120 ns at 65-75 ns floors this way,
     * 145-200 ns with the round written inside the loop; the loop's on-stack-replaced code is the likely
     * cause. Every latency tool's round is now a method of its own, for the reason {@link FloorLine#ping} gives.
     */
    private long writeRound(int size) {
        byte v = nextRolling(rolling);
        rolling = v & 0xFF;
        mem.set(ValueLayout.JAVA_BYTE, half + size - 1, v);
        swr.sendFlags(latFlags(size));
        long t0 = System.nanoTime();
        qp.postSend(swr);
        awaitLast(size, v);
        return System.nanoTime() - t0;
    }

    private void sendPingPong(int size, long n, Histogram h) {
        command(SEND_ECHO, size, n, 0);
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = sendRound(size);
            if (traced) {
                trace.end();
            }
            if (h != null) {
                h.recordValue(t);
            }
            drainSends();
            progress();
        }
    }

    /** One timed round trip of send-lat (a method of its own, as {@link #writeRound}). */
    private long sendRound(int size) {
        swr.sendFlags(latFlags(size));
        long t0 = System.nanoTime();
        qp.postSend(swr);
        for (int looks = 1; drainRecvs() == 0; looks++) {
            look(looks);
        }
        return System.nanoTime() - t0;
    }

    private void oneByOne(long n, Histogram h) {
        swr.sendFlags(SendFlags.SIGNALED);
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = opRound();
            if (traced) {
                trace.end();
            }
            check(wc);
            if (h != null) {
                h.recordValue(t);
            }
            if (op == RdmaPerf.Op.ATOMIC) {
                long got = mem.get(ValueLayout.JAVA_LONG, 0);
                if (!atomicStarted) { // the server's word need not start at 0 on a reused fabric
                    atomicStarted = true;
                    atomicExpect = got;
                }
                if (got != atomicExpect) {
                    throw new IllegalStateException(name + ": FETCH_AND_ADD returned " + got + ", expected " + atomicExpect);
                }
                atomicExpect++;
            }
            progress();
        }
    }

    /** One timed READ or atomic to its completion (a method of its own, as {@link #writeRound}). */
    private long opRound() {
        long t0 = System.nanoTime();
        qp.postSend(swr);
        for (int looks = 1; !sendCq.poll(wc); looks++) {
            look(looks);
        }
        return System.nanoTime() - t0;
    }

    // ---- client: bandwidth -------------------------------------------------------------------

    private void bandwidth(int[] sizes, long iterations) {
        PerfReport report = o.report(name);
        MemorySegment copySrc = java.lang.foreign.Arena.ofAuto().allocate(sizes[sizes.length - 1], 64);
        MemorySegment copyDst = java.lang.foreign.Arena.ofAuto().allocate(sizes[sizes.length - 1], 64);
        copySrc.fill((byte) 0x5A);
        System.out.println(name + ": " + describe() + ", " + modeLine() + ", tx-depth " + txDepth + ", fabric " + o.fabric);
        System.out.printf(Locale.ROOT, "%8s %12s %18s %21s %15s %19s%n", "#bytes", "#iterations", "BW peak[MB/sec]",
                "BW average[MB/sec]", "MsgRate[Mpps]", "BW average[Gbit/s]");
        StringBuilder rowsJson = new StringBuilder();
        String lastJson = "";
        String floorLine = "";
        double lastRatio = 0;
        for (int size : sizes) {
            prepare(size);
            long warm = Math.max(1, Math.min(warmup, iterations / 10 + 1));
            FabricBandwidth.copies(copySrc, copyDst, size, warm);
            stream(size, warm);
            long per = Math.max(1, iterations / ROUNDS_BW);
            long ours = 0;
            long floor = 0;
            long total = 0;
            double peak = 0;
            if (report != null) {
                report.rates("Gbit/s", "ours", "copy-floor"); // with -a, the report keeps the last size
            }
            for (int r = 0; r < ROUNDS_BW; r++) {
                long k = r == ROUNDS_BW - 1 ? iterations - per * (ROUNDS_BW - 1) : per;
                if (k <= 0) {
                    continue;
                }
                long f = FabricBandwidth.copies(copySrc, copyDst, size, k);
                long t = stream(size, k);
                floor += f;
                ours += t;
                total += k;
                if (report != null) {
                    report.rate(0, k * (double) size * 8 / t);
                    report.rate(1, k * (double) size * 8 / f);
                }
                peak = Math.max(peak, k * (double) size / t * 1e9 / (1 << 20));
            }
            double avgMBs = total * (double) size / ours * 1e9 / (1 << 20);
            double gbit = total * (double) size * 8 / ours;
            double mpps = total * 1e3 / ours;
            double floorGbit = total * (double) size * 8 / floor;
            double floorMBs = total * (double) size / floor * 1e9 / (1 << 20);
            lastRatio = gbit / floorGbit;
            System.out.printf(Locale.ROOT, "%8d %12d %18.2f %21.2f %15.6f %19.2f%n", size, total, peak, avgMBs, mpps, gbit);
            floorLine = String.format(Locale.ROOT, "floor: single-thread MemorySegment.copy of %d bytes %.2f MB/sec (%.2f Gbit/s), "
                    + "ratio %.2f", size, floorMBs, floorGbit, lastRatio);
            if (all) {
                System.out.println("  " + floorLine);
            }
            lastJson = String.format(Locale.ROOT, "\"bytes\":%d,\"iterations\":%d,\"peak_mb_s\":%s,\"avg_mb_s\":%s,\"gbit_s\":%s,"
                    + "\"msgs_s\":%s,\"floor\":{\"mb_s\":%s,\"gbit_s\":%s,\"msgs_s\":%s},\"ratio\":%s", size, total,
                    JsonNumber.of(peak, 2), JsonNumber.of(avgMBs, 2), JsonNumber.of(gbit, 3), JsonNumber.of(total * 1e9 / ours, 1),
                    JsonNumber.of(floorMBs, 2), JsonNumber.of(floorGbit, 3), JsonNumber.of(total * 1e9 / floor, 1),
                    JsonNumber.of(lastRatio, 3));
            if (rowsJson.length() > 0) {
                rowsJson.append(',');
            }
            rowsJson.append('{').append(lastJson).append('}');
        }
        if (!all) {
            System.out.println(floorLine);
        }
        if (report != null) {
            report.write(false);
        }
        if (o.json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"mode\":\"%s\",\"tx_depth\":%d,%s%s}%n", name, mode, txDepth, lastJson,
                    all ? ",\"rows\":[" + rowsJson + "]" : "");
        }
    }

    /** Posts {@code n} operations keeping at most --tx-depth outstanding; returns the nanoseconds to the last completion. */
    private long stream(int size, long n) {
        long before = op == RdmaPerf.Op.SEND ? command(SYNC, 0, 0, 0) : 0;
        int flags = inline(size, op) ? SendFlags.INLINE : 0;
        int mod = Math.min(cqMod, txDepth);
        long posted = 0;
        long completed = 0;
        long t0 = System.nanoTime();
        while (completed < n) {
            while (posted < n && posted - completed < txDepth) {
                swr.wrId = posted;
                swr.sendFlags((posted + 1) % mod == 0 || posted == n - 1 ? flags | SendFlags.SIGNALED : flags);
                qp.postSend(swr);
                posted++;
            }
            if (!sendCq.poll(wc)) {
                pump();
                continue;
            }
            check(wc);
            completed = wc.wrId + 1;
            progress();
        }
        long t = System.nanoTime() - t0;
        if (op == RdmaPerf.Op.SEND) {
            long got = command(SYNC, 0, 0, 0) - before;
            if (got != n) {
                throw new IllegalStateException(name + ": the server received " + got + " messages of " + n + " sent");
            }
        }
        return t;
    }

}
