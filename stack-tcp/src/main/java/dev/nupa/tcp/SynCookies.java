package dev.nupa.tcp;

import java.security.SecureRandom;

import dev.nupa.tcp.wire.TcpOptions;

/**
 * Stateless SYN cookies (RFC 4987 section 3.6): under a SYN flood a listener answers a SYN without
 * keeping any state, encoding what it must remember into the ISN of its SYN-ACK; the client's ACK
 * echoes that ISN + 1, and the listener rebuilds the connection from it.
 *
 * <p><b>Layout.</b> The 32 bits are those RFC 4987 3.6 describes (D. J. Bernstein's scheme):
 * <pre>
 *   value = count mod 32 (5 bits) | MSS index (3 bits) | MAC (24 bits)
 *   ISN   = value + H0 + client ISN  (mod 2^32)
 * </pre>
 * <ul>
 *   <li>count: {@code now} in 64-second ticks ({@link #TICK_NS}). A cookie is accepted while the
 *       count is at most one tick past the one it was made in ({@link #MAX_AGE_TICKS} = 2, as
 *       Linux's MAX_SYNCOOKIE_AGE): it lives 64 to 128 seconds, long enough for any handshake and
 *       short enough that a cookie seen by an eavesdropper soon stops working.</li>
 *   <li>MSS index: 3 bits into {@link #MSS_TABLE}; the SYN-ACK promises the largest entry not above
 *       the MSS the client offered, because the listener cannot remember the exact value.</li>
 *   <li>MAC: the low 24 bits of SipHash-2-4 over the 4-tuple, the full tick count, the client ISN,
 *       the MSS index and the options (below). Because it covers the full count, a cookie 32 ticks old, whose 5 count
 *       bits alias the current ones, still fails; because it covers the index and the client ISN,
 *       flipping any bit of the ACK's sequence or acknowledgment number fails too (where Linux's
 *       additive scheme lets the low bits choose another MSS). A blind forgery succeeds with
 *       probability 2^-24 per try.</li>
 *   <li>H0: the low 32 bits of SipHash-2-4 over the 4-tuple alone. Adding it and the client ISN
 *       (as Linux does) hides the count and index bits, so the ISNs stay unpredictable from outside
 *       as RFC 6528 requires of every ISN.</li>
 * </ul>
 * The hashes use one 128-bit secret and differ in a domain byte; the messages are the 24-byte
 * words localIp | remoteIp, localPort | remotePort &lt;&lt; 16 | domain &lt;&lt; 32 | index &lt;&lt; 40
 * | options &lt;&lt; 43, and (count &lt;&lt; 32 | client ISN) for the MAC, 0 for H0 and the clock offset.
 *
 * <p><b>Options in the timestamp</b> (Linux's cookie_init_timestamp and cookie_timestamp_decode).
 * When the SYN carried a timestamp and the listener uses them, the low {@link #TS_OPTION_BITS} bits
 * of the SYN-ACK's TSval carry the SYN's other options, and the client echoes them in its ACK's TSecr
 * (RFC 7323 4.3):
 * <pre>
 *   bits 0-3: the peer's window-scale shift, or 15 when its SYN offered none (a shift is at most 14)
 *   bit 4:    SACK-permitted (RFC 2018 2)
 *   bit 5:    0 (Linux's ECN bit; NUPA does no ECN)
 * </pre>
 * The MAC covers these bits too ({@link #options}; {@link #NO_TIMESTAMPS} for a cookie sent without
 * timestamps), so an ACK whose echo was changed, or that drops the timestamp a cookie was sent with,
 * fails like a forged one; in Linux the echo is not authenticated. Without a timestamp in the SYN
 * nothing can carry them, and the connection goes without window scaling, SACK and timestamps (as
 * Linux).
 *
 * <p><b>The clock under the options.</b> The TSval is the connection's timestamp clock
 * ({@link TcpConnection#timestampClock}, 1 ms per tick) over a base derived from the secret and the
 * 4-tuple ({@link #timestampBase}, as Linux's secure_tcp_ts_off), so the connection a cookie later
 * opens finds the same clock without having stored it. {@link #timestampValue} puts the options in
 * the clock's low 6 bits and, if that lands above the clock, steps back 64 ticks: the TSval is at most
 * 63 ms behind the clock and never ahead. So every later TSval of the connection, read straight from
 * the clock, is at least this one, as the peer's PAWS (RFC 7323 5.3) requires; the peer's RTT samples
 * (from its own TSvals, echoed by us) are untouched; and only an RTT taken from this one echo would
 * read up to 63 ms long, which no code here takes (TcpConnection times RTT by a timed segment).
 *
 * <p>Immutable after construction: any thread may encode and decode; nothing is allocated, and no
 * input makes decode throw.
 */
public final class SynCookies {
    /** One count tick: 64 seconds, in nanoseconds. */
    public static final long TICK_NS = 64_000_000_000L;
    /** A cookie is accepted while the count differs from its own by less than this. */
    public static final int MAX_AGE_TICKS = 2;

