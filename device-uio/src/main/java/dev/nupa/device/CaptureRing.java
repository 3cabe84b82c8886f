package dev.nupa.device;

import static dev.nupa.device.FabricLayout.LONG;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One ring of a capture file (docs/fabric-layout.md 12.3): a single-producer single-consumer byte ring. The
 * watched node is its only producer, the observer its only consumer. A record that does not fit is not written
 * and counted in {@code dropped}: the producer never waits for the consumer. Positions are byte counts that only
 * grow; a record starts 8-byte aligned, so its header wraps only between its 8-byte words.
 */
public final class CaptureRing {
    private CaptureRing() {
    }

    // Ring header (256 bytes), then the data area of `capacity` bytes.
    static final long R_ADDRESS = 0;
    static final long R_ATTACHED = 8;
    static final long R_PRODUCER = 64;
    static final long R_DROPPED = 72;
    static final long R_RECORDED = 80;
    static final long R_CONSUMER = 128;
    static final int HEADER = 256;

    // Record header (24 bytes): u32 record bytes (header and captured bytes, before padding), u32 frame length,
    // u64 timestamp (ns since the Unix epoch), u16 source, u16 destination, u8 flags, 3 bytes zero.
    public static final int RECORD_HEADER = 24;
    public static final int FLAG_OUTBOUND = 1;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG_U = ValueLayout.JAVA_LONG_UNALIGNED;

    /** Receives one record; {@code [off, off + captured)} of {@code mem} is valid only during the call. */
    @FunctionalInterface
    public interface RecordHandler {
        void onRecord(long timestampNanos, boolean outbound, int source, int destination, int frameLength,
                      MemorySegment mem, long off, int captured);
    }

    static long align8(long v) {
        return (v + 7) & ~7L;
    }

    /**
     * Producer: writes one record of {@code min(length, snaplen)} frame bytes into the ring at {@code base}, or counts
     * it dropped when the ring lacks room.
     */
    static boolean offer(MemorySegment ring, long base, long capacity, int snaplen, long timestampNanos, boolean outbound,
                         int source, int destination, MemorySegment src, long off, int length) {
        int captured = Math.min(length, snaplen);
        long need = align8(RECORD_HEADER + (long) captured);
        long tail = ring.get(ValueLayout.JAVA_LONG, base + R_PRODUCER); // only this producer stores it
        long head = (long) LONG.getAcquire(ring, base + R_CONSUMER);
        long used = tail - head;
        if (used < 0 || used > capacity || need > capacity - used) { // a foreign consumer position counts as full
            LONG.setRelease(ring, base + R_DROPPED, ring.get(ValueLayout.JAVA_LONG, base + R_DROPPED) + 1);
            return false;
        }
        long data = base + HEADER;
        long at = tail & (capacity - 1);
        long mask = capacity - 1;
        // The header's three 8-byte words each start 8-aligned, so each lies whole before the end or after the wrap.
        ring.set(INT, data + at, RECORD_HEADER + captured);
        ring.set(INT, data + at + 4, length);
        ring.set(LONG_U, data + ((at + 8) & mask), timestampNanos);
        long w3 = data + ((at + 16) & mask);
        ring.set(ValueLayout.JAVA_SHORT_UNALIGNED, w3, (short) source);
        ring.set(ValueLayout.JAVA_SHORT_UNALIGNED, w3 + 2, (short) destination);
        ring.set(INT, w3 + 4, outbound ? FLAG_OUTBOUND : 0);
        long from = (at + RECORD_HEADER) & (capacity - 1);
        long first = Math.min(captured, capacity - from);
        MemorySegment.copy(src, off, ring, data + from, first);
        if (first < captured) {
            MemorySegment.copy(src, off + first, ring, data, captured - first);
        }
        LONG.setRelease(ring, base + R_PRODUCER, tail + need);
        LONG.setRelease(ring, base + R_RECORDED, ring.get(ValueLayout.JAVA_LONG, base + R_RECORDED) + 1);
        return true;
    }

    /**
     * Consumer: hands up to {@code limit} records to the handler, then frees their bytes with one release store.
     * {@code scratch} (at least snaplen bytes) holds a record whose bytes wrap. Returns the records handed over, or
     * -1 if the ring holds bytes no producer could have written (its producer is not to be trusted).
     */
    static int poll(MemorySegment ring, long base, long capacity, int snaplen, MemorySegment scratch, RecordHandler handler,
                    int limit) {
        long head = ring.get(ValueLayout.JAVA_LONG, base + R_CONSUMER); // only this consumer stores it
        long tail = (long) LONG.getAcquire(ring, base + R_PRODUCER);
        if (tail - head < 0 || tail - head > capacity) {
            return -1;
        }
        long data = base + HEADER;
        int n = 0;
        while (n < limit && head != tail) {
            long at = head & (capacity - 1);
            int bytes = ring.get(INT, data + at);
            int captured = bytes - RECORD_HEADER;
            if (captured < 0 || captured > snaplen || align8(bytes) > tail - head) {
                return -1;
            }
            int length = ring.get(INT, data + at + 4);
            long ts = ring.get(LONG_U, data + ((at + 8) & (capacity - 1)));
            long w3 = data + ((at + 16) & (capacity - 1));
            int source = ring.get(ValueLayout.JAVA_SHORT_UNALIGNED, w3) & 0xFFFF;
            int destination = ring.get(ValueLayout.JAVA_SHORT_UNALIGNED, w3 + 2) & 0xFFFF;
            boolean outbound = (ring.get(INT, w3 + 4) & FLAG_OUTBOUND) != 0;
            long from = (at + RECORD_HEADER) & (capacity - 1);
            if (from + captured <= capacity) {
                handler.onRecord(ts, outbound, source, destination, length, ring, data + from, captured);
            } else {
                long first = capacity - from;
                MemorySegment.copy(ring, data + from, scratch, 0, first);
                MemorySegment.copy(ring, data, scratch, first, captured - first);
                handler.onRecord(ts, outbound, source, destination, length, scratch, 0, captured);
            }
            head += align8(bytes);
            n++;
        }
        LONG.setRelease(ring, base + R_CONSUMER, head);
        return n;
    }

    static long dropped(MemorySegment ring, long base) {
        return (long) LONG.getAcquire(ring, base + R_DROPPED);
    }

    static long recorded(MemorySegment ring, long base) {
        return (long) LONG.getAcquire(ring, base + R_RECORDED);
    }
}
