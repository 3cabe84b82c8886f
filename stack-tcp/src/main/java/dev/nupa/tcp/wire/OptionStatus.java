package dev.nupa.tcp.wire;

/**
 * Result codes of {@link TcpOptions#parse}. A malformed option ends parsing but not the segment:
 * the options before it are kept and the rest ignored, as Linux's {@code tcp_parse_options} does
 * for a length below 2 or past the end, so these codes are for counting (by reason,
 * {@code long[] seen = new long[OptionStatus.COUNT]}), not for dropping.
 */
public final class OptionStatus {
    private OptionStatus() {
    }

    /** Every option was well formed (or an End of Option List ended them, RFC 9293 3.1). */
    public static final int OK = 0;
    /** An option runs past the end of the options: its length byte is missing or too large. */
    public static final int TRUNCATED = 1;
    /** An option's length byte is 0 or 1, below the two bytes of kind and length themselves. */
    public static final int BAD_LENGTH = 2;
    /** A known kind with a length other than its own (MSS 4, window scale 3, SACK 2 + 8n with n 1..4, ...). */
    public static final int WRONG_LENGTH = 3;
    /** The number of codes, for sizing counter arrays. */
    public static final int COUNT = 4;

    private static final String[] NAMES = {"ok", "truncated", "bad-length", "wrong-length"};

    /** A short stable name for counters and logs. */
    public static String name(int status) {
        return status >= 0 && status < COUNT ? NAMES[status] : "unknown-" + status;
    }
}
