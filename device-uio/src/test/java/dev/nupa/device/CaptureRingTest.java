package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The capture file's single-producer single-consumer ring (docs/fabric-layout.md 12.3). */
class CaptureRingTest {
    static final long CAPACITY = 4096;
    final MemorySegment ring = Arena.ofAuto().allocate(CaptureRing.HEADER + CAPACITY, 64);
    final MemorySegment scratch = Arena.ofAuto().allocate(CAPACITY);

    record Rec(long ts, boolean out, int src, int dst, int length, byte[] bytes) {
    }

    static byte[] frame(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed * 31 + i);
        }
        return b;
    }

    boolean offer(byte[] b, int snaplen, long ts) {
        return CaptureRing.offer(ring, 0, CAPACITY, snaplen, ts, (ts & 1) == 1, 3, 7, MemorySegment.ofArray(b), 0, b.length);
    }

    List<Rec> drain(int snaplen) {
        List<Rec> got = new ArrayList<>();
        int n = CaptureRing.poll(ring, 0, CAPACITY, snaplen, scratch, (ts, out, s, d, len, mem, off, captured) ->
                got.add(new Rec(ts, out, s, d, len, mem.asSlice(off, captured).toArray(ValueLayout.JAVA_BYTE))), 1_000);
        assertEquals(got.size(), n);
        return got;
    }

    @Test
    void recordsComeOutWholeAndInOrderAcrossManyWraps() {
        int snaplen = 1500;
        long ts = 0;
        int wrappedRecords = 0;
        for (int round = 0; round < 200; round++) {
            List<byte[]> sent = new ArrayList<>();
            for (int k = 0; k < 3; k++) {
                byte[] b = frame(1 + (round * 97 + k * 331) % 1400, round * 3 + k);
                long before = ring.get(ValueLayout.JAVA_LONG, CaptureRing.R_PRODUCER) & (CAPACITY - 1);
                assertTrue(offer(b, snaplen, ++ts));
                if (before + CaptureRing.RECORD_HEADER + b.length > CAPACITY) {
                    wrappedRecords++;
                }
                sent.add(b);
            }
            List<Rec> got = drain(snaplen);
            assertEquals(3, got.size());
            for (int k = 0; k < 3; k++) {
                assertArrayEquals(sent.get(k), got.get(k).bytes(), "round " + round + " record " + k);
                assertEquals(sent.get(k).length, got.get(k).length());
                assertEquals(3, got.get(k).src());
                assertEquals(7, got.get(k).dst());
            }
        }
        assertTrue(wrappedRecords > 10, "the test must wrap records, did " + wrappedRecords);
        assertEquals(600, CaptureRing.recorded(ring, 0));
        assertEquals(0, CaptureRing.dropped(ring, 0));
    }

    @Test
    void aFullRingCountsDropsAndNeverOverwrites() {
        int snaplen = 1000;
        int accepted = 0;
        int refused = 0;
        for (int i = 0; i < 10; i++) { // 10 x 1024 bytes into 4096: 4 fit
            if (offer(frame(1000, i), snaplen, i)) {
                accepted++;
            } else {
                refused++;
            }
        }
        assertEquals(4, accepted);
        assertEquals(6, refused);
        assertEquals(4, CaptureRing.recorded(ring, 0));
        assertEquals(6, CaptureRing.dropped(ring, 0));
        List<Rec> got = drain(snaplen);
        assertEquals(4, got.size());
        for (int i = 0; i < 4; i++) {
            assertArrayEquals(frame(1000, i), got.get(i).bytes()); // the first four, untouched by the refused ones
        }
        assertTrue(offer(frame(1000, 42), snaplen, 42), "room again once the consumer took them");
    }

    @Test
    void framesLongerThanSnaplenAreCutButKeepTheirLength() {
        assertTrue(offer(frame(3000, 1), 100, 1));
        List<Rec> got = drain(100);
        assertEquals(1, got.size());
        assertEquals(3000, got.get(0).length());
        assertArrayEquals(java.util.Arrays.copyOf(frame(3000, 1), 100), got.get(0).bytes());
    }

    @Test
    void aForeignProducerPositionIsRefusedNotFollowed() {
        ring.set(ValueLayout.JAVA_LONG, CaptureRing.R_PRODUCER, CAPACITY * 10);
        assertEquals(-1, CaptureRing.poll(ring, 0, CAPACITY, 100, scratch, (a, b, c, d, e, f, g, h) -> { }, 10));
        ring.set(ValueLayout.JAVA_LONG, CaptureRing.R_PRODUCER, 8);
        ring.set(ValueLayout.JAVA_INT, CaptureRing.HEADER, 5000); // a record longer than the snaplen
        assertEquals(-1, CaptureRing.poll(ring, 0, CAPACITY, 100, scratch, (a, b, c, d, e, f, g, h) -> { }, 10));
    }
}
