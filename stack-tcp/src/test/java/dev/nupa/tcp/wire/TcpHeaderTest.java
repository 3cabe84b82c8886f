package dev.nupa.tcp.wire;

import static dev.nupa.tcp.wire.WireBytes.LOCALHOST;
import static dev.nupa.tcp.wire.WireBytes.hex;
import static dev.nupa.tcp.wire.WireBytes.naiveSum;
import static dev.nupa.tcp.wire.WireBytes.pseudoHeader;
import static dev.nupa.tcp.wire.WireBytes.seg;
import static dev.nupa.tcp.wire.WireBytes.segmentChecksum;
import static dev.nupa.tcp.wire.WireBytes.segmentSum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TcpHeaderTest {
    private static final int A = Ipv4Address.parse("10.0.0.1");
    private static final int B = Ipv4Address.parse("10.0.0.2");

    private final Ipv4Header ip = new Ipv4Header();
    private final TcpHeader tcp = new TcpHeader();

    /** Wraps a captured datagram's IP header, then its segment with checksum verification. */
    private int wrapCaptured(byte[] datagram) {
        assertEquals(WireStatus.OK, ip.wrap(seg(datagram), 0, datagram.length));
        assertEquals(Ipv4Header.PROTOCOL_TCP, ip.protocol());
        return tcp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength(), ip.sourceAddress(),
                ip.destinationAddress(), true);
    }

    /**
     * Every field of the RFC 9293 3.1 figure with a distinct value: ports 0x1234 and 0x5678, sequence
     * 0x89abcdef and acknowledgment 0xfedcba98 (both above 2^31, so sign bits matter), data offset 6
     * with all 4 reserved bits set, window 0xfffe, checksum 0xc0de, urgent pointer 0x8001, one option
     * word (MSS 536) and three data bytes.
     */
    @Test
    void fieldsSitWhereTheRfc9293FigurePutsThem() {
        byte[] b = hex("1234 5678 89abcdef fedcba98 6f 3f fffe c0de 8001 02040218 616263");
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 0, b.length));
        assertEquals(0x1234, tcp.sourcePort());
        assertEquals(0x5678, tcp.destinationPort());
        assertEquals(0x89abcdef, tcp.sequenceNumber());
        assertEquals(0xfedcba98, tcp.acknowledgmentNumber());
        assertEquals(24, tcp.headerLength());
        assertEquals(0xF, tcp.reserved());
        assertEquals(0x3F, tcp.flags(), "URG ACK PSH RST SYN FIN");
        assertEquals(0xfffe, tcp.window());
        assertEquals(0xc0de, tcp.checksum());
        assertEquals(0x8001, tcp.urgentPointer());
        assertEquals(20, tcp.optionsOffset());
        assertEquals(4, tcp.optionsLength());
        assertEquals(24, tcp.payloadOffset());
        assertEquals(3, tcp.payloadLength());
        assertEquals(27, tcp.length());
        assertEquals(3 + 1 + 1, tcp.sequenceLength(), "data, SYN and FIN (RFC 9293 3.4)");

        byte[] out = new byte[b.length];
        System.arraycopy(b, 20, out, 20, 7);
        assertTrue(tcp.wrapForWrite(seg(out), 0, out.length));
        tcp.setSourcePort(0x1234).setDestinationPort(0x5678).setSequenceNumber(0x89abcdef)
                .setAcknowledgmentNumber(0xfedcba98).setHeaderLength(24).setFlags(0x3F).setWindow(0xfffe)
                .setChecksum(0xc0de).setUrgentPointer(0x8001);
        b[12] = 0x60;
        assertEquals(Arrays.toString(b), Arrays.toString(out), "setters write the same bytes, reserved bits zero");
    }

    /** The control bits, left to right in the figure: CWR ECE URG ACK PSH RST SYN FIN (RFC 9293 3.1, RFC 3168). */
    @Test
    void eachFlagBitIsItsOwnHelper() {
        int[] bits = {TcpHeader.FIN, TcpHeader.SYN, TcpHeader.RST, TcpHeader.PSH, TcpHeader.ACK, TcpHeader.URG,
            TcpHeader.ECE, TcpHeader.CWR};
        for (int i = 0; i < 8; i++) {
            assertEquals(1 << i, bits[i]);
            byte[] b = new byte[20];
            b[12] = 0x50;
            b[13] = (byte) bits[i];
            assertEquals(WireStatus.OK, tcp.wrap(seg(b), 0, 20));
            boolean[] helpers = {tcp.isFin(), tcp.isSyn(), tcp.isRst(), tcp.isPsh(), tcp.isAck(), tcp.isUrg(),
                tcp.isEce(), tcp.isCwr()};
            for (int j = 0; j < 8; j++) {
                assertEquals(i == j, helpers[j], "bit " + i + " helper " + j);
            }
            assertTrue(tcp.hasFlags(bits[i]));
            assertFalse(tcp.hasFlags(bits[i] | bits[(i + 1) % 8]));
            assertEquals(0, tcp.reserved());
        }
    }

    @Test
    void linuxSynParsesAndItsChecksumCoversThePseudoHeader() {
        byte[] b = hex(Captured.SYN);
        assertEquals(0xFFFF, segmentSum(b, 20, 40, LOCALHOST, LOCALHOST), "independent check: the sum is ffff");
        assertEquals(WireStatus.OK, wrapCaptured(b));
        assertEquals(41000, tcp.sourcePort());
        assertEquals(5001, tcp.destinationPort());
        assertEquals((int) 3656746547L, tcp.sequenceNumber());
        assertEquals(0, tcp.acknowledgmentNumber());
        assertEquals(TcpHeader.SYN, tcp.flags());
        assertTrue(tcp.isSyn());
        assertFalse(tcp.isAck());
        assertEquals(40, tcp.headerLength());
        assertEquals(65495, tcp.window());
        assertEquals(0x1EEE, tcp.checksum());
        assertEquals(0x1EEE, tcp.computeChecksum(LOCALHOST, LOCALHOST));
        assertEquals(0, tcp.urgentPointer());
        assertEquals(40, tcp.optionsOffset());
        assertEquals(20, tcp.optionsLength());
        assertEquals(60, tcp.payloadOffset());
        assertEquals(0, tcp.payloadLength());
        assertEquals(1, tcp.sequenceLength(), "a SYN occupies one sequence number");
    }

    @Test
    void linuxLoopbackPartialChecksumIsThePseudoHeaderSumAndDoesNotVerify() {
        byte[] b = hex(Captured.SYN_PARTIAL_CHECKSUM);
        assertEquals(0xFE30, naiveSum(pseudoHeader(LOCALHOST, LOCALHOST, 40)), "what offload left in the field");
        assertEquals(WireStatus.BAD_CHECKSUM, wrapCaptured(b));
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 20, 40, LOCALHOST, LOCALHOST, false));
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 20, 40));
        assertEquals(0x1EEE, tcp.computeChecksum(LOCALHOST, LOCALHOST));
        tcp.fillChecksum(LOCALHOST, LOCALHOST);
        assertEquals(Arrays.toString(hex(Captured.SYN)), Arrays.toString(b));
    }

    @Test
    void linuxSynAck() {
        byte[] b = hex(Captured.SYN_ACK);
        assertEquals(0xFFFF, segmentSum(b, 20, 40, LOCALHOST, LOCALHOST));
        assertEquals(WireStatus.OK, wrapCaptured(b));
        assertEquals(5001, tcp.sourcePort());
        assertEquals(41000, tcp.destinationPort());
        assertEquals((int) 2659705077L, tcp.sequenceNumber());
        assertEquals((int) 3656746548L, tcp.acknowledgmentNumber());
        assertEquals(TcpHeader.SYN | TcpHeader.ACK, tcp.flags());
        assertEquals(65483, tcp.window());
        assertEquals(0x7C56, tcp.computeChecksum(LOCALHOST, LOCALHOST));
        assertEquals(1, tcp.sequenceLength());
    }

    @Test
    void linuxDataSegmentWithPshAck() {
        byte[] b = hex(Captured.PSH_ACK);
        assertEquals(0xFFFF, segmentSum(b, 20, 38, LOCALHOST, LOCALHOST));
        assertEquals(WireStatus.OK, wrapCaptured(b));
        assertEquals(TcpHeader.PSH | TcpHeader.ACK, tcp.flags());
        assertTrue(tcp.isPsh() && tcp.isAck());
        assertEquals((int) 3656746548L, tcp.sequenceNumber());
        assertEquals((int) 2659705078L, tcp.acknowledgmentNumber());
        assertEquals(512, tcp.window());
        assertEquals(32, tcp.headerLength());
        assertEquals(52, tcp.payloadOffset());
        assertEquals(6, tcp.payloadLength());
        assertEquals(6, tcp.sequenceLength());
        assertEquals("hello\n", new String(b, (int) tcp.payloadOffset(), tcp.payloadLength()));
        assertEquals(0x5F27, tcp.computeChecksum(LOCALHOST, LOCALHOST));
    }

    @Test
    void linuxFinRstAndPlainAck() {
        byte[] fin = hex(Captured.FIN_ACK);
        assertEquals(0xFFFF, segmentSum(fin, 20, 32, LOCALHOST, LOCALHOST));
        assertEquals(WireStatus.OK, wrapCaptured(fin));
        assertEquals(TcpHeader.FIN | TcpHeader.ACK, tcp.flags());
        assertEquals(1, tcp.sequenceLength(), "a FIN occupies one sequence number");

        byte[] rst = hex(Captured.RST_ACK);
        assertEquals(0xFFFF, segmentSum(rst, 20, 32, LOCALHOST, LOCALHOST));
        assertEquals(WireStatus.OK, wrapCaptured(rst));
        assertEquals(TcpHeader.RST | TcpHeader.ACK, tcp.flags());
        assertTrue(tcp.isRst());
        assertEquals(41001, tcp.destinationPort());
        assertEquals(0, tcp.sequenceLength());

        byte[] ack = hex(Captured.ACK);
        assertEquals(0xFFFF, segmentSum(ack, 20, 32, LOCALHOST, LOCALHOST), "the one full checksum Linux sent on lo");
        assertEquals(WireStatus.OK, wrapCaptured(ack));
        assertEquals(TcpHeader.ACK, tcp.flags());
        assertEquals(0xA241, tcp.checksum());
    }

    @Test
    void linuxAckWithSackBlocksFromTun() {
        byte[] b = hex(Captured.SACK_TWO);
        assertEquals(0xFFFF, segmentSum(b, 20, 52, A, B), "the kernel's own checksum, no offload");
        assertEquals(WireStatus.OK, wrapCaptured(b));
        assertEquals(5003, tcp.sourcePort());
        assertEquals(40000, tcp.destinationPort());
        assertEquals(1001, tcp.acknowledgmentNumber());
        assertEquals(510, tcp.window());
        assertEquals(52, tcp.headerLength());
        assertEquals(32, tcp.optionsLength());
        assertEquals(0, tcp.payloadLength());
        assertEquals(WireStatus.BAD_CHECKSUM, tcp.wrap(ip.segment(), 20, 52, LOCALHOST, B, true), "another source");
        assertEquals(WireStatus.OK, tcp.wrap(ip.segment(), 20, 52, B, A, true), "the sum does not see the order");
    }

    @Test
    void everyLengthShorterThanTheHeaderIsTruncated() {
        byte[] b = hex(Captured.PSH_ACK);
        for (int len = 0; len < 32; len++) {
            assertEquals(WireStatus.TRUNCATED, tcp.wrap(seg(b), 20, len), "length " + len);
            assertEquals(WireStatus.TRUNCATED, tcp.wrap(seg(b), 20, len, LOCALHOST, LOCALHOST, true), "length " + len);
        }
        for (int len = 32; len <= 38; len++) {
            assertEquals(WireStatus.OK, tcp.wrap(seg(b), 20, len), "length " + len);
            assertEquals(len - 32, tcp.payloadLength());
        }
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 20, 38, LOCALHOST, LOCALHOST, true));
        assertEquals(WireStatus.BAD_CHECKSUM, tcp.wrap(seg(b), 20, 37, LOCALHOST, LOCALHOST, true), "a byte short");
    }

    @Test
    void rangesOutsideTheSegmentAreTruncated() {
        byte[] b = hex(Captured.FIN_ACK);
        MemorySegment s = seg(b);
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, 21, 32), "one past the end");
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, -1, 32));
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, Long.MAX_VALUE, 20));
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, Long.MIN_VALUE, 20));
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, 20, Integer.MAX_VALUE));
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, 20, Integer.MIN_VALUE));
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(s, 20, -1));
        assertEquals(WireStatus.TRUNCATED, tcp.wrap(MemorySegment.NULL, 0, 20));
    }

    @Test
    void dataOffsetBelowFiveIsABadHeaderLength() {
        byte[] b = new byte[60];
        for (int words = 0; words < 5; words++) {
            b[12] = (byte) (words << 4);
            assertEquals(WireStatus.BAD_HEADER_LENGTH, tcp.wrap(seg(b), 0, 60), "data offset " + words);
            assertEquals(WireStatus.BAD_HEADER_LENGTH, tcp.wrap(seg(b), 0, 60, A, B, true), "data offset " + words);
        }
        // Data offset 16 (a 64-byte header) cannot be written in 4 bits: it wraps to 0.
        b[12] = (byte) (16 << 4);
        assertEquals(WireStatus.BAD_HEADER_LENGTH, tcp.wrap(seg(b), 0, 60));
        assertTrue(tcp.wrapForWrite(seg(b), 0, 60));
        tcp.setHeaderLength(64);
        assertEquals(WireStatus.BAD_HEADER_LENGTH, tcp.wrap(seg(b), 0, 60));
    }

    @Test
    void dataOffsetBeyondTheSegmentIsTruncatedAndFifteenWordsFit() {
        byte[] b = new byte[60];
        b[12] = (byte) 0xF0;
        for (int len = 20; len < 60; len++) {
            assertEquals(WireStatus.TRUNCATED, tcp.wrap(seg(b), 0, len), "data offset 15 in " + len + " bytes");
        }
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 0, 60));
        assertEquals(TcpHeader.MAX_HEADER, tcp.headerLength());
        assertEquals(40, tcp.optionsLength());
        assertEquals(0, tcp.payloadLength());
    }

    @Test
    void aSegmentLongerThanThePseudoHeaderCanCountIsABadLength() {
        byte[] b = new byte[TcpHeader.MAX_LENGTH + 1];
        b[12] = 0x50;
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 0, TcpHeader.MAX_LENGTH));
        assertEquals(WireStatus.BAD_LENGTH, tcp.wrap(seg(b), 0, TcpHeader.MAX_LENGTH + 1));
        assertFalse(tcp.wrapForWrite(seg(b), 0, TcpHeader.MAX_LENGTH + 1));
    }

    @Test
    void wrapForWriteRefusesRangesWithoutRoomForTwentyBytes() {
        MemorySegment s = seg(new byte[30]);
        assertFalse(tcp.wrapForWrite(s, 0, 19));
        assertFalse(tcp.wrapForWrite(s, 11, 20));
        assertFalse(tcp.wrapForWrite(s, -1, 20));
        assertTrue(tcp.wrapForWrite(s, 10, 20));
        assertEquals(10, tcp.offset());
        assertEquals(20, tcp.length());
    }

    /** RFC 9293 3.1: the checksum is mandatory, so zero is an ordinary value, sent and checked as 0 (unlike UDP). */
    @Test
    void aComputedZeroChecksumIsSentAsZeroAndAZeroFieldIsChecked() {
        byte[] b = new byte[22];
        assertTrue(tcp.wrapForWrite(seg(b), 0, 22));
        tcp.setSourcePort(1234).setDestinationPort(80).setSequenceNumber(1).setHeaderLength(20)
                .setFlags(TcpHeader.ACK).setWindow(100);
        // Two data bytes that make the sum ffff, so the checksum computes to 0.
        int w = ~naiveSum(WireBytes.concat(pseudoHeader(A, B, 22), b)) & 0xFFFF;
        WireBytes.putU16(b, 20, w);
        assertEquals(0, segmentChecksum(b, 0, 22, A, B), "the true checksum is 0");
        tcp.setChecksum(0xABCD).fillChecksum(A, B);
        assertEquals(0, tcp.checksum(), "sent as 0, not ffff");
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 0, 22, A, B, true));

        b[21] ^= 1;
        assertEquals(WireStatus.BAD_CHECKSUM, tcp.wrap(seg(b), 0, 22, A, B, true), "zero is not 'no checksum'");
    }

    @Test
    void oddLengthDataIsPaddedWithZeroForTheChecksumOnly() {
        byte[] b = new byte[20 + 7 + 1];
        b[27] = (byte) 0xAA; // a byte after the segment must not enter the checksum
        System.arraycopy(hex("01020304050607"), 0, b, 20, 7);
        assertTrue(tcp.wrapForWrite(seg(b), 0, 27));
        tcp.setSourcePort(7).setDestinationPort(7).setHeaderLength(20).setFlags(TcpHeader.PSH | TcpHeader.ACK)
                .fillChecksum(A, B);
        assertEquals(0xFFFF, segmentSum(b, 0, 27, A, B));
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 0, 27, A, B, true));
        assertEquals(7, tcp.payloadLength());
        assertEquals(segmentChecksum(b, 0, 27, A, B), tcp.computeChecksum(A, B));
    }

    @Test
    void aSegmentAtAnOddOffsetOfANativeSegmentVerifies() {
        byte[] b = hex(Captured.SACK_ONE);
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment s = arena.allocate(b.length + 3).asSlice(3);
            MemorySegment.copy(b, 0, s, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, b.length);
            assertEquals(WireStatus.OK, tcp.wrap(s, 20, b.length - 20, A, B, true));
            assertEquals(0x092D, tcp.computeChecksum(A, B));
        }
    }
}
