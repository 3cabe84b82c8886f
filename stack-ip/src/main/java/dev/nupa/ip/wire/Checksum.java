package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
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

    /**
     * The folded one's complement sum of {@code length} bytes at {@code offset}. Adds the data as 32-bit words
     * into a long; since 2^32 = 1 (mod 0xFFFF) this equals the sum of 16-bit words (RFC 1071 2(C), "deferred
     * carries").
     */
    public static int sum(MemorySegment seg, long offset, long length) {
        // Heap segments (byte[] from Vert.x buffers) take their own loop: one call site that sees
        // heap, native and mapped segments is megamorphic, and the JIT then neither inlines the
        // accessors nor hoists their checks (profiled: the sum ran several times slower).
        if (!seg.isNative() && seg.heapBase().orElse(null) instanceof byte[] array) {
            Objects.checkFromIndexSize(offset, length, seg.byteSize());
            return sumArray(array, (int) (seg.address() + offset), (int) length);
        }
        // Native-order loads (no byte swap per load), one 32-bit word a step in an int-counted loop, which C2
        // vectorizes (twice the rate of the same sum unrolled by hand over longs); the folded sum is swapped to
        // network order at the end when the host is little-endian (RFC 1071 2(B): the sum is byte-order
        // independent up to that swap).
        long acc = 0;
        long i = offset;
        long end = offset + length;
        while (end - i >= 4) {
            // Each word adds below 2^32, so a long takes 2^31 of them; fold between chunks of that many.
            int words = (int) Math.min((end - i) >>> 2, CHUNK_WORDS);
            for (int k = 0; k < words; k++) {
                acc += seg.get(NATIVE_INT, i + 4L * k) & LOW32;
            }
            i += 4L * words;
            acc = (acc >>> 32) + (acc & LOW32);
        }
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

    private static final VarHandle ARRAY_INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.nativeOrder());

    /** {@link #sum(MemorySegment, long, long)} over {@code length} bytes of {@code a} from {@code from}. */
    private static int sumArray(byte[] a, int from, int length) {
        // As for native memory: native-order 32-bit words in an int-counted loop, which C2 vectorizes (an array
        // holds under 2^29 of them, so the long cannot overflow); the few bytes after them in network order.
        long acc = 0;
        int words = length >>> 2;
        for (int k = 0; k < words; k++) {
            acc += (int) ARRAY_INT.get(a, from + 4 * k) & LOW32;
        }
        int words16 = fold(acc);
        long tail = LITTLE ? swap(words16) : words16;
        int i = from + 4 * words;
        int end = from + length;
        if (end - i >= 2) {
            tail += ((a[i] & 0xFF) << 8) | (a[i + 1] & 0xFF);
            i += 2;
        }
        if (i < end) {
            tail += (a[i] & 0xFF) << 8; // RFC 1071 4.1: an odd last byte is a high byte
        }
        return fold(tail);
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
