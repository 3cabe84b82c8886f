package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The Internet checksum (RFC 1071): the 16-bit one's complement of the one's complement sum of
 * the data taken as big-endian 16-bit words, an odd last byte padded with zero.
 *
 * <p>A "sum" here is a folded partial sum in 0..0xFFFF, not complemented; {@link #finish} turns a
 * sum into the checksum field value. Sums combine in any order (RFC 1071 2(B)), so a checksum can
 * be built from pieces ({@link #combine}) or updated in place ({@link #update}, RFC 1624).
 * Nothing here allocates.
 */
public final class Checksum {
    private Checksum() {
    }

    /** Network byte order (big-endian), unaligned: how the views and the stack read header fields. */
    public static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private static final long LOW32 = 0xFFFF_FFFFL;
    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfInt NATIVE_INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfShort NATIVE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    /** 32-bit words summed between folds: each adds below 2^32, so 2^30 of them stay far below 2^63. */
    private static final int CHUNK_WORDS = 1 << 30;
    /** Words of the largest byte[]: more (a heap segment over a long[] past 2 GiB) take the chunked loop. */
    private static final int HEAP_WORDS = 1 << 29;

    /**
     * The folded one's complement sum of {@code length} bytes at {@code offset}. Adds the data as 32-bit words
     * into a long; since 2^32 = 1 (mod 0xFFFF) this equals the sum of 16-bit words (RFC 1071 2(C), "deferred
     * carries").
     */
    public static int sum(MemorySegment seg, long offset, long length) {
        Objects.checkFromIndexSize(offset, length, seg.byteSize());
        // Native-order loads (no byte swap per load), one 32-bit word a step in an int-counted loop, which C2
        // vectorizes (twice the rate of the same sum unrolled by hand over longs); the folded sum is swapped to
        // network order at the end when the host is little-endian (RFC 1071 2(B): the sum is byte-order
        // independent up to that swap). Heap segments (byte[] from Vert.x buffers) take a copy of the loop in a
        // method of their own: one loop that sees heap, native and mapped segments is megamorphic, and the JIT then
        // neither inlines the accessors nor hoists their checks (profiled: the sum ran several times slower). Not
        // through heapBase(): its Optional is not always removed, and the sum must not allocate.
        long words = length >>> 2;
        long acc = seg.isNative() || words > HEAP_WORDS ? nativeWords(seg, offset, words) : heapWords(seg, offset, (int) words);
        long i = offset + 4 * words;
        long end = offset + length;
        if (end - i >= 2) {
            acc += seg.get(NATIVE_SHORT, i) & 0xFFFF;
            i += 2;
        }
        if (end - i == 1) {
            // RFC 1071 4.1: an odd last byte is the high byte of a word whose low byte is zero, which in
            // native little-endian order is the low byte.
            int b = seg.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
            acc += LITTLE ? b : b << 8;
        }
        int sum = fold(acc);
        return LITTLE ? swap(sum) : sum;
    }

    /** The sum of {@code words} native-order 32-bit words from {@code offset}, folded below 2^33. */
    private static long nativeWords(MemorySegment seg, long offset, long words) {
        long acc = 0;
        long i = offset;
        while (words > 0) {
            // Each word adds below 2^32, so a long takes 2^31 of them; fold between chunks of that many.
            int n = (int) Math.min(words, CHUNK_WORDS);
            for (int k = 0; k < n; k++) {
                acc += seg.get(NATIVE_INT, i + 4L * k) & LOW32;
            }
            i += 4L * n;
            words -= n;
            acc = (acc >>> 32) + (acc & LOW32);
        }
        return acc;
    }

    /** {@link #nativeWords} for a heap segment of at most {@link #HEAP_WORDS} words (a byte[]'s): the long cannot overflow. */
    private static long heapWords(MemorySegment seg, long offset, int words) {
        long acc = 0;
        for (int k = 0; k < words; k++) {
            acc += seg.get(NATIVE_INT, offset + 4L * k) & LOW32;
        }
        return acc;
    }

    /** Continues {@code initial} (a sum of an even number of bytes, or any 16-bit sum such as a pseudo header) over more bytes. */
    public static int sum(MemorySegment seg, long offset, long length, int initial) {
        return add(initial, sum(seg, offset, length));
    }

    /** Folds a non-negative accumulator to 16 bits with end-around carry. */
    public static int fold(long acc) {
        acc = (acc >>> 32) + (acc & LOW32);
        acc = (acc >>> 16) + (acc & 0xFFFF);
        acc = (acc >>> 16) + (acc & 0xFFFF);
        acc = (acc >>> 16) + (acc & 0xFFFF);
        return (int) acc;
    }

    /** One's complement addition of two sums. */
    public static int add(int a, int b) {
        int s = (a & 0xFFFF) + (b & 0xFFFF);
        return (s & 0xFFFF) + (s >>> 16);
    }

    /**
     * The sum of the concatenation A||B from the sums of A and B. When A has an odd length, B's
     * bytes fall in swapped word positions, and RFC 1071 2(B) lets us swap B's sum instead.
     */
    public static int combine(int sumA, int sumB, long lengthA) {
        return add(sumA, (lengthA & 1) == 0 ? sumB : swap(sumB));
    }

    /** Byte-swaps a 16-bit sum. */
    public static int swap(int sum) {
        return ((sum & 0xFF) << 8) | ((sum >>> 8) & 0xFF);
    }

    /** The checksum field value for a sum: its one's complement. */
    public static int finish(int sum) {
        return ~sum & 0xFFFF;
    }

    /** The Internet checksum of a range (field value to store). */
    public static int compute(MemorySegment seg, long offset, long length) {
        return finish(sum(seg, offset, length));
    }

    /** True when a range that includes its own checksum field sums to 0xFFFF (RFC 1071 1, "check"). */
    public static boolean verifies(MemorySegment seg, long offset, long length) {
        return sum(seg, offset, length) == 0xFFFF;
    }

    /**
     * The sum of the IPv4 pseudo header (RFC 768, also TCP per RFC 793 3.1): source, destination,
     * zero, protocol, and the transport length.
     */
    public static int pseudoHeaderSum(int source, int destination, int protocol, int length) {
        long acc = (source >>> 16) + (source & 0xFFFF) + (destination >>> 16) + (destination & 0xFFFF)
                + (protocol & 0xFF) + (length & 0xFFFF);
        return fold(acc);
    }

    /**
     * Incremental update of a stored checksum when one 16-bit word changes, RFC 1624 eqn. 3:
     * HC' = ~(~HC + ~m + m'), which agrees with a full recomputation, except that it gives 0x0000
     * where the covered words are now all zero (a full computation gives 0xFFFF): callers whose
     * data can be all zero map 0x0000 to 0xFFFF, which verifies either way.
     */
    public static int update(int checksum, int oldWord, int newWord) {
        int s = add(add(~checksum & 0xFFFF, ~oldWord & 0xFFFF), newWord & 0xFFFF);
        return ~s & 0xFFFF;
    }

    /**
     * The checksum field value for a range whose own checksum field (at {@code fieldOffset}, even)
     * is taken as zero: the range is summed around the field, not through it, so a read-only view
     * works and an all-zero range gives 0xFFFF as a full computation does.
     */
    public static int computeAround(MemorySegment seg, long offset, long length, long fieldOffset, int initial) {
        int sum = add(initial, sum(seg, offset, fieldOffset));
        sum = add(sum, sum(seg, offset + fieldOffset + 2, length - fieldOffset - 2));
        return finish(sum);
    }

    /** {@link #update} for a 32-bit field (an address): two words at once. */
    public static int update32(int checksum, int oldValue, int newValue) {
        return update(update(checksum, oldValue >>> 16, newValue >>> 16), oldValue & 0xFFFF, newValue & 0xFFFF);
    }
}
