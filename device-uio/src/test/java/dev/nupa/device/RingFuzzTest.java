package dev.nupa.device;

import static dev.nupa.device.FabricLayout.RING_HEADER;
import static dev.nupa.device.FabricLayout.SLOT_HEADER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Fuzzes the consumer side of a {@link Ring} (docs/fabric-layout.md section 6) against what any process
 * mapping the fabric can write into it: a producer publishes real frames, then the input overwrites any
 * bytes of the ring's header and slots, and the consumer polls and checks for stalls. Whatever the bytes,
 * nothing is thrown, a poll hands over at most what was asked, every frame handed over lies inside its
 * slot with a length in 0..max_frame, and a frame whose slot bytes were left alone arrives intact. And the
 * ring recovers: a frame a producer publishes afterwards arrives within a bounded number of polls and idle
 * checks (the consumer resynchronises the head and tail and skips slots no producer wrote), so garbage
 * cannot stop a node receiving. docs/fuzzing.md says how to run it.
 *
 * <p>Input (a {@link FuzzedDataProvider}): the frames to publish (count, then each one's length and a
 * fill byte), then writes (offset into the ring, bytes) until the input ends.
 */
class RingFuzzTest {
    private static final int SLOTS = 8;
    private static final int MAX_FRAME = 200;
    private static final int SLOT_BYTES = FabricLayout.slotBytes(MAX_FRAME);
    private static final long RING_BYTES = FabricLayout.ringBytes(SLOTS, MAX_FRAME);
    /** Where the consumer's counters live: a node entry after the ring. */
    private static final long COUNTERS = RING_BYTES;

    private static final int MARK_SOURCE = 3;
    private static final int MARK_LENGTH = 7;

    /**
     * Publishes a marked frame from a fresh producer and polls until it arrives; a producer refused (ring
     * full, or its publish late) tries again after the consumer's idle checks with time moved past the
     * stall timeout. Returns whether the mark arrived within a few rounds per slot.
     */
    private static boolean recovers(MemorySegment mem, Ring consumer) {
        Ring producer = new Ring(mem, 0, SLOTS, SLOT_BYTES, MAX_FRAME, 1_000_000_000L, -1);
        boolean[] arrived = {false};
        FrameHandler mark = (source, m, offset, length) -> {
            if (source == MARK_SOURCE && length == MARK_LENGTH && m.get(ValueLayout.JAVA_BYTE, offset) == 0x5A) {
                arrived[0] = true;
            }
        };
        long now = System.nanoTime();
        boolean pending = false;
        for (int round = 0; round < 4 * SLOTS && !arrived[0]; round++) {
            if (!pending) {
                long p = producer.claim();
                if (p >= 0) {
                    mem.asSlice(producer.slotOffset(p) + SLOT_HEADER, MARK_LENGTH).fill((byte) 0x5A);
                    pending = producer.publish(p, MARK_LENGTH, MARK_SOURCE, 1, 0);
                }
            }
            for (int i = 0; i < SLOTS && !arrived[0]; i++) {
                consumer.poll(mark, SLOTS);
            }
            if (!arrived[0]) {
                now += 2_000_000_000L; // an idle check, then another past the stall timeout
                consumer.checkStall(now);
                now += 2_000_000_000L;
                consumer.checkStall(now);
            }
        }
        return arrived[0];
    }

    @FuzzTest
    void ring(FuzzedDataProvider data) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mem = arena.allocate(RING_BYTES + FabricLayout.NODE_BYTES, 64);
            Ring producer = new Ring(mem, 0, SLOTS, SLOT_BYTES, MAX_FRAME, 1_000_000_000L, -1);
            int frames = data.consumeInt(0, SLOTS);
            int[] lengths = new int[frames];
            byte[] fills = new byte[frames];
            for (int f = 0; f < frames; f++) {
                long p = producer.claim();
                lengths[f] = data.consumeInt(0, MAX_FRAME);
                fills[f] = data.consumeByte();
                long slot = producer.slotOffset(p);
                mem.asSlice(slot + SLOT_HEADER, lengths[f]).fill(fills[f]);
                assertTrue(producer.publish(p, lengths[f], 1, 1, 0));
            }
            boolean[] touched = new boolean[SLOTS];
            boolean headerTouched = false;
            while (data.remainingBytes() > 2) {
                int at = data.consumeInt(0, (int) RING_BYTES - 1);
                byte[] bytes = data.consumeBytes(Math.min(16, (int) RING_BYTES - at));
                MemorySegment.copy(bytes, 0, mem, ValueLayout.JAVA_BYTE, at, bytes.length);
                for (long b = at; b < at + bytes.length; b++) {
                    if (b < RING_HEADER) {
                        headerTouched = true;
                    } else {
                        touched[(int) ((b - RING_HEADER) / SLOT_BYTES)] = true;
                    }
                }
            }
            boolean headerWritten = headerTouched;
            Ring consumer = new Ring(mem, 0, SLOTS, SLOT_BYTES, MAX_FRAME, 1_000_000_000L, COUNTERS);
            int[] got = {0};
            FrameHandler check = (source, m, offset, length) -> {
                assertTrue(length >= 0 && length <= MAX_FRAME, "length " + length);
                long slot = offset - SLOT_HEADER;
                assertTrue(slot >= RING_HEADER && slot < RING_BYTES && (slot - RING_HEADER) % SLOT_BYTES == 0, "slot at " + slot);
                int index = (int) ((slot - RING_HEADER) / SLOT_BYTES);
                if (!headerWritten && !touched[index] && got[0] < frames && index == got[0]) {
                    assertEquals(lengths[index], length, "an untouched frame's length");
                    for (int i = 0; i < length; i++) {
                        assertEquals(fills[index], m.get(ValueLayout.JAVA_BYTE, offset + i), "an untouched frame's byte " + i);
                    }
                }
                got[0]++;
            };
            for (int round = 0; round < 3; round++) {
                int n = consumer.poll(check, 4);
                assertTrue(n >= 0 && n <= 4, "poll handed over " + n);
                consumer.checkStall(System.nanoTime() + 2_000_000_000L); // past the stall timeout: skips a pending claim
            }
            boolean untouched = !headerTouched;
            for (boolean t : touched) {
                untouched &= !t; // a write into a free slot may publish a frame of its own, as any writer can
            }
            if (untouched) {
                assertEquals(frames, got[0], "every published frame arrives when nothing was overwritten");
            }
            assertTrue(recovers(mem, consumer), "a frame published after the garbage arrives");
        }
    }
}
