package dev.nupa.tests;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * The frames the multi-process tests send, shared by the child processes and the tests:
 *
 * <pre>
 * [u64 seq][u32 crc32c of bytes 12..length][u32 sender id][u32 sender generation][u32 0][payload]
 * </pre>
 *
 * Sequence numbers start at 0 per sender incarnation; {@link #DONE} marks a control frame ("I have
 * all of yours"). Payloads are seeded random bytes, and lengths are seeded random in
 * {@code [HEADER, maxFrame]}, so a run is reproducible from its seed.
 */
final class TestFrames {
    static final int HEADER = 24;
    static final long DONE = -1L;
    private static final int POOL = 64 * 1024;

    private final SplittableRandom random;
    private final int maxFrame;
    private final MemorySegment pool;
    private final CRC32C crc = new CRC32C();

    TestFrames(long seed, int maxFrame) {
        if (maxFrame < HEADER) {
            throw new IllegalArgumentException("max frame " + maxFrame + " is below the test header of " + HEADER);
        }
        this.random = new SplittableRandom(seed);
        this.maxFrame = maxFrame;
        byte[] bytes = new byte[POOL + maxFrame];
        new SplittableRandom(seed ^ 0x5DEECE66DL).nextBytes(bytes);
        this.pool = MemorySegment.ofArray(bytes);
    }

    /** The length of the next frame, uniform in {@code [HEADER, maxFrame]}. */
    int nextLength() {
        return HEADER + random.nextInt(maxFrame - HEADER + 1);
    }

    /** Writes a whole frame of {@code length} bytes at {@code offset}; returns its crc32c. */
    int write(MemorySegment m, long offset, int length, long seq, int id, int generation) {
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, seq);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 12, id);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 16, generation);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 20, 0);
        int payload = length - HEADER;
        if (payload > 0) {
            MemorySegment.copy(pool, random.nextInt(POOL), m, offset + HEADER, payload);
        }
        int c = crc(crc, m, offset, length);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 8, c);
        return c;
    }

    /** Writes a {@link #DONE} control frame of {@link #HEADER} bytes. */
    void writeDone(MemorySegment m, long offset, int id, int generation) {
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, DONE);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 12, id);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 16, generation);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 20, 0);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 8, crc(crc, m, offset, HEADER));
    }

    static int crc(CRC32C crc, MemorySegment m, long offset, int length) {
        crc.reset();
        crc.update(m.asSlice(offset + 12, length - 12).asByteBuffer());
        return (int) crc.getValue();
    }

    /** The running hash over (seq, length, crc) of frames in order, the same on both ends when nothing went wrong. */
    static long mix(long hash, long seq, int length, int crc) {
        long v = seq * 0x9E3779B97F4A7C15L ^ ((long) length << 32 | (crc & 0xFFFFFFFFL));
        return (Long.rotateLeft(hash, 23) ^ v) * 0xBF58476D1CE4E5B9L;
    }

    static boolean isDone(MemorySegment m, long offset, int length) {
        return length >= 8 && m.get(ValueLayout.JAVA_LONG_UNALIGNED, offset) == DONE;
    }

    /**
     * The receiving side for one sender incarnation: checks each frame's length, checksum, sender id
     * and generation, and that its sequence number is the previous one plus one. Never throws (a
     * frame handler's exception would be swallowed by the ring); it counts instead.
     */
    static final class Track {
        final int id;
        final int generation;
        private final CRC32C crc = new CRC32C();
        /** Written by the polling thread only; volatile so another thread may watch progress. */
        volatile long received;
        long expected;
        long gaps;
        long duplicates;
        long badCrc;
        long tooShort;
        long wrongSender;
        long hash;
        long bytes;

        /** @param generation the sender generation frames must carry, or -1 to take any */
        Track(int id, int generation) {
            this.id = id;
            this.generation = generation;
        }

        void accept(MemorySegment m, long offset, int length) {
            if (length < HEADER) {
                tooShort++;
                received++;
                return;
            }
            long seq = m.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
            int c = crc(crc, m, offset, length);
            if (c != m.get(ValueLayout.JAVA_INT_UNALIGNED, offset + 8)) {
                badCrc++;
            }
            if (m.get(ValueLayout.JAVA_INT_UNALIGNED, offset + 12) != id
                    || (generation >= 0 && m.get(ValueLayout.JAVA_INT_UNALIGNED, offset + 16) != generation)) {
                wrongSender++;
            }
            if (seq > expected) {
                gaps += seq - expected; // frames lost (or reordered past)
                expected = seq + 1;
            } else if (seq < expected) {
                duplicates++; // seen already (or reordered)
            } else {
                expected = seq + 1;
            }
            hash = mix(hash, seq, length, c);
            bytes += length;
            received++;
        }

        long bad() {
            return gaps + duplicates + badCrc + tooShort + wrongSender;
        }

        /** key=value fields for a RESULT line, each key prefixed. */
        String fields(String prefix) {
            return prefix + "received=" + received + " " + prefix + "gaps=" + gaps + " " + prefix + "duplicates="
                    + duplicates + " " + prefix + "badCrc=" + badCrc + " " + prefix + "tooShort=" + tooShort + " "
                    + prefix + "wrongSender=" + wrongSender + " " + prefix + "hash=" + hash + " " + prefix + "bytes=" + bytes;
        }

        @Override
        public String toString() {
            return "Track[id " + id + " gen " + generation + ": " + fields("") + "]";
        }
    }
}
