package dev.nupa.tcp;

import java.security.SecureRandom;

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
 *   <li>MAC: the low 24 bits of SipHash-2-4 over the 4-tuple, the full tick count, the client ISN
 *       and the MSS index. Because it covers the full count, a cookie 32 ticks old, whose 5 count
 *       bits alias the current ones, still fails; because it covers the index and the client ISN,
 *       flipping any bit of the ACK's sequence or acknowledgment number fails too (where Linux's
 *       additive scheme lets the low bits choose another MSS). A blind forgery succeeds with
 *       probability 2^-24 per try.</li>
 *   <li>H0: the low 32 bits of SipHash-2-4 over the 4-tuple alone. Adding it and the client ISN
 *       (as Linux does) hides the count and index bits, so the ISNs stay unpredictable from outside
 *       as RFC 6528 requires of every ISN.</li>
 * </ul>
 * Both hashes use one 128-bit secret and differ in a domain byte; the messages are the 24-byte
 * words localIp | remoteIp, localPort | remotePort &lt;&lt; 16 | domain &lt;&lt; 32 | index &lt;&lt; 40,
 * and (count &lt;&lt; 32 | client ISN) for the MAC, 0 for H0.
 *
 * <p>What a cookie does not carry: window scale, SACK-permitted and timestamps from the SYN (Linux
 * hides some in the timestamp option). A connection made from a cookie runs without them.
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

    /**
     * The ISN of a SYN-ACK answering a SYN statelessly.
     *
     * @param now the time, nanoseconds
     * @param clientIsn the sequence number of the client's SYN
     * @param mss the MSS the client offered (536 if it sent no option, RFC 9293 3.7.1), already
     *     capped by the listener's own limit; values below 536 get 536, as in Linux
     */
    public int encode(long now, int localIp, int localPort, int remoteIp, int remotePort, int clientIsn,
            int mss) {
        long tick = Math.floorDiv(now, TICK_NS);
        int index = indexFor(mss);
        int mac = mac(localIp, localPort, remoteIp, remotePort, tick, clientIsn, index);
        int value = ((int) tick & COUNT_MASK) << COUNT_SHIFT | index << INDEX_SHIFT | mac;
        return value + h0(localIp, localPort, remoteIp, remotePort) + clientIsn;
    }

    /**
     * Checks the ACK that completes a handshake begun with a cookie.
     *
     * @param now the time, nanoseconds
     * @param clientIsnPlus1 the ACK segment's sequence number (the client ISN + 1)
     * @param ackMinus1 the ACK segment's acknowledgment number - 1 (the cookie, if genuine)
     * @return the MSS the cookie promised, or -1 if it is forged, damaged, for another 4-tuple or
     *     expired
     */
    public int decode(long now, int localIp, int localPort, int remoteIp, int remotePort, int clientIsnPlus1,
            int ackMinus1) {
        int clientIsn = clientIsnPlus1 - 1;
        int value = ackMinus1 - h0(localIp, localPort, remoteIp, remotePort) - clientIsn;
        long tick = Math.floorDiv(now, TICK_NS);
        int age = (int) ((tick - (value >>> COUNT_SHIFT)) & COUNT_MASK);
        if (age >= MAX_AGE_TICKS) {
            return -1;
        }
        int index = (value >>> INDEX_SHIFT) & INDEX_MASK;
        int mac = mac(localIp, localPort, remoteIp, remotePort, tick - age, clientIsn, index);
        if ((value & MAC_MASK) != mac) {
            return -1;
        }
        return MSS_TABLE[index];
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
            int index) {
        long word1 = SipHash.ports(localPort, remotePort) | DOMAIN_MAC | (long) index << 40;
        long word2 = (tick << 32) | (clientIsn & 0xffffffffL);
        return (int) SipHash.hash(k0, k1, SipHash.addresses(localIp, remoteIp), word1, word2) & MAC_MASK;
    }
}
