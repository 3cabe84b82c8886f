package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.ChecksumFuzzTest.referenceSum;
import static dev.nupa.ip.wire.ChecksumFuzzTest.u16;
import static dev.nupa.ip.wire.ChecksumFuzzTest.u32;
import static dev.nupa.ip.wire.Ipv4HeaderFuzzTest.bit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.nupa.ip.wire.Ipv4HeaderFuzzTest.Frame;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Fuzzes {@link UdpHeader} and {@link UdpRepr} (RFC 768): {@code wrap} never throws and returns
 * the status the reference allows; after OK every accessor agrees with the bytes and the datagram
 * lies inside the IP payload; the checksum over the pseudo header agrees with the reference; the
 * Repr emits (in front of the same payload), re-wraps with verification and parses to itself.
 * docs/fuzzing.md says how to run it; seeds live in {@code dev/nupa/ip/UdpFuzzTestInputs/udp/}.
 *
 * <p>Input: two control bytes ({@link Frame}), the IPv4 source and destination addresses of the
 * pseudo header (8 bytes), then the UDP datagram (the IP payload).
 */
class UdpFuzzTest {
    /** The most payload one IPv4 datagram can carry after the UDP header; UdpRepr refuses more. */
    private static final int MAX_PAYLOAD = Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER - UdpHeader.HEADER;

    private final UdpHeader udp = new UdpHeader();
    private final UdpHeader again = new UdpHeader();

    /** The RFC 768 pseudo header followed by {@code udpLength} bytes of the datagram at {@code o}. */
    static byte[] withPseudoHeader(byte[] b, int o, int udpLength, int src, int dst) {
        byte[] all = new byte[12 + udpLength];
        for (int i = 0; i < 4; i++) {
            all[i] = (byte) (src >>> (24 - 8 * i));
            all[4 + i] = (byte) (dst >>> (24 - 8 * i));
        }
        all[9] = Ipv4Header.PROTOCOL_UDP;
        all[10] = (byte) (udpLength >>> 8);
        all[11] = (byte) udpLength;
        System.arraycopy(b, o, all, 12, udpLength);
        return all;
    }

    static int allowedStatuses(byte[] b, long off, int len, int src, int dst, boolean verify) {
        if (len < UdpHeader.HEADER || off < 0 || off > (long) b.length - len) {
            return bit(WireStatus.TRUNCATED);
        }
        int o = (int) off;
        int udpLength = u16(b, o + 4);
        if (udpLength < UdpHeader.HEADER || udpLength > len) {
            return bit(WireStatus.BAD_LENGTH);
        }
        if (verify && u16(b, o + 6) != 0 && referenceSum(withPseudoHeader(b, o, udpLength, src, dst)) != 0xFFFF) {
            return bit(WireStatus.BAD_CHECKSUM);
        }
        return bit(WireStatus.OK);
    }

    @FuzzTest
    void udp(byte[] input) {
        Frame f = Frame.of(input, 8);
        byte[] addresses = Arrays.copyOf(f.extra(), 8);
        int src = u32(addresses, 0);
        int dst = u32(addresses, 4);
        MemorySegment seg = f.segment();
        for (long[] p : f.probes()) {
            long off = p[0];
            int len = (int) p[1];
            String where = " at offset " + off + " length " + len + " of " + f.buffer().length;
            int plain = udp.wrap(seg, off, len);
            assertTrue((allowedStatuses(f.buffer(), off, len, src, dst, false) & bit(plain)) != 0,
                    "wrap: " + WireStatus.name(plain) + where);
            int status = udp.wrap(seg, off, len, src, dst, f.verify());
            assertTrue((allowedStatuses(f.buffer(), off, len, src, dst, f.verify()) & bit(status)) != 0,
                    "wrap with checksum: " + WireStatus.name(status) + where);
            if (status == WireStatus.OK) {
                viewAgreesWithTheBytes(f.buffer(), (int) off, len, src, dst);
                if (udp.payloadLength() <= MAX_PAYLOAD) {
                    reprRoundTrips(f.buffer(), (int) off, src, dst, f.flag());
                } else {
                    assertThrows(IllegalArgumentException.class, () -> UdpRepr.parse(udp));
                }
            }
        }
    }

    private void viewAgreesWithTheBytes(byte[] b, int o, int len, int src, int dst) {
        int udpLength = u16(b, o + 4);
        assertEquals(u16(b, o), udp.sourcePort());
        assertEquals(u16(b, o + 2), udp.destinationPort());
        assertEquals(udpLength, udp.length());
        assertEquals(u16(b, o + 6), udp.checksum());
        assertEquals(o, udp.offset());
        assertEquals(o + UdpHeader.HEADER, udp.payloadOffset());
        assertEquals(udpLength - UdpHeader.HEADER, udp.payloadLength());
        assertTrue(udp.payloadLength() >= 0, "payload length");
        assertTrue(udp.payloadOffset() + udp.payloadLength() <= (long) o + len, "the datagram lies inside the IP payload");

        byte[] all = withPseudoHeader(b, o, udpLength, src, dst);
        assertEquals(udp.checksum() == 0 || referenceSum(all) == 0xFFFF, udp.verifyChecksum(src, dst));
        all[12 + 6] = 0;
        all[12 + 7] = 0;
        int want = ~referenceSum(all) & 0xFFFF;
        assertEquals(want == 0 ? 0xFFFF : want, udp.computeChecksum(src, dst), "RFC 768: a computed 0 is sent as ffff");
    }

    private void reprRoundTrips(byte[] b, int o, int src, int dst, boolean computeChecksum) {
        UdpRepr r = UdpRepr.parse(udp);
        assertEquals(r.length(), udp.length());
        int at = (o + 1) & 7;
        byte[] out = new byte[at + r.length() + 2];
        Arrays.fill(out, Frame.JUNK);
        System.arraycopy(b, (int) udp.payloadOffset(), out, at + UdpHeader.HEADER, r.payloadLength());
        MemorySegment outSeg = MemorySegment.ofArray(out);

        r.emitInto(outSeg, at, src, dst, computeChecksum);
        if (!computeChecksum) {
            assertEquals(0, u16(out, at + 6), "no checksum asked: the field says none (RFC 768)");
        }
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, r.length(), src, dst, true), r.toString());
        assertEquals(r, UdpRepr.parse(again));

        r.emitInto(outSeg, at, src, dst, true);
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, r.length(), src, dst, true), r.toString());
        assertEquals(r, UdpRepr.parse(again));
        int emitted = again.checksum();
        assertNotEquals(0, emitted, "a computed checksum is never sent as 0");
        assertEquals(0xFFFF, referenceSum(withPseudoHeader(out, at, r.length(), src, dst)), "the emitted checksum verifies");
        assertArrayEquals(Arrays.copyOfRange(b, o, o + 6), Arrays.copyOfRange(out, at, at + 6), "ports and length");
        int original = udp.checksum();
        if (original != 0 && udp.verifyChecksum(src, dst)) {
            assertEquals(original, emitted, "checksum of an identical datagram");
        }
    }
}
