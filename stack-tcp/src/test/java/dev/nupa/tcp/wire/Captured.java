package dev.nupa.tcp.wire;

/**
 * Real TCP segments sent by the Linux 6.18 kernel on this kind of machine, as whole IPv4 datagrams
 * (20-byte IP header, then the segment). The tests that use them re-derive every checksum with
 * {@link WireBytes#naiveSum}, so the bytes are checked, not trusted.
 *
 * <p>Loopback ones ({@link #SYN} to {@link #RST_ACK}): a Python client 127.0.0.1:41000 talked to a
 * server on 127.0.0.1:5001 in a fresh network namespace (lo MTU 65536, Linux's default tcp_rmem
 * "4096 131072 6291456", hence MSS 65495 and window scale 7), captured with {@code tshark -i lo -w}.
 * On "lo" Linux leaves the checksum partial (offload, CHECKSUM_PARTIAL): the field holds only the
 * pseudo header's sum. Those fields are replaced here by the full checksum, computed independently
 * (Python, RFC 1071 over pseudo header and segment), and tshark with checksum validation on
 * decoded every segment as good, none malformed. The original partial values are named below.
 *
 * <p>SACK ones ({@link #SACK_ONE}, {@link #SACK_TWO}): a Linux listener on 10.0.0.1:5003 behind a
 * TUN device, whose peer 10.0.0.2:40000 was a userspace program; after the handshake (ISN 1000,
 * SACK permitted) it sent 100 bytes at 1101 and then 100 at 1301, leaving holes, and the kernel
 * answered each with a duplicate ACK of 1001 carrying SACK blocks. Nothing offloads on a TUN
 * device, so these checksums are the kernel's own.
 */
final class Captured {
    private Captured() {
    }

    /**
     * The client's SYN: seq 3656746547, win 65495, options [mss 65495,sackOK,TS val 174265046
     * ecr 0,nop,wscale 7] (Linux's SYN layout, 20 option bytes). Checksum 1eee; captured partial fe30.
     */
    static final String SYN = "4500003c 0eb7 4000 4006 2e03 7f000001 7f000001"
            + "a028 1389 d9f58633 00000000 a002 ffd7 1eee 0000"
            + "0204ffd7 0402080a 0a6312d6 00000000 01030307";

    /** {@link #SYN} as captured, with the partial checksum fe30 (the pseudo header's sum), which does not verify. */
    static final String SYN_PARTIAL_CHECKSUM = "4500003c 0eb7 4000 4006 2e03 7f000001 7f000001"
            + "a028 1389 d9f58633 00000000 a002 ffd7 fe30 0000"
            + "0204ffd7 0402080a 0a6312d6 00000000 01030307";

    /**
     * The server's SYN-ACK: seq 2659705077, ack 3656746548, win 65483, options [mss 65495,sackOK,
     * TS val 2812181366 ecr 174265046,nop,wscale 7]. Checksum 7c56; captured partial fe30.
     */
    static final String SYN_ACK = "4500003c 0000 4000 4006 3cba 7f000001 7f000001"
            + "1389 a028 9e87e0f5 d9f58634 a012 ffcb 7c56 0000"
            + "0204ffd7 0402080a a79e7b76 0a6312d6 01030307";

    /**
     * The client's data: [P.], seq 3656746548, ack 2659705078, win 512, options [nop,nop,TS val
     * 174265047 ecr 2812181366], 6 bytes "hello\n". Checksum 5f27; captured partial fe2e.
     */
    static final String PSH_ACK = "4500003a 0eb9 4000 4006 2e03 7f000001 7f000001"
            + "a028 1389 d9f58634 9e87e0f6 8018 0200 5f27 0000"
            + "0101080a 0a6312d7 a79e7b76"
            + "68656c6c6f0a";

    /** The client's close: [F.], seq 3656746554, ack 2659705078, win 512. Checksum a2d8; captured partial fe28. */
    static final String FIN_ACK = "45000034 0eba 4000 4006 2e08 7f000001 7f000001"
            + "a028 1389 d9f5863a 9e87e0f6 8011 0200 a2d8 0000"
            + "0101080a 0a631309 a79e7b76";

    /**
     * The client's last ACK of the server's FIN: [.], seq 3656746555, ack 2659705079. Linux sent this
     * one with a full checksum (a241) even on "lo", so it is exactly as captured.
     */
    static final String ACK = "45000034 0000 4000 4006 3cc2 7f000001 7f000001"
            + "a028 1389 d9f5863b 9e87e0f7 8010 0200 a241 0000"
            + "0101080a 0a63133b a79e7bda";

    /**
     * An abortive close (SO_LINGER 0) by the server of a second connection from port 41001: [R.],
     * seq 3268186949, ack 2287631233, win 512, options [nop,nop,TS val 3077993011 ecr 2093893474].
     * Checksum 7b3b; captured partial fe28.
     */
    static final String RST_ACK = "45000034 652f 4000 4006 d792 7f000001 7f000001"
            + "1389 a029 c2cc9345 885a7b81 8014 0200 7b3b 0000"
            + "0101080a b7767233 7cce4762";

    /**
     * 10.0.0.1:5003 > 10.0.0.2:40000 [.], seq 284854249, ack 1001, win 510, options [nop,nop,TS val
     * 1919179132 ecr 2,nop,nop,sack 1 {1101:1201}]: the answer to the first out-of-order segment.
     */
    static final String SACK_ONE = "45000040 0333 4000 4006 2383 0a000001 0a000002"
            + "138b 9c40 10fa87e9 000003e9 b010 01fe 092d 0000"
            + "0101080a 7264597c 00000002 0101050a 0000044d 000004b1";

    /**
     * The answer to the second: options [nop,nop,TS val 1919179132 ecr 2,nop,nop,sack 2
     * {1301:1401}{1101:1201}], the block that arrived last first (RFC 2018 4).
     */
    static final String SACK_TWO = "45000048 0334 4000 4006 237a 0a000001 0a000002"
            + "138b 9c40 10fa87e9 000003e9 d010 01fe de8e 0000"
            + "0101080a 7264597c 00000002 01010512 00000515 00000579 0000044d 000004b1";
}