    /**
     * The MSS values a cookie can promise, ascending; the index is 3 bits.
     * <ul>
     *   <li>536: IPv4's minimum (576-byte datagrams, RFC 9293 3.7.1 default send MSS), and the
     *       smallest MTU a NUPA link allows.</li>
     *   <li>1300: Ethernet paths through tunnels (a Linux table entry).</li>
     *   <li>1440: Ethernet with 20 bytes of IP or TCP options, or PPPoE (a Linux table entry).</li>
     *   <li>1460: Ethernet, MTU 1500: hosts reaching the fabric through the TAP gateway.</li>
     *   <li>4056: MTU 4096, page-sized frames and RoCE's 4096-byte MTU.</li>
     *   <li>8960: MTU 9000, NUPA's default fabric MTU and jumbo Ethernet (docs/link-layer.md).</li>
     *   <li>16344: MTU 16384, fabric slots configured larger than the default.</li>
     *   <li>65495: MTU 65535, the largest IPv4 datagram (loopback-like links).</li>
     * </ul>
     */
    static final int[] MSS_TABLE = {536, 1300, 1440, 1460, 4056, 8960, 16344, 65495};

    private static final int COUNT_SHIFT = 27;
    private static final int COUNT_MASK = 31;
    private static final int INDEX_SHIFT = 24;
    private static final int INDEX_MASK = 7;
    private static final int MAC_MASK = 0xff_ffff;
    private static final long DOMAIN_H0 = 1L << 32;
    private static final long DOMAIN_MAC = 2L << 32;
    private static final long DOMAIN_CLOCK = 3L << 32;

    /** Low bits of a cookie SYN-ACK's TSval that carry the SYN's options (Linux's TSBITS). */
    public static final int TS_OPTION_BITS = 6;
    private static final int TS_OPTION_MASK = (1 << TS_OPTION_BITS) - 1;
    /** The window-scale field of the options when the SYN offered none (Linux's TS_OPT_WSCALE_MASK). */
    private static final int TS_NO_WSCALE = 0xf;
    private static final int TS_SACK = 1 << 4;
    /**
     * The options value of a cookie sent without timestamps: above the {@link #TS_OPTION_BITS} bits,
     * so no echoed TSecr decodes to it.
     */
    public static final int NO_TIMESTAMPS = 1 << TS_OPTION_BITS;

    private final long k0;
    private final long k1;

    /** Cookies under a secret from {@link SecureRandom}. */
    public SynCookies() {
        this(new SecureRandom());
    }

    /** Cookies under a secret drawn from {@code random}. */
    public SynCookies(SecureRandom random) {
        this(random.nextLong(), random.nextLong());
    }

    /**
     * Cookies under a given secret (tests; or nodes that share a listening address and must accept
     * each other's cookies).
     */
    public SynCookies(long k0, long k1) {
        this.k0 = k0;
        this.k1 = k1;
    }

    /** {@link #encode(long, int, int, int, int, int, int, int)} for a SYN-ACK without timestamps. */
    public int encode(long now, int localIp, int localPort, int remoteIp, int remotePort, int clientIsn,
            int mss) {
        return encode(now, localIp, localPort, remoteIp, remotePort, clientIsn, mss, NO_TIMESTAMPS);
    }

    /**
     * The ISN of a SYN-ACK answering a SYN statelessly.
     *
     * @param now the time, nanoseconds
     * @param clientIsn the sequence number of the client's SYN
     * @param mss the MSS the client offered (536 if it sent no option, RFC 9293 3.7.1), already
     *     capped by the listener's own limit; values below 536 get 536, as in Linux
     * @param options what the SYN-ACK's TSval carries ({@link #options}), or {@link #NO_TIMESTAMPS}
     * @throws IllegalArgumentException if {@code options} is neither
     */
    public int encode(long now, int localIp, int localPort, int remoteIp, int remotePort, int clientIsn,
            int mss, int options) {
        if (options != NO_TIMESTAMPS && (options & ~TS_OPTION_MASK) != 0) {
            throw new IllegalArgumentException("cookie options " + options + " are neither 0.." + TS_OPTION_MASK
                    + " (SynCookies.options) nor NO_TIMESTAMPS");
        }
        long tick = Math.floorDiv(now, TICK_NS);
        int index = indexFor(mss);
        int mac = mac(localIp, localPort, remoteIp, remotePort, tick, clientIsn, index, options);
        int value = ((int) tick & COUNT_MASK) << COUNT_SHIFT | index << INDEX_SHIFT | mac;
        return value + h0(localIp, localPort, remoteIp, remotePort) + clientIsn;
    }

    /** {@link #decode(long, int, int, int, int, int, int, int)} for an ACK without timestamps. */
    public int decode(long now, int localIp, int localPort, int remoteIp, int remotePort, int clientIsnPlus1,
            int ackMinus1) {
        return decode(now, localIp, localPort, remoteIp, remotePort, clientIsnPlus1, ackMinus1, NO_TIMESTAMPS);
    }

