package dev.nupa.tcp;

import java.security.SecureRandom;

/**
 * Initial sequence numbers by RFC 6528 section 3: ISN = M + F(localip, localport, remoteip,
 * remoteport, secretkey).
 *
 * <ul>
 *   <li>M is the 4-microsecond timer of RFC 9293 3.4.1 (and RFC 6528 section 3): now / 4000 ns,
 *       modulo 2^32, so it wraps every 2^32 * 4 us, about 4.77 hours. {@code now} may have any origin
 *       (System.nanoTime's is arbitrary): only its differences matter, which keeps the ISNs of one
 *       4-tuple increasing with time, as the reuse of a connection in TIME-WAIT needs.</li>
 *   <li>F is SipHash-2-4 under a 128-bit secret, truncated to its low 32 bits, over the 24-byte
 *       message localIp | remoteIp (first word), localPort | remotePort &lt;&lt; 16 (second word),
 *       0 (third word), every word little-endian. F hides the timer behind a per-4-tuple offset, so
 *       an off-path attacker cannot predict the ISN of a connection it cannot observe (RFC 6528
 *       sections 1 and 3; SipHash in place of the MD5 the RFC offers as an example).</li>
 *   <li>The secret is drawn from {@link SecureRandom} once and kept for the generator's life. RFC
 *       6528 section 3 asks for a secret that an attacker cannot learn; changing it while connections
 *       exist would break the per-4-tuple monotonicity above.</li>
 * </ul>
 *
 * <p>Immutable after construction: any thread may call {@link #isn}; it allocates nothing.
 */
public final class IsnGenerator {
    /** RFC 9293 3.4.1: the ISN clock ticks every 4 microseconds. */
    public static final long TICK_NS = 4_000L;

    private final long k0;
    private final long k1;

    /** A generator with a secret from {@link SecureRandom}. */
    public IsnGenerator() {
        this(new SecureRandom());
    }

    /** A generator with a secret drawn from {@code random}. */
    public IsnGenerator(SecureRandom random) {
        this(random.nextLong(), random.nextLong());
    }

    /**
     * A generator with a given secret (tests, or a secret shared by the nodes of one address).
     *
     * @param k0 secret key bytes 0-7, little-endian
     * @param k1 secret key bytes 8-15, little-endian
     */
    public IsnGenerator(long k0, long k1) {
        this.k0 = k0;
        this.k1 = k1;
    }

    /**
     * The ISN for a new connection.
     *
     * @param now the time, nanoseconds
     * @param localIp the local IPv4 address as an int (network order read big-endian)
     * @param localPort the local port, 0-65535 (higher bits ignored)
     * @param remoteIp the remote IPv4 address
     * @param remotePort the remote port
     */
    public int isn(long now, int localIp, int localPort, int remoteIp, int remotePort) {
        return clock(now) + offset(localIp, localPort, remoteIp, remotePort);
    }

    /** M: the 4-microsecond timer, low 32 bits. */
    static int clock(long now) {
        return (int) Math.floorDiv(now, TICK_NS);
    }

    /** F: the keyed per-4-tuple offset. */
    int offset(int localIp, int localPort, int remoteIp, int remotePort) {
        return (int) SipHash.hash(k0, k1, SipHash.addresses(localIp, remoteIp),
                SipHash.ports(localPort, remotePort), 0L);
    }
}
