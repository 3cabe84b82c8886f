package dev.nupa.roce;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.zip.CRC32;

/**
 * The RoCEv2 Invariant CRC (IBA vol 1 7.8.1 and annex A17.3.3; Linux rxe_icrc.c computes the
 * same): CRC-32 (the Ethernet polynomial, reflected, as {@link CRC32}) over
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
 * agrees, see IcrcTest.) Only the gateway computes it: the fabric carries no ICRC.
 *
 * <p>Only IPv4 is handled (the gateway's RoCEv2 is IPv4); IPv4 options, if any, are covered as
 * they are. Allocation-free: each thread keeps one {@link CRC32} and a small scratch array that
 * the masked headers and then the rest are copied through, so {@code CRC32.update(byte[])}, which
 * the JIT turns into the CPU's CRC instructions, does the work.
 */
public final class Icrc {
    /** ICRC bytes at the end of a RoCEv2 packet. */
    public static final int LENGTH = 4;
    /** The IANA port of RoCEv2. */
    public static final int UDP_PORT = 4791;

    private static final int UDP_HEADER = 8;
    private static final int MIN_IPV4_HEADER = 20;
    private static final int CHUNK = 2048;
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private static final class Scratch {
        final CRC32 crc = new CRC32();
        final byte[] buf = new byte[CHUNK];
        final MemorySegment seg = MemorySegment.ofArray(buf);
    }

    private Icrc() {
    }

    /**
     * The ICRC of the IPv4 datagram at {@code ipOffset} whose first {@code length} bytes (IPv4
     * header, UDP header, BTH, extension headers, payload, pad; the ICRC itself excluded) are
     * covered. Throws IllegalArgumentException when those bytes are not IPv4 + UDP + BTH or do not
     * lie inside {@code s}; {@link #verify} answers false instead.
     */
    public static int compute(MemorySegment s, long ipOffset, int length) {
        int ipHeader = headerLength(s, ipOffset, length);
        if (ipHeader < 0) {
            throw new IllegalArgumentException("not an IPv4 + UDP + BTH packet of " + length + " bytes at offset "
                    + ipOffset + " of a " + (s == null ? 0 : s.byteSize()) + "-byte segment");
        }
        return crc(s, ipOffset, length, ipHeader);
    }

    /**
     * Whether the 4 bytes after the first {@code length} bytes at {@code ipOffset} hold the ICRC
     * of those bytes. False, never an exception, for anything malformed.
     */
    public static boolean verify(MemorySegment s, long ipOffset, int length) {
        int ipHeader = headerLength(s, ipOffset, length);
        if (ipHeader < 0 || ipOffset + length > s.byteSize() - LENGTH) {
            return false;
        }
        return s.get(LE_INT, ipOffset + length) == crc(s, ipOffset, length, ipHeader);
    }

    /** Computes the ICRC of the first {@code length} bytes and stores it in the 4 bytes after them. */
    public static void write(MemorySegment s, long ipOffset, int length) {
        int icrc = compute(s, ipOffset, length);
        s.set(LE_INT, ipOffset + length, icrc);
    }

    /** The IPv4 header length, or -1 when the range is not (inside the segment) IPv4 + UDP + BTH. */
    private static int headerLength(MemorySegment s, long o, int length) {
        if (s == null || o < 0 || length < MIN_IPV4_HEADER + UDP_HEADER + Bth.LENGTH || o > s.byteSize() - length) {
            return -1;
        }
        int vihl = s.get(ValueLayout.JAVA_BYTE, o) & 0xFF;
        int ihl = (vihl & 0xF) * 4;
        if (vihl >>> 4 != 4 || ihl < MIN_IPV4_HEADER || length < ihl + UDP_HEADER + Bth.LENGTH) {
            return -1;
        }
        return ihl;
    }

    private static int crc(MemorySegment s, long o, int length, int ipHeader) {
        Scratch t = SCRATCH.get();
        CRC32 crc = t.crc;
        byte[] b = t.buf;
        crc.reset();
        // The masked part: 8 bytes of ones, then IPv4, UDP and BTH headers (at most 60 + 8 + 12 bytes).
        int masked = ipHeader + UDP_HEADER + Bth.LENGTH;
        java.util.Arrays.fill(b, 0, 8, (byte) 0xFF);
        MemorySegment.copy(s, o, t.seg, 8, masked);
        b[8 + 1] = (byte) 0xFF; // IPv4 TOS (DSCP, ECN)
        b[8 + 8] = (byte) 0xFF; // IPv4 TTL
        b[8 + 10] = (byte) 0xFF; // IPv4 header checksum
        b[8 + 11] = (byte) 0xFF;
        int udp = 8 + ipHeader;
        b[udp + 6] = (byte) 0xFF; // UDP checksum
        b[udp + 7] = (byte) 0xFF;
        b[udp + UDP_HEADER + 4] = (byte) 0xFF; // BTH FECN, BECN, reserved
        crc.update(b, 0, 8 + masked);
        long at = o + masked;
        long end = o + length;
        while (at < end) {
            int n = (int) Math.min(CHUNK, end - at);
            MemorySegment.copy(s, at, t.seg, 0, n);
            crc.update(b, 0, n);
            at += n;
        }
        return (int) crc.getValue();
    }
}
