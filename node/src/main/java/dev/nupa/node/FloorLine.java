package dev.nupa.node;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.HdrHistogram.Histogram;

import dev.nupa.device.FabricLayout;

/**
 * The latency floor every `nupa perf` latency test measures in the same run: a counter bounced
 * between two processes through two cache lines of a fabric window with nothing in between (the
 * measure of ../shared/tools/shm-floor.c). One side pings, the other echoes.
 *
 * <p>The message floor ({@link #measureMessage}) moves what a ring slot moves instead: a frame
 * behind a 16-byte header whose first word publishes it, copied in by the sender and copied out by
 * the echo, still with nothing else in between. A 64-byte frame so spans two cache lines where the
 * counter spans one; the message floor is what no ring carrying that frame can go below.
 */
final class FloorLine {
    static final long PING = 0;
    static final long PONG = 256; // a separate line, as shm-floor.c does
    /** Where the message floor's two messages lie in the 4 KiB floor window, each up to {@link #MAX_MESSAGE} bytes. */
    static final long PING_MESSAGE = 1024;
    static final long PONG_MESSAGE = 2560;
    static final int MESSAGE_HEADER = 16; // as a ring slot's (docs/fabric-layout.md)
    static final int MAX_MESSAGE = 1024 - MESSAGE_HEADER;

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

    /**
     * Pinging side of the message floor: each round trip copies {@code frame} behind the ping header
     * and publishes it with the counter, and waits for the echo's counter; the first word of the
     * echoed frame is read, as a client reads the sequence number of its reply.
     */
    static long measureMessage(MemorySegment m, MemorySegment frame, int size, long start, long n, Histogram h) {
        long want = frame.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        for (long i = start + 1; i <= start + n; i++) {
            long t0 = System.nanoTime();
            MemorySegment.copy(frame, 0, m, PING_MESSAGE + MESSAGE_HEADER, size);
            FabricLayout.LONG.setRelease(m, PING_MESSAGE, i);
            while ((long) FabricLayout.LONG.getAcquire(m, PONG_MESSAGE) != i) {
                Thread.onSpinWait();
            }
            long got = m.get(ValueLayout.JAVA_LONG_UNALIGNED, PONG_MESSAGE + MESSAGE_HEADER);
            long t1 = System.nanoTime();
            if (got != want) {
                throw new IllegalStateException("message floor: the echo carried " + got + " instead of " + want);
            }
            if (h != null) {
                h.recordValue(t1 - t0);
            }
        }
        return start + n;
    }

    /** Echoing side of the message floor: copies each ping frame behind the pong header and publishes it. */
    static void echoMessage(MemorySegment m, int size, long start, long count) {
        for (long i = start + 1; i <= start + count; i++) {
            while ((long) FabricLayout.LONG.getAcquire(m, PING_MESSAGE) != i) {
                Thread.onSpinWait();
            }
            MemorySegment.copy(m, PING_MESSAGE + MESSAGE_HEADER, m, PONG_MESSAGE + MESSAGE_HEADER, size);
            FabricLayout.LONG.setRelease(m, PONG_MESSAGE, i);
        }
    }
}
