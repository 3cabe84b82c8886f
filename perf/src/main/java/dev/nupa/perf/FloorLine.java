package dev.nupa.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.HdrHistogram.Histogram;

import dev.nupa.device.FabricLayout;

/**
 * The latency floor every `nupa perf` latency test measures in the same run: a counter bounced
 * between two processes through two cache lines of a fabric window with nothing in between (the
 * measure of bench/floor/shm-floor.c). One side pings, the other echoes.
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
            long t = ping(m, i);
            if (h != null) {
                h.recordValue(t);
            }
        }
        return start + n;
    }

    /**
     * One timed round trip of counter {@code i}. Each round is a method of its own, here and in every
     * latency tool: called per round, it is compiled whole (C2) after the warm-up, whatever tier the
     * caller's loop is in; a loop entered afresh each short turn may otherwise run a whole turn in the
     * profiling tier before it moves to its on-stack-replaced code (seen as a message floor 1.4-2.3x the
     * floor in half the runs, against 1.0-1.2x with rounds in methods of their own).
     */
    static long ping(MemorySegment m, long i) {
        long t0 = System.nanoTime();
        FabricLayout.LONG.setRelease(m, PING, i);
        while ((long) FabricLayout.LONG.getAcquire(m, PONG) != i) {
            Thread.onSpinWait();
        }
        return System.nanoTime() - t0;
    }

    /** Echoing side: answers counters start+1 .. start+count through the pong line. */
    static void echo(MemorySegment m, long start, long count) {
        for (long i = start + 1; i <= start + count; i++) {
            pong(m, i);
        }
    }

    private static void pong(MemorySegment m, long i) {
        while ((long) FabricLayout.LONG.getAcquire(m, PING) != i) {
            Thread.onSpinWait();
        }
        FabricLayout.LONG.setRelease(m, PONG, i);
    }

    /**
     * Pinging side of the message floor: each round trip copies {@code frame} behind the ping header
     * and publishes it with the counter, and waits for the echo's counter; the first word of the
     * echoed frame is read, as a client reads the sequence number of its reply.
     */
    static long measureMessage(MemorySegment m, MemorySegment frame, int size, long start, long n, Histogram h) {
        long want = frame.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        for (long i = start + 1; i <= start + n; i++) {
            long t = pingMessage(m, frame, size, i, want);
            if (h != null) {
                h.recordValue(t);
            }
        }
        return start + n;
    }

    /** One timed round trip of the message floor (a method of its own, as {@link #ping}). */
    private static long pingMessage(MemorySegment m, MemorySegment frame, int size, long i, long want) {
        long t0 = System.nanoTime();
        MemorySegment.copy(frame, 0, m, PING_MESSAGE + MESSAGE_HEADER, size);
        FabricLayout.LONG.setRelease(m, PING_MESSAGE, i);
        while ((long) FabricLayout.LONG.getAcquire(m, PONG_MESSAGE) != i) {
            Thread.onSpinWait();
        }
        long got = m.get(ValueLayout.JAVA_LONG_UNALIGNED, PONG_MESSAGE + MESSAGE_HEADER);
        long t = System.nanoTime() - t0;
        if (got != want) {
            throw new IllegalStateException("message floor: the echo carried " + got + " instead of " + want);
        }
        return t;
    }

    /** Echoing side of the message floor: copies each ping frame behind the pong header and publishes it. */
    static void echoMessage(MemorySegment m, int size, long start, long count) {
        for (long i = start + 1; i <= start + count; i++) {
            pongMessage(m, size, i);
        }
    }

    private static void pongMessage(MemorySegment m, int size, long i) {
        while ((long) FabricLayout.LONG.getAcquire(m, PING_MESSAGE) != i) {
            Thread.onSpinWait();
        }
        MemorySegment.copy(m, PING_MESSAGE + MESSAGE_HEADER, m, PONG_MESSAGE + MESSAGE_HEADER, size);
        FabricLayout.LONG.setRelease(m, PONG_MESSAGE, i);
    }
}
