package dev.nupa.ip.wire;

/**
 * Result codes of the wire views' {@code wrap} methods. Distinct codes let the caller count drops
 * by reason: {@code long[] drops = new long[WireStatus.COUNT]; drops[status]++}.
 */
public final class WireStatus {
    private WireStatus() {
    }

    /** The header is well formed; the view's accessors can now not fail. */
    public static final int OK = 0;
    /** The buffer is shorter than the header or than the length the header claims (or lies outside the segment). */
    public static final int TRUNCATED = 1;
    /** IPv4: the version field is not 4. */
    public static final int BAD_VERSION = 2;
    /** IPv4: IHL below 5 (RFC 791: the minimum header is five 32-bit words). */
    public static final int BAD_HEADER_LENGTH = 3;
    /** IPv4: total length smaller than the header length. */
    public static final int BAD_TOTAL_LENGTH = 4;
    /** The checksum does not verify. */
    public static final int BAD_CHECKSUM = 5;
    /** UDP: the length field is below 8 or exceeds the IP payload (RFC 768). */
    public static final int BAD_LENGTH = 6;
    /** The number of codes, for sizing counter arrays. */
    public static final int COUNT = 7;

    private static final String[] NAMES = {
        "ok", "truncated", "bad-version", "bad-header-length", "bad-total-length", "bad-checksum", "bad-length"
    };

    /** A short stable name for counters and logs. */
    public static String name(int status) {
        return status >= 0 && status < COUNT ? NAMES[status] : "unknown-" + status;
    }
}
