package dev.nupa.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The cross-core bandwidth floor of `nupa perf fabric-bw`: one process writes blocks into a shared window
 * and raises each block's flag; the other waits for the flag, reads the block (every cache line, or a copy
 * out, as the ring's receiver does) and says it is done. {@value #BLOCKS} blocks in turn, so the writer
 * fills one while the reader reads another: the least any way of moving bytes between the two processes
 * costs, with no ring protocol, checks or headers. Window layout: the reader's done counter in line 0,
 * each block's flag in lines 1..{@value #BLOCKS}, then the blocks.
 */
final class FloorStream {
    static final int BLOCKS = 4;
    private static final int LINE = 64;
    private static final long DATA = (long) LINE * (BLOCKS + 1);
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private FloorStream() {
    }

    /** The window bytes blocks of {@code size} need. */
    static long windowBytes(int size) {
        return DATA + (long) BLOCKS * size;
    }

    /** Writer: blocks {@code start}..{@code start + n - 1} of {@code src}'s {@code size} bytes; returns once the last was read. */
    static void write(MemorySegment w, MemorySegment src, int size, long start, long n) {
        for (long i = start; i < start + n; i++) {
            while ((long) LONG.getAcquire(w, 0L) < i - BLOCKS + 1) {
                Thread.onSpinWait(); // the block to reuse is still being read
            }
            int b = (int) (i % BLOCKS);
            MemorySegment.copy(src, 0, w, DATA + (long) b * size, size);
            LONG.setRelease(w, (long) LINE * (b + 1), i + 1);
        }
        while ((long) LONG.getAcquire(w, 0L) < start + n) {
            Thread.onSpinWait();
        }
    }

    /** Reader: blocks {@code start}..{@code start + n - 1}, read in place (or copied into {@code sink}); returns a sum of what it read. */
    static long read(MemorySegment w, MemorySegment sink, int size, boolean copy, long start, long n) {
        long sum = 0;
        for (long i = start; i < start + n; i++) {
            int b = (int) (i % BLOCKS);
            long flag = (long) LINE * (b + 1);
            while ((long) LONG.getAcquire(w, flag) != i + 1) {
                Thread.onSpinWait();
            }
            long at = DATA + (long) b * size;
            if (copy) {
                MemorySegment.copy(w, at, sink, 0, size);
                sum += sink.get(ValueLayout.JAVA_LONG, size - 8);
            } else {
                for (long p = 0; p + 8 <= size; p += LINE) {
                    sum += w.get(ValueLayout.JAVA_LONG_UNALIGNED, at + p);
                }
            }
            LONG.setRelease(w, 0L, i + 1);
        }
        return sum;
    }
}
