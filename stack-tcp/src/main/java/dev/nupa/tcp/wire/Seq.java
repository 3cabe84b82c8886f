package dev.nupa.tcp.wire;

/**
 * Sequence number arithmetic modulo 2^32 (RFC 9293 3.4: "all arithmetic dealing with sequence
 * numbers must be performed modulo 2**32"). Sequence numbers are plain {@code int}s holding all
 * 32 bits; {@code a} comes before {@code b} when {@code b} lies less than 2^31 ahead of it, so
 * {@code lt(0xFFFF_FFF0, 0x10)} holds across the wrap. Never compare them with {@code <}.
 *
 * <p>The order is only meaningful for numbers less than 2^31 apart, which TCP guarantees: windows
 * are below 2^30 (RFC 7323 2.3) and old segments are gone long before the space wraps (the MSL,
 * RFC 9293 3.4). Exactly 2^31 apart, each number is "before" the other and neither is "after",
 * so {@code lt(a, b)} and {@code gt(b, a)} disagree there; the order is not transitive across
 * larger spans.
 */
public final class Seq {
    private Seq() {
    }

    /** a &lt; b: b is ahead of a by 1 .. 2^31 (modulo 2^32). */
    public static boolean lt(int a, int b) {
        return a - b < 0;
    }

    /** a &lt;= b. */
    public static boolean le(int a, int b) {
        return a - b <= 0;
    }

    /** a &gt; b: a is ahead of b by 1 .. 2^31 - 1. */
    public static boolean gt(int a, int b) {
        return a - b > 0;
    }

    /** a &gt;= b. */
    public static boolean ge(int a, int b) {
        return a - b >= 0;
    }

    /** The later of the two in sequence order. */
    public static int max(int a, int b) {
        return a - b >= 0 ? a : b;
    }

    /** The earlier of the two in sequence order. */
    public static int min(int a, int b) {
        return a - b <= 0 ? a : b;
    }

    /**
     * {@code start <= seq < start + size} modulo 2^32: {@code seq} is one of the {@code size}
     * numbers from {@code start} on. {@code size} counts sequence numbers, 0 .. 2^31 - 1; a window
     * of size 0 holds nothing (RFC 9293 3.10.7.4 treats a zero receive window apart), and so does a
     * negative size.
     */
    public static boolean inWindow(int seq, int start, int size) {
        int d = seq - start;
        return d >= 0 && d < size;
    }
}
