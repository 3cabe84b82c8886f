package dev.nupa.tcp.wire;

import static dev.nupa.tcp.wire.WireBytes.LOCALHOST;
import static dev.nupa.tcp.wire.WireBytes.hex;
import static dev.nupa.tcp.wire.WireBytes.seg;
import static dev.nupa.tcp.wire.WireBytes.segmentSum;
import static dev.nupa.tcp.wire.WireBytes.u16;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;
import dev.nupa.tcp.wire.TcpRepr.SackBlock;
import dev.nupa.tcp.wire.TcpRepr.Timestamps;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class TcpReprTest {
    private final Ipv4Header ip = new Ipv4Header();
    private final TcpHeader tcp = new TcpHeader();
    private final TcpOptions options = new TcpOptions();

    private TcpRepr parseCaptured(byte[] datagram) {
        assertEquals(WireStatus.OK, ip.wrap(seg(datagram), 0, datagram.length));
        assertEquals(WireStatus.OK, tcp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength(), ip.sourceAddress(),
                ip.destinationAddress(), true));
        assertEquals(OptionStatus.OK, options.parse(tcp));
        return TcpRepr.parse(tcp, options);
    }

    /**
     * Parses a captured datagram, emits the Repr with the data into a fresh buffer at offset 3 and
     * expects the very bytes Linux sent: the option layout is Linux's, so nothing differs.
     */
    private TcpRepr reEmitsByteForByte(String captured) {
        byte[] b = hex(captured);
        TcpRepr r = parseCaptured(b);
        int length = b.length - 20;
        byte[] out = new byte[3 + length + 2];
        r.emitInto(seg(out), 3, ip.sourceAddress(), ip.destinationAddress(), seg(b), tcp.payloadOffset(),
                tcp.payloadLength(), true);
        assertArrayEquals(Arrays.copyOfRange(b, 20, b.length), Arrays.copyOfRange(out, 3, 3 + length), r.toString());
        assertEquals(0xFFFF, segmentSum(out, 3, length, ip.sourceAddress(), ip.destinationAddress()));
        assertEquals(tcp.headerLength(), r.headerLength());
        return r;
    }

    @Test
    void linuxSyn() {
        TcpRepr r = reEmitsByteForByte(Captured.SYN);
        assertEquals(new TcpRepr(41000, 5001, (int) 3656746547L, 0, TcpHeader.SYN, 65495, 0, 65495, 7, true,
                new Timestamps(174265046, 0), List.of()), r);
        assertEquals("41000 > 5001: Flags [S], seq 3656746547, win 65495, "
                + "options [mss 65495,sackOK,TS val 174265046 ecr 0,nop,wscale 7]", r.toString());
    }

    @Test
    void linuxSynAck() {
        TcpRepr r = reEmitsByteForByte(Captured.SYN_ACK);
        assertEquals(new TcpRepr(5001, 41000, (int) 2659705077L, (int) 3656746548L, TcpHeader.SYN | TcpHeader.ACK,
                65483, 0, 65495, 7, true, new Timestamps((int) 2812181366L, 174265046), List.of()), r);
        assertEquals("5001 > 41000: Flags [S.], seq 2659705077, ack 3656746548, win 65483, "
                + "options [mss 65495,sackOK,TS val 2812181366 ecr 174265046,nop,wscale 7]", r.toString());
    }

    @Test
    void linuxPshAckCarriesItsData() {
        TcpRepr r = reEmitsByteForByte(Captured.PSH_ACK);
        assertEquals("41000 > 5001: Flags [P.], seq 3656746548, ack 2659705078, win 512, "
                + "options [nop,nop,TS val 174265047 ecr 2812181366]", r.toString());
        assertEquals(-1, r.mss());
        assertEquals(-1, r.windowScale());
    }

    @Test
    void linuxFinRstAckAndSack() {
        assertEquals("41000 > 5001: Flags [F.], seq 3656746554, ack 2659705078, win 512, "
                + "options [nop,nop,TS val 174265097 ecr 2812181366]", reEmitsByteForByte(Captured.FIN_ACK).toString());
        assertEquals("5001 > 41001: Flags [R.], seq 3268186949, ack 2287631233, win 512, "
                + "options [nop,nop,TS val 3077993011 ecr 2093893474]", reEmitsByteForByte(Captured.RST_ACK).toString());
        assertEquals(TcpHeader.ACK, reEmitsByteForByte(Captured.ACK).flags());
        assertEquals(List.of(new SackBlock(1101, 1201)), reEmitsByteForByte(Captured.SACK_ONE).sackBlocks());
        TcpRepr two = reEmitsByteForByte(Captured.SACK_TWO);
        assertEquals(List.of(new SackBlock(1301, 1401), new SackBlock(1101, 1201)), two.sackBlocks());
        assertEquals("5003 > 40000: Flags [.], seq 284854249, ack 1001, win 510, "
                + "options [nop,nop,TS val 1919179132 ecr 2,nop,nop,sack 2 {1301:1401}{1101:1201}]", two.toString());
    }

    @Test
    void withoutChecksumTheFieldIsZero() {
        byte[] out = new byte[26];
        new TcpRepr(1, 2, 3, 4, TcpHeader.PSH | TcpHeader.ACK, 5).emitInto(seg(out), 0, LOCALHOST, LOCALHOST,
                seg(hex("616263646566")), 0, 6, false);
        assertArrayEquals(hex("0001 0002 00000003 00000004 5018 0005 0000 0000 616263646566"), out);
    }

    @Test
    void dataAlreadyInPlaceIsLeftWhereItIs() {
        byte[] out = new byte[40];
        System.arraycopy(hex("68656c6c6f"), 0, out, 24, 5);
        MemorySegment s = seg(out);
        TcpRepr r = new TcpRepr(7, 9, 100, 200, TcpHeader.ACK, 1000, 0, 1460, -1, false, null, List.of());
        assertEquals(24, r.headerLength());
        r.emitInto(s, 0, LOCALHOST, LOCALHOST, s, 24, 5, true);
        assertEquals(WireStatus.OK, tcp.wrap(s, 0, 29, LOCALHOST, LOCALHOST, true));
        assertEquals("hello", new String(out, 24, 5));
        assertEquals(OptionStatus.OK, options.parse(tcp));
        assertEquals(r, TcpRepr.parse(tcp, options));
    }

    @Test
    void dataOverlappingItsDestinationIsMovedIntact() {
        // The data starts where the header will go: MemorySegment.copy moves it as through a temporary.
        byte[] out = new byte[40];
        System.arraycopy(hex("0102030405060708090a"), 0, out, 0, 10);
        MemorySegment s = seg(out);
        new TcpRepr(7, 9, 1, 2, TcpHeader.ACK, 3).emitInto(s, 0, LOCALHOST, LOCALHOST, s, 0, 10, true);
        assertArrayEquals(hex("0102030405060708090a"), Arrays.copyOfRange(out, 20, 30));
        assertEquals(WireStatus.OK, tcp.wrap(s, 0, 30, LOCALHOST, LOCALHOST, true));
    }

    @Test
    void urgentPointerAndEveryFlagShowLikeTcpdump() {
        TcpRepr r = new TcpRepr(1, 2, -1, -2, 0xFF, 0, 7, -1, -1, false, null, List.of());
        assertEquals("1 > 2: Flags [FSRP.UEW], seq 4294967295, ack 4294967294, win 0, urg 7", r.toString());
        assertEquals("none", TcpRepr.flagLetters(0));
        assertEquals("S.", TcpRepr.flagLetters(TcpHeader.SYN | TcpHeader.ACK));
        byte[] out = new byte[20];
        r.emitInto(seg(out), 0, 1, 2, null, 0, 0, true);
        assertEquals(WireStatus.OK, tcp.wrap(seg(out), 0, 20, 1, 2, true));
        assertEquals(OptionStatus.OK, options.parse(tcp));
        assertEquals(r, TcpRepr.parse(tcp, options));
        assertEquals(7, u16(out, 18));
    }

    @Test
    void theConstructorRefusesValuesTheHeaderCannotCarry() {
        assertThrows(IllegalArgumentException.class, () -> new TcpRepr(65536, 1, 0, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new TcpRepr(1, -1, 0, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new TcpRepr(1, 1, 0, 0, 256, 0));
        assertThrows(IllegalArgumentException.class, () -> new TcpRepr(1, 1, 0, 0, 0, 65536));
        assertThrows(IllegalArgumentException.class,
                () -> new TcpRepr(1, 1, 0, 0, 0, 0, 65536, -1, -1, false, null, List.of()));
        assertThrows(IllegalArgumentException.class,
                () -> new TcpRepr(1, 1, 0, 0, 0, 0, 0, -2, -1, false, null, List.of()));
        assertThrows(IllegalArgumentException.class,
                () -> new TcpRepr(1, 1, 0, 0, 0, 0, 0, 65536, -1, false, null, List.of()));
        assertThrows(IllegalArgumentException.class,
                () -> new TcpRepr(1, 1, 0, 0, 0, 0, 0, -1, 15, false, null, List.of()), "RFC 7323 2.3");
        List<SackBlock> five = List.of(new SackBlock(1, 2), new SackBlock(3, 4), new SackBlock(5, 6),
                new SackBlock(7, 8), new SackBlock(9, 10));
        assertThrows(IllegalArgumentException.class,
                () -> new TcpRepr(1, 1, 0, 0, 0, 0, 0, -1, -1, false, null, five));
        new TcpRepr(0, 65535, 0, 0, 255, 65535, 65535, 65535, 14, true, new Timestamps(0, 0), five.subList(0, 4));
    }

    @Test
    void optionsThatDoNotFitAreRefusedWhenEmittingAndNothingIsWritten() {
        List<SackBlock> four = List.of(new SackBlock(1, 2), new SackBlock(3, 4), new SackBlock(5, 6), new SackBlock(7, 8));
        TcpRepr r = new TcpRepr(1, 1, 0, 0, TcpHeader.ACK, 0, 0, -1, -1, false, new Timestamps(1, 2), four);
        assertEquals(68, r.headerLength());
        byte[] out = new byte[100];
        var e = assertThrows(IllegalStateException.class,
                () -> r.emitInto(seg(out), 0, 1, 2, seg(new byte[4]), 0, 4, true));
        assertEquals("TCP options need 48 bytes (timestamps 12, SACK with 4 blocks 36), at most 40 fit in a header",
                e.getMessage());
        assertArrayEquals(new byte[100], out);
    }

    @Test
    void emitRefusesASegmentWithoutRoom() {
        TcpRepr r = new TcpRepr(1, 2, 3, 4, TcpHeader.ACK, 5);
        byte[] out = new byte[25];
        assertThrows(IndexOutOfBoundsException.class, () -> r.emitInto(seg(out), 0, 1, 2, seg(new byte[6]), 0, 6, true));
        assertThrows(IndexOutOfBoundsException.class, () -> r.emitInto(seg(out), 6, 1, 2, null, 0, 0, true));
        assertThrows(IllegalArgumentException.class, () -> r.emitInto(seg(out), 0, 1, 2, null, 0, -1, true));
        assertArrayEquals(new byte[25], out);
    }

    @Test
    void emitThroughAViewWithAKeptScratchHolder() {
        byte[] b = hex(Captured.SYN);
        TcpRepr r = parseCaptured(b);
        byte[] out = new byte[40];
        TcpHeader view = new TcpHeader();
        view.wrapForWrite(seg(out), 0, 40);
        r.emit(view, new TcpOptions(), LOCALHOST, LOCALHOST, true);
        assertArrayEquals(Arrays.copyOfRange(b, 20, 60), out);
    }
}
