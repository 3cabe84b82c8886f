package dev.nupa.perf;

import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FrameHandler;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf fabric-bw`: one process streams frames into another's ring; the receiver reads every
 * cache line of each frame in place (or copies it out), so the data really crosses. Two floors, measured
 * in turns with it: single-thread MemorySegment.copy of the same size (in cache, one core), and the
 * cross-core floor of {@link FloorStream} (the same bytes moved between the same two processes with
 * nothing but a flag per block).
 */
@Command(name = "fabric-bw", mixinStandardHelpOptions = true,
        description = "Ring throughput between two processes, with single-thread MemorySegment.copy as the floor and the ratio.")
final class FabricBandwidth implements Callable<Integer> {
    private static final int ROUNDS = 3;

    @Mixin
    PerfOptions o;

    @Option(names = "--receive", paramLabel = "read|copy", defaultValue = "read",
            description = "What the receiver does with each frame: read every cache line in place, or copy it out (default: ${DEFAULT-VALUE}).")
    String receive;

    /** Control: run {@code a} blocks of the cross-core floor from block {@code b} (FloorStream). */
    private static final long STREAM_FLOOR = -7;

    private long count;
    private long sum;
    private boolean acked;
    private long ackCount;

    @Override
    public Integer call() throws Exception {
        o.validate(64, 16 << 20);
        if (!receive.equals("read") && !receive.equals("copy")) {
            throw new IllegalArgumentException("--receive must be read or copy, not " + receive);
        }
        int size = o.size != null ? o.size : 65536;
        o.tracesNothing("fabric-bw");
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client(size, o.iterations != null ? o.iterations : Math.max(1000, (8L << 30) / size));
        }
        FabricGeometry g = o.freshGeometry(size, 64);
        long window = (FloorStream.windowBytes(g.maxFrame()) + (1 << 20) - 1) & -(1L << 20); // the cross-core floor's blocks
        return PerfRunner.runBoth(o, "fabric-bw", g.withWindows(16, Math.max(window, 1L << 20)), List.of("--receive", receive));
    }

    private int server() {
        try (PerfSession s = new PerfSession(o, true, false)) {
            s.exportFloorWindow(FloorStream.windowBytes(s.node.maxFrame()));
            MemorySegment sink = Arena.ofAuto().allocate(s.node.maxFrame(), 64);
            boolean copy = receive.equals("copy");
            System.out.println(PerfRunner.READY);
            System.out.flush();
            boolean[] done = {false};
            FrameHandler h = (src, mem, off, len) -> {
                long seq = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
                if (seq >= 0) {
                    if (copy) {
                        MemorySegment.copy(mem, off, sink, 0, len);
                        sum += sink.get(ValueLayout.JAVA_LONG, len - 8);
                    } else {
                        long x = 0;
                        for (long p = 0; p + 8 <= len; p += 64) {
                            x += mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + p);
                        }
                        sum += x;
                    }
                    count++;
                } else if (seq == PerfSession.END) {
                    s.sendControl(PerfSession.ACK, count, sum);
                    count = 0;
                } else if (seq == PerfSession.BYE) {
                    done[0] = true;
                } else if (seq == STREAM_FLOOR) {
                    long blocks = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8);
                    long first = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16);
                    int blockSize = (int) mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 24);
                    sum += FloorStream.read(s.floorWindow.memory(), sink, blockSize, copy, first, blocks);
                }
            };
            while (!done[0]) {
                s.pollOnce(h, 64);
            }
        }
        return 0;
    }

    private final FrameHandler ack = (src, mem, off, len) -> {
        if (mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == PerfSession.ACK) {
            ackCount = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8);
            acked = true;
        }
    };

    private long stream(PerfSession s, MemorySegment frame, int size, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            frame.set(ValueLayout.JAVA_LONG, 0, i);
            s.send(frame, 0, size);
        }
        acked = false;
        s.sendControl(PerfSession.END, n, 0);
        while (!acked) {
            s.pollOnce(ack, 16);
        }
        long t = System.nanoTime() - t0;
        if (ackCount != n) {
            throw new IllegalStateException("receiver counted " + ackCount + " frames of " + n + " sent");
        }
        return t;
    }

    /** {@code n} blocks of the cross-core floor, from block {@code first}; returns the time they took. */
    private static long crossCore(PerfSession s, MemorySegment frame, int size, long first, long n) {
        long t0 = System.nanoTime();
        s.sendControl(STREAM_FLOOR, n, first, size);
        FloorStream.write(s.floorWindow.memory(), frame, size, first, n);
        return System.nanoTime() - t0;
    }

    static long copies(MemorySegment a, MemorySegment b, int size, long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            a.set(ValueLayout.JAVA_LONG, 0, i);
            MemorySegment.copy(a, 0, b, 0, size);
        }
        return System.nanoTime() - t0;
    }

    private int client(int size, long n) {
        try (PerfSession s = new PerfSession(o, false, false)) {
            s.awaitServer(30_000, size);
            MemorySegment frame = Arena.ofAuto().allocate(size, 64);
            MemorySegment copyDst = Arena.ofAuto().allocate(size, 64);
            frame.fill((byte) 0x5A);
            long warm = Math.max(100, n / 10);
            copies(frame, copyDst, size, warm);
            stream(s, frame, size, warm);
            long blocks = 0;
            crossCore(s, frame, size, blocks, warm);
            blocks += warm;
            // In turns, as the latency floors: each round times the in-cache copy, the cross-core floor and the
            // ring over the same number of frames, so a move of the vCPUs weighs on all three alike.
            long ours = 0;
            long floor = 0;
            long cross = 0;
            long per = Math.max(1, n / ROUNDS);
            long total = 0;
            PerfReport report = o.report("fabric-bw");
            if (report != null) {
                report.rates("Gbit/s", "ours", "copy-floor", "cross-core-floor");
            }
            for (int r = 0; r < ROUNDS; r++) {
                long k = r == ROUNDS - 1 ? n - per * (ROUNDS - 1) : per;
                long f = copies(frame, copyDst, size, k);
                long c = crossCore(s, frame, size, blocks, k);
                blocks += k;
                long t = stream(s, frame, size, k);
                floor += f;
                cross += c;
                ours += t;
                total += k;
                if (report != null) {
                    double bits = k * (double) size * 8;
                    report.rate(0, bits / t);
                    report.rate(1, bits / f);
                    report.rate(2, bits / c);
                }
            }
            s.sendControl(PerfSession.BYE, 0, 0);
            if (report != null) {
                report.write(false);
            }
            double oursGbit = total * (double) size * 8 / ours;
            double floorGbit = total * (double) size * 8 / floor;
            double ratio = oursGbit / floorGbit;
            double crossGbit = total * (double) size * 8 / cross;
            double crossRatio = oursGbit / crossGbit;
            System.out.println("fabric-bw: ring throughput, " + size + "-byte frames, receiver " + receive
                    + "s in place" + (receive.equals("copy") ? " (copies out)" : "") + ", fabric " + s.node.fabric().name());
            System.out.printf(Locale.ROOT, "%8s %12s %12s %14s%n", "#bytes", "#iterations", "BW[Gbit/s]", "MsgRate[Mpps]");
            System.out.printf(Locale.ROOT, "%8d %12d %12.2f %14.4f%n", size, total, oursGbit, total * 1e3 / ours);
            System.out.println("floor: single-thread MemorySegment.copy of the same size");
            System.out.printf(Locale.ROOT, "%8d %12d %12.2f %14.4f%n", size, total, floorGbit, total * 1e3 / floor);
            System.out.println("cross-core floor: one process writes " + FloorStream.BLOCKS + " blocks in turn into a shared"
                    + " window, the other reads each after its flag, nothing else");
            System.out.printf(Locale.ROOT, "%8d %12d %12.2f %14.4f%n", size, total, crossGbit, total * 1e3 / cross);
            System.out.printf(Locale.ROOT, "ratio (ours / floor): %.2f; ours / cross-core floor: %.2f%n", ratio, crossRatio);
            if (o.json) {
                System.out.printf(Locale.ROOT, "{\"test\":\"fabric-bw\",\"bytes\":%d,\"iterations\":%d,\"receive\":\"%s\","
                                + "\"gbit_s\":%s,\"msgs_s\":%s,\"floor\":{\"gbit_s\":%s,\"msgs_s\":%s},\"ratio\":%s,"
                                + "\"cross_floor\":{\"gbit_s\":%s},\"cross_ratio\":%s}%n",
                        size, total, receive, JsonNumber.of(oursGbit, 3), JsonNumber.of(total * 1e9 / ours, 1), JsonNumber.of(floorGbit, 3),
                        JsonNumber.of(total * 1e9 / floor, 1), JsonNumber.of(ratio, 3), JsonNumber.of(crossGbit, 3),
                        JsonNumber.of(crossRatio, 3));
            }
        }
        return 0;
    }
}
