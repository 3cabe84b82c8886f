package dev.nupa.l2;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.zip.CRC32;

/**
 * RoCEv2 framing that more than one layer needs: the constants of {@code IPv4 | UDP 4791 | BTH | ... |
 * ICRC} and the Invariant CRC. The gateway (through {@code dev.nupa.roce.wire.Icrc}) and the pcap writer
 * ({@link PcapWriter}, which shows fabric RDMA frames as RoCEv2) share this one implementation; it
 * lives here, below both, because imports point down only.
 *
 * <p>The ICRC (IBA vol 1 7.8.1 and annex A17.3.3; Linux rxe_icrc.c computes the same) is CRC-32 (the
 * Ethernet polynomial, reflected, as {@link CRC32}) over
 *
 * <ol>
 *   <li>8 bytes of 0xFF standing for the LRH that RoCEv2 does not have,
 *   <li>the IPv4 header with TOS, TTL and header checksum set to all ones (routers change them),
 *   <li>the UDP header with the checksum set to all ones,
 *   <li>the BTH with byte 4 (FECN, BECN and the rest of IBA's Resv8a) set to all ones,
 *   <li>the extension headers, payload and pad as they are.
 * </ol>
 *
 * <p>On the wire the 4 ICRC bytes follow the pad and go least significant byte first, like an
 * Ethernet FCS: the CRC value 0x2a00fd82 is sent as {@code 82 fd 00 2a}. (rxe stores the inverted
 * CRC as a native u32 on a little-endian host; scapy packs it reversed; a ConnectX-4 capture
 * agrees, see RoceV2Test.) The fabric itself carries no ICRC.
 *
 * <p>Only IPv4 is handled; IPv4 options, if any, are covered as they are. Allocation-free: each
 * thread keeps one {@link CRC32} and a small scratch array that the masked headers and then the rest
 * are copied through, so {@code CRC32.update(byte[])}, which the JIT turns into the CPU's CRC
 * instructions, does the work.
 */
public final class RoceV2 {
    /** The IANA port of RoCEv2 (UDP destination port). */
    public static final int UDP_PORT = 4791;
    /** ICRC bytes at the end of a RoCEv2 packet. */
    public static final int ICRC_LENGTH = 4;
    /** The InfiniBand Base Transport Header. */
    public static final int BTH_LENGTH = 12;
    /** An IPv4 header without options. */
    public static final int IPV4_HEADER = 20;
    public static final int UDP_HEADER = 8;
    /** IPv4 (no options) + UDP: what precedes the BTH. */
    public static final int IPV4_UDP_HEADERS = IPV4_HEADER + UDP_HEADER;

    private static final int CHUNK = 2048;
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private static final class Scratch {
        final CRC32 crc = new CRC32();
        final byte[] buf = new byte[CHUNK];
        final MemorySegment seg = MemorySegment.ofArray(buf);
    }

    private RoceV2() {
    }

    /**
     * The ICRC of the IPv4 datagram at {@code ipOffset} whose first {@code length} bytes (IPv4
     * header, UDP header, BTH, extension headers, payload, pad; the ICRC itself excluded) are
     * covered. Throws IllegalArgumentException when those bytes are not IPv4 + UDP + BTH or do not
     * lie inside {@code s}; {@link #verifyIcrc} answers false instead.
     */
    public static int icrc(MemorySegment s, long ipOffset, int length) {
        int ipHeader = headerLength(s, ipOffset, length);
        if (ipHeader < 0) {
            throw new IllegalArgumentException("not an IPv4 + UDP + BTH packet of " + length + " bytes at offset "
                    + ipOffset + " of a " + (s == null ? 0 : s.byteSize()) + "-byte segment");
        }
        long transport = ipOffset + ipHeader + UDP_HEADER;
        return crc(s, ipOffset, ipHeader, s, transport, length - ipHeader - UDP_HEADER);
    }

    /**
     * The ICRC of a packet held in two pieces: the IPv4 and UDP headers ({@code ipUdpLength} bytes at
     * {@code headersOffset} of {@code headers}) and the InfiniBand part (BTH, extension headers,
     * payload and pad: {@code transportLength} bytes at {@code transportOffset} of {@code transport}).
     * For a writer that builds the headers in one place and finds the payload in another, such as
     * {@link PcapWriter}. Throws IllegalArgumentException when the pieces are not IPv4 + UDP and a BTH.
     */
    public static int icrc(MemorySegment headers, long headersOffset, int ipUdpLength,
                           MemorySegment transport, long transportOffset, int transportLength) {
        int ipHeader = ipUdpLength - UDP_HEADER;
        if (!ipv4(headers, headersOffset, ipHeader)) {
            throw new IllegalArgumentException("not an IPv4 + UDP header of " + ipUdpLength + " bytes");
        }
        if (transport == null || transportOffset < 0 || transportLength < BTH_LENGTH
                || transportOffset > transport.byteSize() - transportLength) {
            throw new IllegalArgumentException("no BTH in " + transportLength + " bytes at offset " + transportOffset);
        }
        return crc(headers, headersOffset, ipHeader, transport, transportOffset, transportLength);
    }