    /**
     * Checks the ACK that completes a handshake begun with a cookie.
     *
     * @param now the time, nanoseconds
     * @param clientIsnPlus1 the ACK segment's sequence number (the client ISN + 1)
     * @param ackMinus1 the ACK segment's acknowledgment number - 1 (the cookie, if genuine)
     * @param options what the ACK echoes ({@link #optionsFromEcho})
     * @return the MSS the cookie promised, or -1 if it is forged, damaged, for another 4-tuple,
     *     expired, or its options were changed or dropped
     */
    public int decode(long now, int localIp, int localPort, int remoteIp, int remotePort, int clientIsnPlus1,
            int ackMinus1, int options) {
        int clientIsn = clientIsnPlus1 - 1;
        int value = ackMinus1 - h0(localIp, localPort, remoteIp, remotePort) - clientIsn;
        long tick = Math.floorDiv(now, TICK_NS);
        int age = (int) ((tick - (value >>> COUNT_SHIFT)) & COUNT_MASK);
        if (age >= MAX_AGE_TICKS) {
            return -1;
        }
        int index = (value >>> INDEX_SHIFT) & INDEX_MASK;
        int mac = mac(localIp, localPort, remoteIp, remotePort, tick - age, clientIsn, index, options);
        if ((value & MAC_MASK) != mac) {
            return -1;
        }
        return MSS_TABLE[index];
    }

    /**
     * The options a cookie SYN-ACK carries in its TSval (Linux's cookie_init_timestamp).
     *
     * @param peerWindowShift the shift of the SYN's window-scale option, or -1 when it had none (or
     *     the listener does not scale); above 14 counts as 14 (RFC 7323 2.3)
     * @param sackPermitted whether the SYN offered SACK and the listener uses it
     */
    public static int options(int peerWindowShift, boolean sackPermitted) {
        int wscale = peerWindowShift < 0 ? TS_NO_WSCALE : Math.min(peerWindowShift, TcpOptions.MAX_WINDOW_SCALE);
        return wscale | (sackPermitted ? TS_SACK : 0);
    }

    /** The options an ACK echoes: its TSecr's low bits, or {@link #NO_TIMESTAMPS} when it has no timestamp. */
    public static int optionsFromEcho(boolean timestamps, int tsEcr) {
        return timestamps ? tsEcr & TS_OPTION_MASK : NO_TIMESTAMPS;
    }

    /** The peer's window-scale shift the options carry, or -1 for none (Linux's cookie_timestamp_decode). */
    public static int windowShift(int options) {
        if (options == NO_TIMESTAMPS || (options & TS_NO_WSCALE) == TS_NO_WSCALE) {
            return -1;
        }
        return options & TS_NO_WSCALE;
    }

    /** Whether the options say the SYN offered SACK. */
    public static boolean sackPermitted(int options) {
        return options != NO_TIMESTAMPS && (options & TS_SACK) != 0;
    }

    /**
     * The TSval of a cookie SYN-ACK: {@code clock} with its low 6 bits replaced by {@code options},
     * 64 ticks lower when that would put it ahead of the clock (Linux's cookie_init_timestamp), so it
     * is never ahead and at most 63 ticks behind (modulo 2^32).
     */
    public static int timestampValue(int clock, int options) {
        int ts = (clock & ~TS_OPTION_MASK) | (options & TS_OPTION_MASK);
        return ts - clock > 0 ? ts - (1 << TS_OPTION_BITS) : ts;
    }

    /**
     * The base, in nanoseconds, of the timestamp clock ({@link TcpConnection#timestampClock}) for
     * this 4-tuple's cookie SYN-ACKs and the connection a cookie opens: a 32-bit offset in
     * milliseconds from the secret (as Linux's secure_tcp_ts_off), so a TSval shows no uptime.
     */
    public long timestampBase(int localIp, int localPort, int remoteIp, int remotePort) {
        long offset = SipHash.hash(k0, k1, SipHash.addresses(localIp, remoteIp),
                SipHash.ports(localPort, remotePort) | DOMAIN_CLOCK, 0L) & 0xffff_ffffL;
        return -offset * 1_000_000L;
    }

    /** The largest table index whose MSS is not above {@code mss}; 0 below the table. */
    static int indexFor(int mss) {
        int index = MSS_TABLE.length - 1;
        while (index > 0 && MSS_TABLE[index] > mss) {
            index--;
        }
        return index;
    }

    private int h0(int localIp, int localPort, int remoteIp, int remotePort) {
        return (int) SipHash.hash(k0, k1, SipHash.addresses(localIp, remoteIp),
                SipHash.ports(localPort, remotePort) | DOMAIN_H0, 0L);
    }

    private int mac(int localIp, int localPort, int remoteIp, int remotePort, long tick, int clientIsn,
            int index, int options) {
        long word1 = SipHash.ports(localPort, remotePort) | DOMAIN_MAC | (long) index << 40 | (long) options << 43;
        long word2 = (tick << 32) | (clientIsn & 0xffffffffL);
        return (int) SipHash.hash(k0, k1, SipHash.addresses(localIp, remoteIp), word1, word2) & MAC_MASK;
    }
}
