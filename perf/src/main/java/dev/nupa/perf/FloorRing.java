package dev.nupa.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.HdrHistogram.Histogram;

import dev.nupa.device.FabricLayout;

/**
 * The ring floor of `nupa perf fabric-lat`: what a ring with the fabric ring's slot layout costs with
 * nothing else, between the same two processes. Two rings (ping and pong) of {@link #SLOTS} slots at
 * the fabric's slot stride lie in the floor window after the {@link FloorLine} lines and messages. A
 * frame is copied behind a slot's 16-byte header, its length stored, and the slot published by a release
 * store of its position-stamped ctrl word (docs/fabric-layout.md, "Slots"); the receiver spins on the
 * ctrl word of the slot at its head, reads the length, copies that many bytes (the echo into the pong
 * ring) and stores its head. One producer per ring and no claim CAS, stall recovery, liveness, doorbell
 * or counters: none of what a ring shared by many producers on a fabric of failing processes needs. A
 * reference for the ratio, not a ring.
 */
final class FloorRing {
    /** Slots per ring: enough to rotate through, as a ring does. */
    static final int SLOTS = 16;
    /** The rings start after the lines and messages of {@link FloorLine}. */
    static final long BASE = 4096;

    private FloorRing() {
    }

    /** Bytes of one ring at slot stride {@code slotBytes}: a header with the head, then the slots. */
    static long ringBytes(int slotBytes) {
        return FabricLayout.RING_HEADER + (long) SLOTS * slotBytes;
    }

    /** Bytes of a floor window with room for the two rings. */
    static long windowBytes(int slotBytes) {
        return BASE + 2 * ringBytes(slotBytes);
    }

    private static long slot(long ring, int slotBytes, long position) {
        return ring + FabricLayout.RING_HEADER + (position & (SLOTS - 1)) * slotBytes;
    }

    /**
     * Pinging side: frames at positions start .. start+n-1, each round trip timed into {@code h} (if not
     * null); the frame's first long carries the position, and the echo must bring it back.
     */
    static long measure(MemorySegment m, int slotBytes, MemorySegment frame, int size, long start, long n, Histogram h) {
        long ping = BASE;
        long pong = BASE + ringBytes(slotBytes);
        for (long p = start; p < start + n; p++) {
            frame.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, p);
            long t = roundTrip(m, ping, pong, slotBytes, frame, size, p);
            if (h != null) {
                h.recordValue(t);
            }
        }
        return start + n;
    }

    /** One timed round trip (a method of its own, see {@link FloorLine#ping}). */
    private static long roundTrip(MemorySegment m, long ping, long pong, int slotBytes, MemorySegment frame, int size, long p) {
        long t0 = System.nanoTime();
        publish(m, slot(ping, slotBytes, p), frame, 0, size, p);
        long s = slot(pong, slotBytes, p);
        await(m, s, p);
        long got = m.get(ValueLayout.JAVA_LONG_UNALIGNED, s + FabricLayout.SLOT_HEADER);
        FabricLayout.LONG.setRelease(m, pong + FabricLayout.R_HEAD, p + 1);
        long t = System.nanoTime() - t0;
        if (got != p) {
            throw new IllegalStateException("ring floor: the echo carried " + got + " instead of " + p);
        }
        return t;
    }

    /** Echoing side: echoes positions start .. start+n-1 from the ping ring into the pong ring. */
    static void echo(MemorySegment m, int slotBytes, long start, long n) {
        long ping = BASE;
        long pong = BASE + ringBytes(slotBytes);
        int capacity = slotBytes - FabricLayout.SLOT_HEADER;
        for (long p = start; p < start + n; p++) {
            echoOne(m, ping, pong, slotBytes, capacity, p);
        }
    }

    private static void echoOne(MemorySegment m, long ping, long pong, int slotBytes, int capacity, long p) {
        long s = slot(ping, slotBytes, p);
        await(m, s, p);
        long length = m.get(ValueLayout.JAVA_LONG_UNALIGNED, s + FabricLayout.S_LENGTH);
        if (length < 0 || length > capacity) {
            throw new IllegalStateException("ring floor: a frame of " + length + " bytes in a slot of " + capacity);
        }
        publish(m, slot(pong, slotBytes, p), m, s + FabricLayout.SLOT_HEADER, (int) length, p);
        FabricLayout.LONG.setRelease(m, ping + FabricLayout.R_HEAD, p + 1);
    }

    private static void publish(MemorySegment m, long slot, MemorySegment src, long srcOffset, int size, long p) {
        MemorySegment.copy(src, srcOffset, m, slot + FabricLayout.SLOT_HEADER, size);
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + FabricLayout.S_LENGTH, size);
        FabricLayout.LONG.setRelease(m, slot + FabricLayout.S_CTRL, (p + 1) << 2);
    }

    private static void await(MemorySegment m, long slot, long p) {
        long want = (p + 1) << 2;
        while ((long) FabricLayout.LONG.getAcquire(m, slot + FabricLayout.S_CTRL) != want) {
            Thread.onSpinWait();
        }
    }
}
