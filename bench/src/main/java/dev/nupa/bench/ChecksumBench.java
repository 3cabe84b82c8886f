package dev.nupa.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import dev.nupa.ip.wire.Checksum;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The Internet checksum of a segment's payload in native memory, as TCP sums what it sends and receives:
 * {@link Checksum#sum} (32-bit words in one int-counted loop, which C2 vectorizes) beside the same sum
 * unrolled by hand over longs, four a step, its peer in the same run. Sizes: a 1500-MTU segment, a
 * 9000-MTU one, 64 KiB; in native memory (TCP's buffers, the rings) or a byte array (Vert.x's heap
 * buffers, summed by UDP). Score: average ns per sum.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 3, time = 1)
@State(Scope.Thread)
public class ChecksumBench {
    @Param({"1448", "8960", "65536"})
    int size;

    @Param({"native", "heap"})
    String memory;

    private MemorySegment data;

    @Setup(Level.Trial)
    public void setUp() {
        data = memory.equals("heap") ? MemorySegment.ofArray(new byte[size + 8]) : Arena.ofAuto().allocate(size + 8, 64);
        Random r = new Random(1);
        for (long i = 0; i < data.byteSize(); i++) {
            data.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
        if (unrolledOverLongs(data, 8, size) != Checksum.sum(data, 8, size)) {
            throw new IllegalStateException("the two sums disagree");
        }
    }

    @Benchmark
    public int sum() {
        return Checksum.sum(data, 8, size);
    }

    @Benchmark
    public int longsUnrolled() {
        return unrolledOverLongs(data, 8, size);
    }

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final long LOW32 = 0xFFFF_FFFFL;

    /** The peer: 32 bytes a step as four longs, each added as its two 32-bit halves, then 8 bytes a step (sizes here are multiples of 8). */
    static int unrolledOverLongs(MemorySegment seg, long offset, int length) {
        long acc = 0;
        long end = offset + length;
        long i = offset;
        for (; end - i >= 32; i += 32) {
            long a = seg.get(LONG, i);
            long b = seg.get(LONG, i + 8);
            long c = seg.get(LONG, i + 16);
            long d = seg.get(LONG, i + 24);
            acc += (a >>> 32) + (a & LOW32) + (b >>> 32) + (b & LOW32) + (c >>> 32) + (c & LOW32) + (d >>> 32) + (d & LOW32);
        }
        for (; end - i >= 8; i += 8) {
            long a = seg.get(LONG, i);
            acc += (a >>> 32) + (a & LOW32);
        }
        return Checksum.swap(Checksum.fold(acc));
    }
}
