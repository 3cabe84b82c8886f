package dev.nupa.node;

import java.lang.foreign.MemorySegment;

import org.HdrHistogram.Histogram;

import dev.nupa.device.FabricLayout;

/**
 * The latency floor every `nupa perf` latency test measures in the same run: a counter bounced
 * between two processes through two cache lines of a fabric window with nothing in between (the
 * measure of ../shared/tools/shm-floor.c). One side pings, the other echoes.
 */
final class FloorLine {
    static final long PING = 0;
    static final long PONG = 256; // a separate line, as shm-floor.c does

    private FloorLine() {
    }

    /** Pinging side: bounces counters start+1 .. start+n, recording each round trip in {@code h} (if not null). */
    static long measure(MemorySegment m, long start, long n, Histogram h) {
        for (long i = start + 1; i <= start + n; i++) {
            long t0 = System.nanoTime();
            FabricLayout.LONG.setRelease(m, PING, i);
            while ((long) FabricLayout.LONG.getAcquire(m, PONG) != i) {
                Thread.onSpinWait();
            }
            long t1 = System.nanoTime();
            if (h != null) {
                h.recordValue(t1 - t0);
            }
        }
        return start + n;
    }

    /** Echoing side: answers counters start+1 .. start+count through the pong line. */
    static void echo(MemorySegment m, long start, long count) {
        for (long i = start + 1; i <= start + count; i++) {
            while ((long) FabricLayout.LONG.getAcquire(m, PING) != i) {
                Thread.onSpinWait();
            }
            FabricLayout.LONG.setRelease(m, PONG, i);
        }
    }
}
