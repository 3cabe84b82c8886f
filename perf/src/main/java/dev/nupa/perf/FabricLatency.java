package dev.nupa.perf;

import dev.nupa.device.FabricException;
import dev.nupa.device.FabricLayout;
import dev.nupa.device.FrameHandler;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf fabric-lat`: ping-pong of frames through two rings between two processes, half round
 * trip reported as perftest does, beside the floor measured in the same run by the same processes:
 * a counter bounced through one cache line of a fabric window with nothing in between; and, for
 * frames up to {@link FloorLine#MAX_MESSAGE} bytes, the message floor: the same frame behind a
 * slot's 16-byte header, copied in and out with nothing in between (two lines for 64 bytes); and the
 * ring floor ({@link FloorRing}): a ring of the same slot layout with one producer and none of the checks
 * of a shared ring. The floors and frames alternate in short {@link Turns}, and the ratios are medians
 * over the turns.
 */
@Command(name = "fabric-lat", mixinStandardHelpOptions = true,
        description = "Ring one-way latency between two processes (half round trip), with the cache-line floor and the ratio.")
final class FabricLatency implements Callable<Integer> {
    @Mixin
    PerfOptions o;

    @Option(names = "--wait", paramLabel = "spin|interrupt", defaultValue = "spin",
            description = "How each side waits for a frame: busy-poll, or sleep on the armed interrupt (measures wake-up).")
    String wait;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "200000", description = "Unmeasured iterations first (default: ${DEFAULT-VALUE}).")
    long warmup;

    private long expected;
    private PerfTrace trace;
    private boolean received;

    @Override
    public Integer call() throws Exception {
        o.validate(8, 16 << 20);
        if (!wait.equals("spin") && !wait.equals("interrupt")) {
            throw new IllegalArgumentException("--wait must be spin or interrupt, not " + wait);
        }
        int size = o.size != null ? o.size : 64;
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client(size, o.iterations != null ? o.iterations : defaultIterations());
        }
        return PerfRunner.runBoth(o, "fabric-lat", o.freshGeometry(size, 256),
                List.of("--wait", wait, "--warmup", Long.toString(warmup)));
    }

    private long defaultIterations() {
        return wait.equals("spin") ? 1_000_000 : 20_000;
    }

    private int server() {
        try (PerfSession s = new PerfSession(o, true, wait.equals("interrupt"))) {
            int slotBytes = FabricLayout.slotBytes(s.node.geometry().maxFrame());
            try {
                s.exportFloorWindow(FloorRing.windowBytes(slotBytes));
            } catch (FabricException e) {
                // A fabric of large slots or little window space: the lines only; the client then skips the ring floor.
                System.err.println("nupa: no room for the ring floor (" + e.getMessage() + "); measuring without it");
                s.exportFloorWindow();
            }
            System.out.println(PerfRunner.READY);
            System.out.flush();
            boolean[] done = {false};
            FrameHandler echo = (src, mem, off, len) -> {
                long seq = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off);
                if (seq >= 0) {
                    s.send(mem, off, len);
                } else if (seq == PerfSession.FLOOR) {
                    s.floorEcho(mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8), mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16));
                } else if (seq == PerfSession.MESSAGE_FLOOR) {
                    FloorLine.echoMessage(s.floorWindow.memory(), (int) mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 24),
                            mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8), mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16));
                } else if (seq == PerfSession.RING_FLOOR) {
                    FloorRing.echo(s.floorWindow.memory(), slotBytes, mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8),
                            mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16));
                } else if (seq == PerfSession.BYE) {
                    done[0] = true;
                }
            };
            while (!done[0]) {
                s.pollOnce(echo, 16);
            }
        }
        return 0;
    }

    private int client(int size, long iterations) {
        try (PerfSession s = new PerfSession(o, false, wait.equals("interrupt"))) {
            s.awaitServer(30_000, size);
            MemorySegment frame = Arena.ofAuto().allocate(size, 64);
            boolean withMessage = size <= FloorLine.MAX_MESSAGE;
            int slotBytes = FabricLayout.slotBytes(s.node.geometry().maxFrame());
            // A server started on a fabric without room for the rings exported the lines only.
            boolean withRing = withMessage && s.floorWindow.memory().byteSize() >= FloorRing.windowBytes(slotBytes);
            long warm = Math.min(warmup, Math.max(1000, iterations));
            long counter = 0;
            long messages = 0;
            long ringFrames = 0;
            counter = floor(s, counter, warm, null);
            if (withMessage) {
                messages = messageFloor(s, frame, size, messages, warm, null);
            }
            if (withRing) {
                ringFrames = ringFloor(s, slotBytes, frame, size, ringFrames, warm, null);
            }
            frames(s, frame, size, warm, null);
            PerfReport report = o.report("fabric-lat");
            trace = o.tracing("fabric frame round trip").attach(report);
            Turns turns = new Turns(4, iterations) // 0 ours, 1 floor, 2 message floor, 3 ring floor
                    .observe(report, o.progress("fabric-lat", iterations), "ours", "floor", "message-floor", "ring-floor");
            for (int t = 0; t < turns.count(); t++) {
                long n = turns.length(t);
                counter = floor(s, counter, n, turns.turn(1));
                if (withMessage) {
                    messages = messageFloor(s, frame, size, messages, n, turns.turn(2));
                }
                if (withRing) {
                    ringFrames = ringFloor(s, slotBytes, frame, size, ringFrames, n, turns.turn(3));
                }
                frames(s, frame, size, n, turns.turn(0));
                turns.endTurn();
            }
            s.sendControl(PerfSession.BYE, 0, 0);
            trace.export();
            LatencyStats a = LatencyStats.ofRoundTrips(turns.pooled(0));
            LatencyStats f = LatencyStats.ofRoundTrips(turns.pooled(1));
            double ratio = turns.ratio(0, 1);
            double pooledRatio = turns.pooledRatio(0, 1);
            System.out.println("fabric-lat: ring one-way latency, " + size + "-byte frames, wait=" + wait
                    + ", fabric " + s.node.fabric().name());
            System.out.println(LatencyStats.header());
            System.out.println(a.row(size));
            System.out.println("floor: one cache line handed off between the same two processes");
            System.out.println(f.row(8));
            System.out.printf(java.util.Locale.ROOT, "ratio (p50 ours / p50 floor, median over %d turns): %.2f; pooled p50 ratio: %.2f%n",
                    turns.count(), ratio, pooledRatio);
            String messageJson = "";
            if (withMessage) {
                LatencyStats mf = LatencyStats.ofRoundTrips(turns.pooled(2));
                System.out.println("message floor: the frame behind a 16-byte header, copied in and out as a ring slot is, nothing else");
                System.out.println(mf.row(size));
                System.out.printf(java.util.Locale.ROOT, "ratio (p50 message floor / p50 floor): %.2f; (p50 ours / p50 message floor): %.2f"
                        + " (medians over turns)%n", turns.ratio(2, 1), turns.ratio(0, 2));
                messageJson = String.format(java.util.Locale.ROOT, ",\"message_floor\":{\"bytes\":%d,%s},\"message_ratio\":%s",
                        size, mf.json(), JsonNumber.of(turns.ratio(0, 2), 3));
            }
            if (withRing) {
                LatencyStats rf = LatencyStats.ofRoundTrips(turns.pooled(3));
                System.out.println("ring floor: a ring of " + FloorRing.SLOTS + " such slots (" + slotBytes + " bytes apart), one producer,"
                        + " release stores, no claim, checks or counters");
                System.out.println(rf.row(size));
                System.out.printf(java.util.Locale.ROOT, "ratio (p50 ring floor / p50 floor): %.2f; (p50 ours / p50 ring floor): %.2f"
                        + " (medians over turns)%n", turns.ratio(3, 1), turns.ratio(0, 3));
                messageJson += String.format(java.util.Locale.ROOT, ",\"ring_floor\":{\"bytes\":%d,%s},\"ring_floor_ratio\":%s,"
                        + "\"ring_ratio\":%s", size, rf.json(), JsonNumber.of(turns.ratio(3, 1), 3), JsonNumber.of(turns.ratio(0, 3), 3));
            }
            if (o.json) {
                System.out.printf(java.util.Locale.ROOT, "{\"test\":\"fabric-lat\",\"bytes\":%d,\"wait\":\"%s\",%s,"
                        + "\"floor\":{\"bytes\":8,%s},\"ratio\":%s,\"pooled_ratio\":%s,\"turns\":%d%s}%n",
                        size, wait, a.json(), f.json(), JsonNumber.of(ratio, 3), JsonNumber.of(pooledRatio, 3), turns.count(), messageJson);
            }
        }
        return 0;
    }

    private long floor(PerfSession s, long start, long n, Histogram h) {
        s.sendControl(PerfSession.FLOOR, start, n);
        return FloorLine.measure(s.floorWindow.memory(), start, n, h);
    }

    private long messageFloor(PerfSession s, MemorySegment frame, int size, long start, long n, Histogram h) {
        s.sendControl(PerfSession.MESSAGE_FLOOR, start, n, size);
        return FloorLine.measureMessage(s.floorWindow.memory(), frame, size, start, n, h);
    }

    private long ringFloor(PerfSession s, int slotBytes, MemorySegment frame, int size, long start, long n, Histogram h) {
        s.sendControl(PerfSession.RING_FLOOR, start, n);
        return FloorRing.measure(s.floorWindow.memory(), slotBytes, frame, size, start, n, h);
    }

    private final FrameHandler reply = (src, mem, off, len) -> {
        if (mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
            received = true;
        }
    };

    private void frames(PerfSession s, MemorySegment frame, int size, long n, Histogram h) {
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = frame(s, frame, size, i);
            if (traced) {
                trace.end();
            }
            if (h != null) {
                h.recordValue(t);
            }
        }
    }

    /** One timed round trip (a method of its own; see {@link FloorLine#ping}). */
    private long frame(PerfSession s, MemorySegment frame, int size, long i) {
        frame.set(ValueLayout.JAVA_LONG, 0, i);
        expected = i;
        received = false;
        long t0 = System.nanoTime();
        s.send(frame, 0, size);
        while (!received) {
            s.pollOnce(reply, 16);
        }
        return System.nanoTime() - t0;
    }
}
