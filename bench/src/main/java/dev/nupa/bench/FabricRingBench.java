package dev.nupa.bench;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameClaim;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.ShmFabric;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * One frame through a shm fabric ring and back out, both ends in this thread: node A sends to
 * node B, then B polls it. Run with {@code -prof gc}: gc.alloc.rate.norm is the bytes allocated
 * per operation (one frame sent and received) and should be ~0 in steady state.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@Threads(1)
@State(Scope.Thread)
public class FabricRingBench {

    static final int SMALL = 64;
    static final int LARGE = 65536;

    /** Two nodes of a fresh fabric file, created per trial and removed after it. */
    static final class Pair {
        final Path path;
        final Fabric fabric;
        final FabricNode a;
        final FabricNode b;
        final Arena arena = Arena.ofShared();
        final MemorySegment src;

        Pair(String tag, int ringSlots, int maxFrame) {
            path = Path.of("/dev/shm", "nupa-bench-" + tag + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
            FabricGeometry g = new FabricGeometry(2, 1, ringSlots, maxFrame, 1, 0L,
                    100_000_000L, 1_000_000_000L, 1_000_000_000L);
            fabric = ShmFabric.create(path, g);
            a = fabric.attach(0);
            b = fabric.attach(1);
            src = arena.allocate(maxFrame, 64);
            for (long i = 0; i < maxFrame; i += 8) {
                src.set(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
        }

        void close() throws IOException {
            try {
                b.close();
                a.close();
                fabric.close();
                arena.close();
            } finally {
                Files.deleteIfExists(path);
            }
        }
    }

    /** Small geometry for 64-byte frames: 256 slots of 2 KiB. */
    @State(Scope.Thread)
    public static class SmallFabric {
        Pair p;

        @Setup(Level.Trial)
        public void setup() {
            p = new Pair("small", 256, 2048);
        }

        @TearDown(Level.Trial)
        public void tearDown() throws IOException {
            p.close();
        }
    }

    /** Geometry for 64 KiB frames: 64 slots of 64 KiB (+ header). */
    @State(Scope.Thread)
    public static class LargeFabric {
        Pair p;

        @Setup(Level.Trial)
        public void setup() {
            p = new Pair("large", 64, LARGE);
        }

        @TearDown(Level.Trial)
        public void tearDown() throws IOException {
            p.close();
        }
    }

    /** Reads the first long of each frame in place; one instance, reused for every poll. */
    static final class FirstLong implements FrameHandler {
        long last;

        @Override
        public void onFrame(int source, MemorySegment memory, long offset, int length) {
            last = memory.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
        }
    }

    private final FirstLong handler = new FirstLong();
    private final FrameClaim claim = new FrameClaim();
    private long seq;

    private static void check(int rc) {
        if (rc != FabricDevice.OK) {
            throw new IllegalStateException("send failed: " + FabricDevice.describe(rc));
        }
    }

    private int offerPoll(Pair p, int length, Blackhole bh) {
        check(p.a.offer(p.b.address(), p.src, 0, length));
        int n = p.b.poll(handler, 16);
        bh.consume(handler.last);
        return n;
    }

    @Benchmark
    public int offerPoll64(SmallFabric s, Blackhole bh) {
        return offerPoll(s.p, SMALL, bh);
    }

    @Benchmark
    public int claimPublishPoll64(SmallFabric s, Blackhole bh) {
        Pair p = s.p;
        check(p.a.tryClaim(p.b.address(), SMALL, claim));
        MemorySegment m = claim.memory();
        long o = claim.offset();
        long v = ++seq;
        for (int i = 0; i < SMALL; i += 8) {
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, o + i, v + i);
        }
        check(claim.publish());
        int n = p.b.poll(handler, 16);
        bh.consume(handler.last);
        return n;
    }

    @Benchmark
    public int offerPoll64K(LargeFabric s, Blackhole bh) {
        return offerPoll(s.p, LARGE, bh);
    }
}