    /**
     * Whether the 4 bytes after the first {@code length} bytes at {@code ipOffset} hold the ICRC
     * of those bytes. False, never an exception, for anything malformed.
     */
    public static boolean verifyIcrc(MemorySegment s, long ipOffset, int length) {
        int ipHeader = headerLength(s, ipOffset, length);
        if (ipHeader < 0 || ipOffset + length > s.byteSize() - ICRC_LENGTH) {
            return false;
        }
        return s.get(LE_INT, ipOffset + length) == icrc(s, ipOffset, length);
    }

    /** Computes the ICRC of the first {@code length} bytes and stores it in the 4 bytes after them. */
    public static void writeIcrc(MemorySegment s, long ipOffset, int length) {
        int icrc = icrc(s, ipOffset, length);
        s.set(LE_INT, ipOffset + length, icrc);
    }

    /** Stores an ICRC value as it goes on the wire (least significant byte first). */
    public static void putIcrc(MemorySegment s, long offset, int icrc) {
        s.set(LE_INT, offset, icrc);
    }

    /** Whether the {@code ipHeader} bytes at {@code o} can be an IPv4 header of that length (inside {@code s}). */
    private static boolean ipv4(MemorySegment s, long o, int ipHeader) {
        if (s == null || o < 0 || ipHeader < IPV4_HEADER || o > s.byteSize() - ipHeader - UDP_HEADER) {
            return false;
        }
        int vihl = s.get(ValueLayout.JAVA_BYTE, o) & 0xFF;
        return vihl >>> 4 == 4 && (vihl & 0xF) * 4 == ipHeader;
    }

    /** The IPv4 header length, or -1 when the range is not (inside the segment) IPv4 + UDP + BTH. */
    private static int headerLength(MemorySegment s, long o, int length) {
        if (s == null || o < 0 || length < IPV4_UDP_HEADERS + BTH_LENGTH || o > s.byteSize() - length) {
            return -1;
        }
        int vihl = s.get(ValueLayout.JAVA_BYTE, o) & 0xFF;
        int ihl = (vihl & 0xF) * 4;
        if (vihl >>> 4 != 4 || ihl < IPV4_HEADER || length < ihl + UDP_HEADER + BTH_LENGTH) {
            return -1;
        }
        return ihl;
    }

    private static int crc(MemorySegment h, long o, int ipHeader, MemorySegment t, long to, int transportLength) {
        Scratch sc = SCRATCH.get();
        CRC32 crc = sc.crc;
        byte[] b = sc.buf;
        crc.reset();
        // The masked part: 8 bytes of ones, then IPv4, UDP and BTH headers (at most 60 + 8 + 12 bytes).
        Arrays.fill(b, 0, 8, (byte) 0xFF);
        MemorySegment.copy(h, o, sc.seg, 8, ipHeader + UDP_HEADER);
        int bth = 8 + ipHeader + UDP_HEADER;
        MemorySegment.copy(t, to, sc.seg, bth, BTH_LENGTH);
        b[8 + 1] = (byte) 0xFF; // IPv4 TOS (DSCP, ECN)
        b[8 + 8] = (byte) 0xFF; // IPv4 TTL
        b[8 + 10] = (byte) 0xFF; // IPv4 header checksum
        b[8 + 11] = (byte) 0xFF;
        b[bth - UDP_HEADER + 6] = (byte) 0xFF; // UDP checksum
        b[bth - UDP_HEADER + 7] = (byte) 0xFF;
        b[bth + 4] = (byte) 0xFF; // BTH FECN, BECN, reserved
        crc.update(b, 0, bth + BTH_LENGTH);
        long at = to + BTH_LENGTH;
        long end = to + transportLength;
        while (at < end) {
            int n = (int) Math.min(CHUNK, end - at);
            MemorySegment.copy(t, at, sc.seg, 0, n);
            crc.update(b, 0, n);
            at += n;
        }
        return (int) crc.getValue();
    }
}
