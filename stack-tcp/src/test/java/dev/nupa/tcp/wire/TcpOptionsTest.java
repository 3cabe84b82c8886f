package dev.nupa.tcp.wire;

import static dev.nupa.tcp.wire.WireBytes.hex;
import static dev.nupa.tcp.wire.WireBytes.seg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.wire.WireStatus;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TcpOptionsTest {
    private final TcpHeader tcp = new TcpHeader();
    private final TcpOptions o = new TcpOptions();

    /** The option bytes of a captured datagram (20-byte IP header, then the segment). */
    private static byte[] optionsOf(String datagram) {
        byte[] b = hex(datagram);
        int headerLength = ((b[32] & 0xFF) >>> 4) * 4;
        return Arrays.copyOfRange(b, 40, 20 + headerLength);
    }

    private int parse(String hexOptions) {
        byte[] b = hex(hexOptions);
        return o.parse(seg(b), 0, b.length);
    }

    private byte[] emitted(TcpOptions options) {
        byte[] out = new byte[options.length()];
        assertEquals(out.length, options.emit(seg(out), 0));
        return out;
    }

    @Test
    void linuxSynOptionsParseAndEmitByteForByte() {
        byte[] b = hex(Captured.SYN);
        assertEquals(WireStatus.OK, tcp.wrap(seg(b), 20, 40));
        assertEquals(OptionStatus.OK, o.parse(tcp));
        assertTrue(o.hasMss());
        assertEquals(65495, o.mss());
        assertTrue(o.sackPermitted());
        assertTrue(o.hasTimestamps());
        assertEquals(174265046, o.tsVal());
        assertEquals(0, o.tsEcr());
        assertTrue(o.hasWindowScale());
        assertEquals(7, o.windowScale());
        assertFalse(o.hasSackBlocks());
        assertEquals(0, o.sackBlockCount());
        assertEquals(20, o.parsedLength());
        assertEquals("mss 65495,sackOK,TS val 174265046 ecr 0,nop,wscale 7", o.toString());

        assertEquals(20, o.length());
        assertArrayEquals(optionsOf(Captured.SYN), emitted(o), "Linux's SYN layout");
    }

    @Test
    void setOnePerOptionBuildsTheSameSynOptions() {
        TcpOptions built = new TcpOptions().setMss(65495).setSackPermitted(true).setTimestamps(174265046, 0)
                .setWindowScale(7);
        assertArrayEquals(hex("0204ffd7 0402080a 0a6312d6 00000000 01030307"), emitted(built));
        assertArrayEquals(optionsOf(Captured.SYN_ACK),
                emitted(built.setTimestamps((int) 2812181366L, 174265046)));
    }

    @Test
    void timestampsAloneTakeTwoNopsInFrontAsLinuxSendsThem() {
        assertEquals(OptionStatus.OK, o.parse(seg(optionsOf(Captured.PSH_ACK)), 0, 12));
        assertTrue(o.hasTimestamps());
        assertEquals(174265047, o.tsVal());
        assertEquals((int) 2812181366L, o.tsEcr());
        assertFalse(o.hasMss() || o.hasWindowScale() || o.sackPermitted() || o.hasSackBlocks());
        assertArrayEquals(optionsOf(Captured.PSH_ACK), emitted(o));
        assertEquals("nop,nop,TS val 174265047 ecr 2812181366", o.toString());
    }

    @Test
    void linuxSackBlocksParseInOrderAndEmitByteForByte() {
        assertEquals(OptionStatus.OK, o.parse(seg(optionsOf(Captured.SACK_ONE)), 0, 24));
        assertEquals(1, o.sackBlockCount());
        assertEquals(1101, o.sackLeft(0));
        assertEquals(1201, o.sackRight(0));
        assertArrayEquals(optionsOf(Captured.SACK_ONE), emitted(o));

        assertEquals(OptionStatus.OK, o.parse(seg(optionsOf(Captured.SACK_TWO)), 0, 32));
        assertTrue(o.hasSackBlocks());
        assertEquals(2, o.sackBlockCount());
        assertEquals(1301, o.sackLeft(0));
        assertEquals(1401, o.sackRight(0));
        assertEquals(1101, o.sackLeft(1));
        assertEquals(1201, o.sackRight(1));
        assertEquals(1919179132, o.tsVal());
        assertEquals(2, o.tsEcr());
        assertEquals("nop,nop,TS val 1919179132 ecr 2,nop,nop,sack 2 {1301:1401}{1101:1201}", o.toString());
        assertArrayEquals(optionsOf(Captured.SACK_TWO), emitted(o));
        assertThrows(IndexOutOfBoundsException.class, () -> o.sackLeft(2));
        assertThrows(IndexOutOfBoundsException.class, () -> o.sackRight(-1));
    }

    @Test
    void fourSackBlocksParseAndEdgesKeepAll32Bits() {
        assertEquals(OptionStatus.OK, parse("0101 0522 ffffff00 00000010 80000000 80000001 00000001 00000002 7fffffff 80000000"));
        assertEquals(4, o.sackBlockCount());
        assertEquals(0xffffff00, o.sackLeft(0));
        assertEquals(0x10, o.sackRight(0), "a block across the wrap");
        assertEquals(0x80000000, o.sackLeft(1));
        assertEquals(0x7fffffff, o.sackLeft(3));
        assertEquals("nop,nop,sack 4 {4294967040:16}{2147483648:2147483649}{1:2}{2147483647:2147483648}", o.toString());
        assertEquals(36, o.length());
    }

    @Test
    void aLengthBelowTwoStopsParsingAndKeepsWhatCameBefore() {
        assertEquals(OptionStatus.BAD_LENGTH, parse("020405b4 0800 01030307"), "length 0");
        assertTrue(o.hasMss());
        assertEquals(1460, o.mss());
        assertFalse(o.hasWindowScale(), "the rest is ignored, as Linux does");
        assertEquals(4, o.parsedLength());

        assertEquals(OptionStatus.BAD_LENGTH, parse("01 0301 01010101"), "length 1");
        assertFalse(o.hasWindowScale());
        assertEquals(1, o.parsedLength());

        assertEquals(OptionStatus.BAD_LENGTH, parse("fe00"), "an unknown kind needs a length as well");
        assertEquals(OptionStatus.BAD_LENGTH, parse("fe01"));
    }

    @Test
    void anOptionRunningPastTheEndIsTruncated() {
        assertEquals(OptionStatus.TRUNCATED, parse("01030307 080a 00000001"), "timestamps cut short");
        assertTrue(o.hasWindowScale());
        assertFalse(o.hasTimestamps());
        assertEquals(4, o.parsedLength());

        assertEquals(OptionStatus.TRUNCATED, parse("010101 02"), "a kind without its length byte");
        assertEquals(3, o.parsedLength());
        assertEquals(OptionStatus.TRUNCATED, parse("fe05 0000"), "an unknown kind too");
        assertEquals(OptionStatus.TRUNCATED, parse("02ff 05b4"));
    }

    @Test
    void aKnownKindOfTheWrongLengthStopsParsing() {
        assertEquals(OptionStatus.WRONG_LENGTH, parse("020305 01010101"), "MSS of 3");
        assertFalse(o.hasMss());
        assertEquals(OptionStatus.WRONG_LENGTH, parse("0402 02050005b4 01010101"), "MSS of 5");
        assertTrue(o.sackPermitted(), "what came before is kept");
        assertFalse(o.hasMss());
        assertEquals(2, o.parsedLength());
        assertEquals(OptionStatus.WRONG_LENGTH, parse("03040700"), "window scale of 4");
        assertEquals(OptionStatus.WRONG_LENGTH, parse("040300"), "SACK-permitted of 3");
        assertEquals(OptionStatus.WRONG_LENGTH, parse("0808 00000001 0000"), "timestamps of 8");
        assertEquals(OptionStatus.WRONG_LENGTH, parse("0502"), "SACK without blocks");
        assertEquals(OptionStatus.WRONG_LENGTH, parse("0509 000000010000000200"), "SACK of 9");
        assertEquals(OptionStatus.WRONG_LENGTH, parse("0511 00000001000000020000000300000004 00"), "SACK of 17");
    }

    @Test
    void fiveSackBlocksAreRefused() {
        // 2 + 8 * 5 = 42 bytes: more than a header holds (RFC 2018 3), and the wrong length for SACK.
        StringBuilder five = new StringBuilder("052a");
        for (int i = 1; i <= 10; i++) {
            five.append(String.format("%08x", i));
        }
        assertEquals(OptionStatus.WRONG_LENGTH, parse(five.toString()));
        assertFalse(o.hasSackBlocks());

        // In a real header, data offset 15, the 40 option bytes end before the fifth block does.
        byte[] segment = new byte[60];
        segment[12] = (byte) 0xF0;
        System.arraycopy(hex(five.toString()), 0, segment, 20, 40);
        assertEquals(WireStatus.OK, tcp.wrap(seg(segment), 0, 60));
        assertEquals(OptionStatus.TRUNCATED, o.parse(tcp));
        assertFalse(o.hasSackBlocks());
        assertEquals(0, o.parsedLength());
    }

    @Test
    void aWindowScaleAbove14IsUsedAs14() {
        for (int shift : new int[] {15, 16, 255}) {
            assertEquals(OptionStatus.OK, parse("0303" + String.format("%02x", shift)));
            assertEquals(14, o.windowScale(), "RFC 7323 2.3, shift " + shift);
        }
        assertEquals(OptionStatus.OK, parse("030300"));
        assertEquals(0, o.windowScale());
        assertTrue(o.hasWindowScale());
    }

    @Test
    void unknownKindsAreSkippedByTheirLength() {
        // Multipath TCP (30), TCP Fast Open (34) with a cookie, an experiment (254) with its ExID.
        assertEquals(OptionStatus.OK, parse("1e04 0081 2202 220a 0102030405060708 fe06 f989 0000 01030302"));
        assertTrue(o.hasWindowScale());
        assertEquals(2, o.windowScale());
        assertEquals(26, o.parsedLength());
    }

    @Test
    void endOfOptionListEndsParsingAndTheRestIsPadding() {
        assertEquals(OptionStatus.OK, parse("020405b4 00 030307 0402"));
        assertEquals(1460, o.mss());
        assertFalse(o.hasWindowScale());
        assertFalse(o.sackPermitted());
        assertEquals(4, o.parsedLength());
        assertEquals(OptionStatus.OK, parse("00 ff"), "garbage after EOL is padding");
        assertEquals(0, o.parsedLength());
    }

    @Test
    void nopsAloneAndNothingAtAllAreFine() {
        assertEquals(OptionStatus.OK, parse("01010101"));
        assertEquals(4, o.parsedLength());
        assertEquals(OptionStatus.OK, o.parse(seg(new byte[0]), 0, 0));
        assertEquals(0, o.length());
        assertEquals("", o.toString());
        assertEquals(0, o.emit(seg(new byte[0]), 0));
    }

    @Test
    void aRepeatedOptionCountsOnceTheLastOneWins() {
        assertEquals(OptionStatus.OK, parse("020405b4 0204ffd7 0101050a 00000001 00000002 0101050a 00000003 00000004"));
        assertEquals(65495, o.mss());
        assertEquals(1, o.sackBlockCount());
        assertEquals(3, o.sackLeft(0));
    }

    @Test
    void parseClearsWhatTheHolderHeldAndNeverThrowsOnBadRanges() {
        o.setMss(1).setTimestamps(1, 2).addSackBlock(1, 2).setWindowScale(3).setSackPermitted(true);
        assertEquals(OptionStatus.OK, parse(""));
        assertEquals(new TcpOptions(), o);
        MemorySegment s = seg(new byte[10]);
        o.setMss(9);
        assertEquals(OptionStatus.TRUNCATED, o.parse(s, -1, 4));
        assertFalse(o.hasMss(), "a failed parse leaves nothing behind");
        assertEquals(OptionStatus.TRUNCATED, o.parse(s, 8, 4));
        assertEquals(OptionStatus.TRUNCATED, o.parse(s, 0, -1));
        assertEquals(OptionStatus.TRUNCATED, o.parse(s, Long.MAX_VALUE, 1));
        assertEquals(OptionStatus.TRUNCATED, o.parse(s, 0, Integer.MAX_VALUE));
        assertEquals(OptionStatus.OK, o.parse(s, 10, 0));
    }

    @Test
    void emitPadsEachOptionToAWordWithNopsInFront() {
        assertArrayEquals(hex("01010402"), emitted(new TcpOptions().setSackPermitted(true)));
        assertArrayEquals(hex("01030300"), emitted(new TcpOptions().setWindowScale(0)));
        assertArrayEquals(hex("02040000"), emitted(new TcpOptions().setMss(0)));
        assertArrayEquals(hex("0101050a 00000001 00000002"), emitted(new TcpOptions().addSackBlock(1, 2)));
        TcpOptions all = new TcpOptions().setMss(1460).setWindowScale(14).setSackPermitted(true)
                .setTimestamps(-1, 0x80000000).addSackBlock(10, 20);
        assertEquals(32, all.length());
        assertArrayEquals(hex("020405b4 0402080a ffffffff 80000000 0103030e 0101050a 0000000a 00000014"), emitted(all));
        assertEquals("mss 1460,sackOK,TS val 4294967295 ecr 2147483648,nop,wscale 14,nop,nop,sack 1 {10:20}",
                all.toString());
        assertEquals(OptionStatus.OK, o.parse(seg(emitted(all)), 0, 32));
        assertEquals(all, o);
        assertEquals(all.hashCode(), o.hashCode());
    }

    @Test
    void timestampsWithThreeSackBlocksFillTheFortyBytesExactly() {
        TcpOptions full = new TcpOptions().setTimestamps(1, 2).addSackBlock(1, 2).addSackBlock(3, 4).addSackBlock(5, 6);
        assertEquals(TcpOptions.MAX_LENGTH, full.length());
        byte[] out = emitted(full);
        assertEquals(OptionStatus.OK, o.parse(seg(out), 0, out.length));
        assertEquals(full, o);
    }

    @Test
    void emitRefusesOptionsThatDoNotFitAndWritesNothing() {
        TcpOptions tooMany = new TcpOptions().setMss(1460).setTimestamps(1, 2).addSackBlock(1, 2).addSackBlock(3, 4)
                .addSackBlock(5, 6);
        assertEquals(44, tooMany.length());
        byte[] out = new byte[64];
        Arrays.fill(out, (byte) 0x5A);
        var e = assertThrows(IllegalStateException.class, () -> tooMany.emit(seg(out), 0));
        assertEquals("TCP options need 44 bytes (MSS 4, timestamps 12, SACK with 3 blocks 28), at most 40 fit in a header",
                e.getMessage());
        byte[] untouched = new byte[64];
        Arrays.fill(untouched, (byte) 0x5A);
        assertArrayEquals(untouched, out);

        TcpOptions fourWithTimestamps = new TcpOptions().setTimestamps(1, 2).setSackPermitted(true);
        for (int i = 0; i < 4; i++) {
            fourWithTimestamps.addSackBlock(i, i + 1);
        }
        var e2 = assertThrows(IllegalStateException.class, () -> fourWithTimestamps.emit(seg(out), 0));
        assertTrue(e2.getMessage().contains("SACK-permitted and timestamps 12, SACK with 4 blocks 36"), e2.getMessage());

        TcpOptions fits = new TcpOptions().setMss(1);
        assertThrows(IndexOutOfBoundsException.class, () -> fits.emit(seg(out), 61));
        assertArrayEquals(untouched, out);
    }

    @Test
    void settersRefuseWhatCannotBeSent() {
        assertThrows(IllegalArgumentException.class, () -> o.setMss(-1));
        assertThrows(IllegalArgumentException.class, () -> o.setMss(65536));
        assertThrows(IllegalArgumentException.class, () -> o.setWindowScale(15), "RFC 7323 2.3");
        assertThrows(IllegalArgumentException.class, () -> o.setWindowScale(-1));
        for (int i = 0; i < TcpOptions.MAX_SACK_BLOCKS; i++) {
            o.addSackBlock(i, i);
        }
        assertThrows(IllegalStateException.class, () -> o.addSackBlock(9, 9));
        assertEquals(4, o.sackBlockCount());
    }

    @Test
    void clearingOneOptionLeavesTheOthers() {
        o.setMss(1460).setWindowScale(7).setTimestamps(5, 6).addSackBlock(1, 2).setSackPermitted(true);
        o.clearMss().clearWindowScale().clearTimestamps().clearSackBlocks();
        assertTrue(o.sackPermitted());
        assertEquals(new TcpOptions().setSackPermitted(true), o);
        assertEquals(4, o.length());
    }

    @Test
    void equalityComparesPresentOptionsOnlyAndCopyFromCopiesAll() {
        TcpOptions a = new TcpOptions().setMss(5).clearMss();
        assertEquals(new TcpOptions(), a);
        TcpOptions b = new TcpOptions().setTimestamps(1, 2).addSackBlock(3, 4);
        assertNotEquals(new TcpOptions().setTimestamps(1, 3).addSackBlock(3, 4), b);
        assertNotEquals(new TcpOptions().setTimestamps(1, 2).addSackBlock(3, 5), b);
        assertNotEquals(new TcpOptions().setTimestamps(1, 2), b);
        assertEquals(b, new TcpOptions().copyFrom(b));
        assertNotEquals(b, "nop");
    }

    @Test
    void statusNamesAreStable() {
        assertEquals("ok", OptionStatus.name(OptionStatus.OK));
        assertEquals("truncated", OptionStatus.name(OptionStatus.TRUNCATED));
        assertEquals("bad-length", OptionStatus.name(OptionStatus.BAD_LENGTH));
        assertEquals("wrong-length", OptionStatus.name(OptionStatus.WRONG_LENGTH));
        assertEquals("unknown-4", OptionStatus.name(OptionStatus.COUNT));
    }
}
