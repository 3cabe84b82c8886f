package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.WireBytes.concat;
import static dev.nupa.ip.wire.WireBytes.hex;
import static dev.nupa.ip.wire.WireBytes.naiveSum;
import static dev.nupa.ip.wire.WireBytes.pseudoHeader;
import static dev.nupa.ip.wire.WireBytes.seg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class UdpTest {
    private static final int LOCALHOST = 0x7F000001;
    private static final int A = Ipv4Address.parse("10.0.0.1");
    private static final int B = Ipv4Address.parse("10.0.0.2");

    private final Ipv4Header ip = new Ipv4Header();
    private final UdpHeader udp = new UdpHeader();

    @Test
    void settersOnAWrappedHeaderShowInItsAccessors() {
        byte[] b = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33);
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 0, b.length)); // wrap reads the header once
        udp.setDestinationPort(53).setLength(12);
        assertEquals(53, udp.destinationPort());
        assertEquals(12, udp.length());
        assertEquals(4, udp.payloadLength());
        udp.fillChecksum(LOCALHOST, LOCALHOST);
        assertTrue(udp.verifyChecksum(LOCALHOST, LOCALHOST));
        udp.emit(1, 2, 13, 0);
        assertEquals(1, udp.sourcePort());
        assertEquals(0, udp.checksum());
    }

    @Test
    void emitWritesTheKernelsHeaderBytesInOneStore() {
        byte[] want = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 28);
        byte[] out = new byte[11];
        Arrays.fill(out, (byte) 0xEE);
        assertTrue(udp.wrapForWrite(seg(out), 3, 8));
        udp.emit(40000, 9, 13, 0x21B6);
        assertArrayEquals(want, Arrays.copyOfRange(out, 3, 11));
        assertEquals((byte) 0xEE, out[2], "bytes before the header are untouched");
    }

    @Test
    void helloDatagramParsesAndItsChecksum21b6CoversThePseudoHeader() {
        byte[] b = hex(Captured.UDP_HELLO);
        assertEquals(0xFFFF, naiveSum(concat(pseudoHeader(LOCALHOST, LOCALHOST, 17, 13), Arrays.copyOfRange(b, 20, 33))),
                "independent check: pseudo header + datagram sum to ffff");
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        assertEquals(WireStatus.OK, udp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength(),
                ip.sourceAddress(), ip.destinationAddress(), true));
        assertEquals(40000, udp.sourcePort());
        assertEquals(9, udp.destinationPort());
        assertEquals(13, udp.length());
        assertEquals(0x21B6, udp.checksum());
        assertEquals(0x21B6, udp.computeChecksum(LOCALHOST, LOCALHOST));
        assertEquals(28, udp.payloadOffset());
        assertEquals(5, udp.payloadLength());
        assertEquals("hello", new String(b, (int) udp.payloadOffset(), udp.payloadLength()));
        assertEquals(new UdpRepr(40000, 9, 5), UdpRepr.parse(udp));
    }

    @Test
    void reprEmitWritesTheHeaderBeforeThePayloadWithTheSameChecksum() {
        byte[] want = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33);
        byte[] out = new byte[13];
        System.arraycopy(want, 8, out, 8, 5);
        UdpRepr repr = new UdpRepr(40000, 9, 5);
        repr.emitInto(seg(out), 0, LOCALHOST, LOCALHOST, true);
        assertArrayEquals(want, out);
        assertEquals(8, repr.headerLength());
        assertEquals(13, repr.length());
    }

    @Test
    void linuxLoopbackPartialChecksumDoesNotVerify() {
        // Offload leaves only the pseudo-header sum in the field on "lo"; a real receiver must reject it.
        byte[] b = hex(Captured.UDP_HELLO_PARTIAL_CHECKSUM);
        assertEquals(WireStatus.BAD_CHECKSUM, udp.wrap(seg(b), 20, 13, LOCALHOST, LOCALHOST, true));
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 20, 13, LOCALHOST, LOCALHOST, false));
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 20, 13));
    }

    @Test
    void theChecksumDependsOnThePseudoHeaderAddresses() {
        byte[] b = hex(Captured.UDP_HELLO);
        assertEquals(WireStatus.BAD_CHECKSUM, udp.wrap(seg(b), 20, 13, A, LOCALHOST, true));
        assertEquals(WireStatus.BAD_CHECKSUM, udp.wrap(seg(b), 20, 13, LOCALHOST, B, true));
        assertFalse(udp.verifyChecksum(B, A));
        assertTrue(udp.verifyChecksum(LOCALHOST, LOCALHOST));
    }

    @Test
    void checksumZeroMeansNoneAndIsAcceptedEvenWithVerificationOn() {
        byte[] b = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33);
        b[6] = 0;
        b[7] = 0;
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 0, 13, A, B, true));
        assertTrue(udp.verifyChecksum(A, B));
    }

    @Test
    void emitWithChecksumOffSendsZero() {
        byte[] out = new byte[13];
        new UdpRepr(1, 2, 5).emitInto(seg(out), 0, A, B, false);
        assertEquals(0, WireBytes.u16(out, 6));
        assertArrayEquals(hex("0001 0002 000d 0000"), Arrays.copyOf(out, 8));
    }

    @Test
    void aComputedZeroChecksumIsSentAsFfff() {
        // Choose a 2-byte payload that makes the one's complement sum ffff, so the checksum computes to 0.
        byte[] b = new byte[10];
        UdpRepr repr = new UdpRepr(1234, 5678, 2);
        repr.emitInto(seg(b), 0, A, B, false);
        int sumWithoutPayload = naiveSum(concat(pseudoHeader(A, B, 17, 10), b));
        int w = ~sumWithoutPayload & 0xFFFF;
        b[8] = (byte) (w >>> 8);
        b[9] = (byte) w;
        assertEquals(0xFFFF, naiveSum(concat(pseudoHeader(A, B, 17, 10), b)) , "true checksum is 0");
        repr.emitInto(seg(b), 0, A, B, true);
        assertEquals(0xFFFF, WireBytes.u16(b, 6), "RFC 768: transmitted as all ones");
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 0, 10, A, B, true), "ffff is -0 and verifies");
    }

    @Test
    void oddLengthPayloadIsPaddedWithZeroForTheChecksumOnly() {
        byte[] b = new byte[8 + 7 + 1];
        b[15] = (byte) 0xAA; // a byte after the datagram must not enter the checksum
        System.arraycopy(hex("01020304050607"), 0, b, 8, 7);
        new UdpRepr(7, 7, 7).emitInto(seg(b), 0, A, B, true);
        assertEquals(0xFFFF, naiveSum(concat(pseudoHeader(A, B, 17, 15), Arrays.copyOf(b, 15))));
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 0, 16, A, B, true));
        assertEquals(7, udp.payloadLength());
    }

    @Test
    void fewerThan8BytesIsTruncated() {
        byte[] b = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33);
        for (int len = 0; len < 8; len++) {
            assertEquals(WireStatus.TRUNCATED, udp.wrap(seg(b), 0, len), "length " + len);
        }
        assertEquals(WireStatus.TRUNCATED, udp.wrap(seg(b), 6, 8));
        assertEquals(WireStatus.TRUNCATED, udp.wrap(seg(b), -2, 8));
    }

    @Test
    void udpLengthBelow8IsBadLength() {
        byte[] b = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33);
        for (int len = 0; len < 8; len++) {
            b[5] = (byte) len;
            assertEquals(WireStatus.BAD_LENGTH, udp.wrap(seg(b), 0, 13), "UDP length " + len);
        }
    }

    @Test
    void udpLengthBeyondTheIpPayloadIsBadLength() {
        byte[] b = Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33);
        assertEquals(WireStatus.BAD_LENGTH, udp.wrap(seg(b), 0, 12));
        b[5] = 14;
        assertEquals(WireStatus.BAD_LENGTH, udp.wrap(seg(b), 0, 13));
    }

    @Test
    void udpLengthShorterThanTheIpPayloadIsAcceptedAndTheRestIgnored() {
        byte[] b = concat(Arrays.copyOfRange(hex(Captured.UDP_HELLO), 20, 33), hex("deadbeef"));
        assertEquals(WireStatus.OK, udp.wrap(seg(b), 0, 17, LOCALHOST, LOCALHOST, true));
        assertEquals(5, udp.payloadLength());
    }

    @Test
    void reprRejectsOutOfRangePortsAndLengths() {
        assertThrows(IllegalArgumentException.class, () -> new UdpRepr(65536, 1, 0));
        assertThrows(IllegalArgumentException.class, () -> new UdpRepr(1, -1, 0));
        assertThrows(IllegalArgumentException.class, () -> new UdpRepr(1, 1, 65508));
        new UdpRepr(0, 65535, 65507);
        assertThrows(IndexOutOfBoundsException.class,
                () -> new UdpRepr(1, 1, 10).emitInto(MemorySegment.ofArray(new byte[17]), 0, A, B, true));
    }

    @Test
    void maximumSizeDatagramChecksumMatchesTheReference() {
        UdpRepr repr = new UdpRepr(53, 53, 65507);
        Ipv4Repr head = new Ipv4Repr(A, B, 17, repr.length(), 64);
        byte[] b = new byte[head.length()];
        new java.util.Random(65507).nextBytes(b);
        head.emitInto(seg(b), 0, true);
        repr.emitInto(seg(b), 20, A, B, true);
        assertEquals(0xFFFF, naiveSum(concat(pseudoHeader(A, B, 17, 65515), Arrays.copyOfRange(b, 20, b.length))));
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        assertEquals(WireStatus.OK, udp.wrap(seg(b), ip.payloadOffset(), ip.payloadLength(), A, B, true));
        assertEquals(repr, UdpRepr.parse(udp));
    }
}
