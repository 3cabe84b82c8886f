package dev.nupa.ip.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Fuzzes {@link Checksum} against {@link #referenceSum}, RFC 1071 written out byte by byte, on
 * arbitrary bytes, offsets and (odd) lengths, in heap and native segments. docs/fuzzing.md says
 * how to run it; seeds live in {@code dev/nupa/ip/ChecksumFuzzTestInputs/checksum/}.
 *
 * <p>Input: byte 0 picks the offset into the data ({@code b0 % (n + 1)}), byte 1 how many bytes to
 * leave off the end, bytes 2-3 a 16-bit value {@code w} (an initial sum, a split point, a new word);
 * the rest is the data ({@code n} bytes). Missing bytes count as zero.
 */
class ChecksumFuzzTest {

    /**
     * The one's complement sum of RFC 1071 taken byte by byte, the independent reference for every
     * fuzz test here: a byte at an even distance from {@code from} is the high byte of a 16-bit
     * word, the next one its low byte, and an odd last byte is a high byte padded with zero
     * (RFC 1071 4.1). The carry is folded back after every byte, so the result is 0..0xFFFF and is
     * 0 only when {@code initial} and every byte are 0.
     */
    static int referenceSum(byte[] b, int from, int to, int initial) {
        int acc = initial;
        for (int i = from; i < to; i++) {
            acc += ((i - from) & 1) == 0 ? (b[i] & 0xFF) << 8 : b[i] & 0xFF;
            acc = (acc & 0xFFFF) + (acc >>> 16);
        }
        return acc;
    }

    static int referenceSum(byte[] b, int from, int to) {
        return referenceSum(b, from, to, 0);
    }

    static int referenceSum(byte[] b) {
        return referenceSum(b, 0, b.length, 0);
    }

    /** The checksum field value for bytes whose own field is zero: the complement of their sum. */
    static int referenceChecksum(byte[] b, int from, int to) {
        return ~referenceSum(b, from, to) & 0xFFFF;
    }

    /** Big-endian 16-bit read. */
    static int u16(byte[] b, int at) {
        return ((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF);
    }

    static void putU16(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 8);
        b[at + 1] = (byte) v;
    }

    static int u32(byte[] b, int at) {
        return u16(b, at) << 16 | u16(b, at + 2);
    }

    @FuzzTest
    void checksum(byte[] input) {
        int b0 = input.length > 0 ? input[0] & 0xFF : 0;
        int b1 = input.length > 1 ? input[1] & 0xFF : 0;
        int w = input.length > 3 ? u16(input, 2) : 0;
        byte[] data = input.length > 4 ? Arrays.copyOfRange(input, 4, input.length) : new byte[0];
        int n = data.length;
        int off = b0 % (n + 1);
        int len = n - off - b1 % (n - off + 1);

        MemorySegment heap = MemorySegment.ofArray(data);
        try (Arena arena = Arena.ofConfined()) {
            // A native copy one byte past an 8-byte boundary: unaligned long reads on a real address.
            MemorySegment nativeSeg = arena.allocate(n + 1L, 8).asSlice(1);
            MemorySegment.copy(data, 0, nativeSeg, ValueLayout.JAVA_BYTE, 0, n);
            for (MemorySegment seg : new MemorySegment[] {heap, nativeSeg}) {
                sumsMatchTheReference(seg, data, off, len, w);
            }
        }
        splitsCombine(heap, data, off, len, w);
        swappedWordsGiveTheSwappedSum(data, off, len);
        pseudoHeaderSumMatchesItsBytes(data, w);
        incrementalUpdateMatchesRecomputation(data, off, len, w, b0 << 8 | b1);
    }

    private static void sumsMatchTheReference(MemorySegment seg, byte[] data, int off, int len, int w) {
        int want = referenceSum(data, off, off + len);
        String where = "offset " + off + " length " + len;
        assertEquals(want, Checksum.sum(seg, off, len), where);
        assertEquals(~want & 0xFFFF, Checksum.compute(seg, off, len), where);
        assertEquals(want == 0xFFFF, Checksum.verifies(seg, off, len), where);
        assertEquals(referenceSum(data, off, off + len, w), Checksum.sum(seg, off, len, w), where + " initial " + w);
        // Summing a range that ends in its own checksum verifies (RFC 1071 1): append the field.
        if ((len & 1) == 0) {
            byte[] withField = Arrays.copyOfRange(data, off, off + len + 2);
            putU16(withField, len, Checksum.compute(seg, off, len));
            assertEquals(0xFFFF, referenceSum(withField), where);
        }
    }

    /** RFC 1071 2(B): the sum of A||B from the sums of A and B, at every kind of split (odd ones swap B). */
    private static void splitsCombine(MemorySegment seg, byte[] data, int off, int len, int w) {
        int k = w % (len + 1);
        int whole = Checksum.sum(seg, off, len);
        int a = Checksum.sum(seg, off, k);
        int b = Checksum.sum(seg, off + k, len - k);
        assertEquals(referenceSum(data, off, off + k), a);
        assertEquals(referenceSum(data, off + k, off + len), b);
        assertEquals(whole, Checksum.combine(a, b, k), "split at " + k + " of " + len);
        assertEquals(a, Checksum.swap(Checksum.swap(a)));
    }

    /** RFC 1071 2(B), byte order independence: swapping the bytes of every word swaps the sum. */
    private static void swappedWordsGiveTheSwappedSum(byte[] data, int off, int len) {
        byte[] swapped = new byte[len + (len & 1)]; // odd: pad with zero
        System.arraycopy(data, off, swapped, 0, len);
        for (int i = 0; i + 1 < swapped.length; i += 2) {
            byte t = swapped[i];
            swapped[i] = swapped[i + 1];
            swapped[i + 1] = t;
        }
        int sum = Checksum.sum(MemorySegment.ofArray(swapped), 0, swapped.length);
        assertEquals(referenceSum(swapped), sum);
        assertEquals(Checksum.swap(referenceSum(data, off, off + len)), sum);
    }

    /** RFC 768: the pseudo header sum equals the sum of its 12 bytes laid out. */
    private static void pseudoHeaderSumMatchesItsBytes(byte[] data, int w) {
        byte[] eight = Arrays.copyOf(data, 8);
        int src = u32(eight, 0);
        int dst = u32(eight, 4);
        int protocol = w >>> 8;
        byte[] pseudo = {
            eight[0], eight[1], eight[2], eight[3], eight[4], eight[5], eight[6], eight[7],
            0, (byte) protocol, (byte) (w >>> 8), (byte) w
        };
        assertEquals(referenceSum(pseudo), Checksum.pseudoHeaderSum(src, dst, protocol, w));
    }

    /**
     * RFC 1624: in an even-length message whose first word is its checksum field, change one other
     * word and patch the field with {@link Checksum#update}. The patched field must make the message
     * verify, and must equal what a full recomputation stores.
     */
    private static void incrementalUpdateMatchesRecomputation(byte[] data, int off, int len, int w, int newWord) {
        int even = len & ~1;
        if (even < 4) {
            return;
        }
        byte[] m = Arrays.copyOfRange(data, off, off + even);
        putU16(m, 0, 0);
        int checksum = referenceChecksum(m, 0, even);
        putU16(m, 0, checksum);
        assertEquals(0xFFFF, referenceSum(m), "the starting message verifies");
        int at = 2 * (1 + w % (even / 2 - 1));
        int oldWord = u16(m, at);
        putU16(m, at, newWord);
        int updated = Checksum.update(checksum, oldWord, newWord);
        putU16(m, 0, 0);
        int recomputed = referenceChecksum(m, 0, even);
        putU16(m, 0, updated);
        String what = "checksum " + Integer.toHexString(checksum) + ", word at " + at + " "
                + Integer.toHexString(oldWord) + " -> " + Integer.toHexString(newWord) + ": update gives "
                + Integer.toHexString(updated) + ", recomputation " + Integer.toHexString(recomputed);
        if (updated == 0 && recomputed == 0xFFFF) {
            // The documented exception of RFC 1624 eqn. 3: all covered words are zero now.
            putU16(m, 0, 0);
            assertEquals(0, referenceSum(m), "update gives 0x0000 only when every covered word is zero; " + what);
        } else {
            assertEquals(0xFFFF, referenceSum(m), "the patched message verifies; " + what);
            assertEquals(recomputed, updated, what);
        }

        // update32: two adjacent words at once (an address), when there is room for them.
        if (even >= 6) {
            int at32 = 2 * (1 + w % (even / 2 - 2));
            putU16(m, 0, 0);
            int before = referenceChecksum(m, 0, even);
            int old32 = u32(m, at32);
            int new32 = newWord << 16 | (~newWord & 0xFFFF);
            putU16(m, at32, new32 >>> 16);
            putU16(m, at32 + 2, new32 & 0xFFFF);
            int patched = Checksum.update32(before, old32, new32);
            int full = referenceChecksum(m, 0, even);
            assertEquals(full, patched, "update32 of the words at " + at32 + ": " + Integer.toHexString(old32)
                    + " -> " + Integer.toHexString(new32));
        }
    }
}
