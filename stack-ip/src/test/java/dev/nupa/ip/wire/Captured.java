package dev.nupa.ip.wire;

/**
 * Real packets, captured from the Linux 6.x kernel on this kind of machine with an AF_PACKET socket on
 * "lo" (Ethernet header stripped). The test that uses each one re-derives its checksums with
 * {@link WireBytes#naiveSum}, so the bytes are checked, not trusted.
 */
final class Captured {
    private Captured() {
    }

    /**
     * An ICMP echo request 127.0.0.1 > 127.0.0.1, id 0x1234, seq 1, 32 data bytes
     * "abcdefghijklmnopqrstuvwabcdefghi" (the Windows ping pattern), sent through a raw socket: the
     * kernel wrote the IP header (id 0x4b64, DF, TTL 64, checksum f15a); the ICMP checksum 3b27.
     */
    static final String ECHO_REQUEST = "4500003c 4b64 4000 4001 f15a 7f000001 7f000001"
            + "0800 3b27 1234 0001 6162636465666768696a6b6c6d6e6f7071727374757677616263646566676869";

    /** The kernel's own reply to {@link #ECHO_REQUEST}: id 0x4b65, no DF, ICMP type 0, checksum 4327. */
    static final String ECHO_REPLY = "4500003c 4b65 0000 4001 315a 7f000001 7f000001"
            + "0000 4327 1234 0001 6162636465666768696a6b6c6d6e6f7071727374757677616263646566676869";

    /**
     * A UDP datagram 127.0.0.1:40000 > 127.0.0.1:9 carrying "hello". On "lo" Linux leaves the
     * checksum partial (offload, CHECKSUM_PARTIAL): the captured field fe20 is only the pseudo
     * header's sum, which does not verify.
     */
    static final String UDP_HELLO_PARTIAL_CHECKSUM = "45000021 d04f 4000 4011 6c7a 7f000001 7f000001"
            + "9c40 0009 000d fe20 68656c6c6f";

    /**
     * {@link #UDP_HELLO_PARTIAL_CHECKSUM} with the full checksum 21b6 in place of the partial one,
     * computed independently (Python, RFC 1071 over pseudo header + datagram) and re-checked in the test.
     */
    static final String UDP_HELLO = "45000021 d04f 4000 4011 6c7a 7f000001 7f000001"
            + "9c40 0009 000d 21b6 68656c6c6f";

    /**
     * The kernel's ICMP port unreachable (type 3 code 3) for {@link #UDP_HELLO_PARTIAL_CHECKSUM}: TOS
     * 0xc0 (DSCP 48, CS6, as Linux marks ICMP errors), no DF, ICMP checksum 1eb3; Linux quotes the
     * whole 33-byte datagram (RFC 1812 4.3.2.3 allows up to 576 bytes in all).
     */
    static final String PORT_UNREACHABLE = "45c0003d 4e2f 0000 4001 2dcf 7f000001 7f000001"
            + "0303 1eb3 00000000"
            + "45000021d04f400040116c7a7f0000017f000001 9c400009000dfe2068656c6c6f";

    /**
     * The IPv4 header checksum example used by Wikipedia ("IPv4 header checksum"): 192.168.0.1 >
     * 192.168.0.199, UDP, total length 115, DF, TTL 64, checksum b861.
     */
    static final String WIKIPEDIA_HEADER = "4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7";
}
