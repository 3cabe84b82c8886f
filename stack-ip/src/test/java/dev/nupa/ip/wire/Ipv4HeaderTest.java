package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.WireBytes.concat;
import static dev.nupa.ip.wire.WireBytes.hex;
import static dev.nupa.ip.wire.WireBytes.naiveSum;
import static dev.nupa.ip.wire.WireBytes.seg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class Ipv4HeaderTest {
    private final Ipv4Header ip = new Ipv4Header();

    @Test
    void wikipediaExampleHeaderHasChecksumB861() {
        byte[] b = concat(hex(Captured.WIKIPEDIA_HEADER), new byte[95]);
        assertEquals(0xFFFF, naiveSum(b, 0, 20), "independent check: a valid header sums to ffff");
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        assertEquals(0xB861, ip.headerChecksum());
        assertEquals(0xB861, ip.computeChecksum());
        assertTrue(ip.verifyChecksum());
        assertEquals(Ipv4Address.parse("192.168.0.1"), ip.sourceAddress());
        assertEquals(Ipv4Address.parse("192.168.0.199"), ip.destinationAddress());
        assertEquals(115, ip.totalLength());
        assertEquals(Ipv4Header.PROTOCOL_UDP, ip.protocol());
    }

    @Test
    void linuxEchoRequestHeaderParsesFieldByField() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        assertEquals(0xFFFF, naiveSum(b, 0, 20));
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        assertEquals(4, ip.version());
        assertEquals(20, ip.headerLength());
        assertEquals(0, ip.typeOfService());
        assertEquals(60, ip.totalLength());
        assertEquals(0x4B64, ip.identification());
        assertTrue(ip.dontFragment());
        assertFalse(ip.moreFragments());
        assertFalse(ip.reservedFlag());
        assertEquals(0, ip.fragmentOffset());
        assertFalse(ip.isFragment());
        assertEquals(64, ip.ttl());
        assertEquals(Ipv4Header.PROTOCOL_ICMP, ip.protocol());
        assertEquals(0xF15A, ip.headerChecksum());
        assertEquals(0x7F000001, ip.sourceAddress());
        assertEquals(0x7F000001, ip.destinationAddress());
        assertEquals(0, ip.optionsLength());
        assertEquals(20, ip.payloadOffset());
        assertEquals(40, ip.payloadLength());
        assertEquals(new Ipv4Repr(0x7F000001, 0x7F000001, 1, 40, 64, 0, 0, 0x4B64, true, false, 0), Ipv4Repr.parse(ip));
    }

    @Test
    void reprEmitReproducesTheKernelsHeaderBytesAndChecksum() {
        byte[] want = Arrays.copyOf(hex(Captured.ECHO_REQUEST), 20);
        Ipv4Repr repr = new Ipv4Repr(0x7F000001, 0x7F000001, 1, 40, 64, 0, 0, 0x4B64, true, false, 0);
        byte[] out = new byte[20];
        repr.emitInto(seg(out), 0, true);
        assertArrayEquals(want, out);
        assertEquals(20, repr.headerLength());
        assertEquals(60, repr.length());
    }

    @Test
    void settersOnAWrappedHeaderShowInItsAccessors() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length)); // wrap reads the header once
        ip.decrementTtl();
        assertEquals(63, ip.ttl());
        assertTrue(ip.verifyChecksum(), "the patched checksum (RFC 1624) is the one read back");
        ip.setTotalLength(40).setProtocol(17).setSourceAddress(0x0A000001).setFlagsAndFragmentOffset(false, true, 8);
        assertEquals(40, ip.totalLength());
        assertEquals(20, ip.payloadLength());
        assertEquals(17, ip.protocol());
        assertEquals(0x0A000001, ip.sourceAddress());
        assertTrue(ip.isFragment());
        assertEquals(8, ip.fragmentOffset());
        ip.fillChecksum();
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        assertEquals(63, ip.ttl());
        assertEquals(40, ip.totalLength());
    }

    @Test
    void emitWritesWhatTheSettersAndAFullChecksumWrite() {
        java.util.Random rnd = new java.util.Random(7);
        Ipv4Header bySetters = new Ipv4Header();
        for (int n = 0; n < 2000; n++) {
            int tos = rnd.nextInt(256), total = 20 + rnd.nextInt(65516), id = rnd.nextInt(65536), ttl = rnd.nextInt(256);
            int protocol = rnd.nextInt(256), src = rnd.nextInt(), dst = rnd.nextInt(), offset = rnd.nextInt(8192) * 8;
            boolean df = rnd.nextBoolean(), mf = rnd.nextBoolean();
            int at = rnd.nextInt(8); // any alignment
            byte[] a = new byte[28];
            byte[] b = new byte[28];
            assertTrue(ip.wrapForWrite(seg(a), at, 20));
            ip.emit(tos, total, id, Ipv4Header.flagsWord(df, mf, offset), ttl, protocol, src, dst);
            assertTrue(bySetters.wrapForWrite(seg(b), at, 20));
            bySetters.setVersionAndHeaderLength(20).setTypeOfService(tos).setTotalLength(total).setIdentification(id)
                    .setFlagsAndFragmentOffset(df, mf, offset).setTtl(ttl).setProtocol(protocol).setSourceAddress(src)
                    .setDestinationAddress(dst).fillChecksum();
            assertArrayEquals(b, a, "tos " + tos + " total " + total + " id " + id + " ttl " + ttl + " at " + at);
            assertEquals(0xFFFF, naiveSum(a, at, at + 20), "independent check: the emitted header sums to ffff");
        }
    }

    @Test
    void emitWithoutChecksumLeavesTheFieldZeroAndStillParsesWhenVerificationIsOff() {
        byte[] out = new byte[40];
        Ipv4Repr repr = new Ipv4Repr(0x0A000001, 0x0A000002, 17, 20, 1);
        repr.emitInto(seg(out), 0, false);
        assertEquals(0, WireBytes.u16(out, 10));
        assertEquals(WireStatus.BAD_CHECKSUM, ip.wrap(seg(out), 0, 40, true));
        assertEquals(WireStatus.OK, ip.wrap(seg(out), 0, 40, false));
        assertEquals(repr, Ipv4Repr.parse(ip));
    }

    @Test
    void emitAtAnOffsetInsideALargerBufferTouchesOnlyItsBytes() {
        byte[] out = new byte[64];
        Arrays.fill(out, (byte) 0xEE);
        Ipv4Repr repr = new Ipv4Repr(1, 2, 6, 0, 255, 46, 2, 65535, false, true, 65528);
        repr.emitInto(seg(out), 7, true);
        assertEquals((byte) 0xEE, out[6]);
        assertEquals((byte) 0xEE, out[27]);
        assertEquals(WireStatus.OK, ip.wrap(seg(out), 7, 20));
        assertEquals(repr, Ipv4Repr.parse(ip));
        assertThrows(IndexOutOfBoundsException.class, () -> repr.emitInto(seg(out), 50, true));
    }

    @Test
    void trailingLinkPaddingBeyondTotalLengthIsIgnored() {
        byte[] b = concat(hex(Captured.ECHO_REQUEST), new byte[18]);
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        assertEquals(40, ip.payloadLength());
        assertEquals(78, ip.bufferLength());
    }

    /** IHL 6: one 4-byte option, Router Alert (RFC 2113: 94 04 00 00), then 4 payload bytes; checksum filled. */
    private byte[] headerWithOption() {
        byte[] b = hex("46000028 0001 0000 4011 0000 0a000001 0a000002 94040000 01020304 00000000 00000000 00000000");
        assertTrue(ip.wrapForWrite(seg(b), 0, b.length));
        ip.fillChecksum();
        assertEquals(0xFFFF, naiveSum(b, 0, 24));
        return b;
    }

    @Test
    void optionsAreAcceptedAndSkipped() {
        byte[] b = headerWithOption();
        MemorySegment s = seg(b);
        assertEquals(WireStatus.OK, ip.wrap(s, 0, b.length));
        assertEquals(24, ip.headerLength());
        assertEquals(4, ip.optionsLength());
        assertEquals(24, ip.payloadOffset());
        assertEquals(16, ip.payloadLength());
        assertEquals(0x01020304, s.get(Checksum.BE_INT, ip.payloadOffset()));
        assertEquals(16, Ipv4Repr.parse(ip).payloadLength());
    }

    /** Any one bit flipped in the fixed header or in an option fails the wrap (RFC 791 3.1 checksum). */
    @Test
    void aBitFlippedAnywhereInTheHeaderOrItsOptionsIsCaught() {
        byte[] b = headerWithOption();
        MemorySegment s = seg(b);
        assertEquals(WireStatus.OK, ip.wrap(s, 0, b.length, true));
        for (int i = 0; i < 24; i++) {
            for (int bit = 0; bit < 8; bit++) {
                b[i] ^= (byte) (1 << bit);
                assertNotEquals(WireStatus.OK, ip.wrap(s, 0, b.length, true), "byte " + i + " bit " + bit);
                b[i] ^= (byte) (1 << bit);
            }
        }
        b[20] ^= 0x01; // an option byte: only the checksum can tell
        assertEquals(WireStatus.BAD_CHECKSUM, ip.wrap(s, 0, b.length, true));
        assertEquals(WireStatus.OK, ip.wrap(s, 0, b.length, false), "unverified, the same header is taken");
    }

    @Test
    void fewerThan20BytesIsTruncated() {
        byte[] b = hex(Captured.WIKIPEDIA_HEADER);
        for (int len = 0; len < 20; len++) {
            assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), 0, len), "length " + len);
        }
    }

    @Test
    void totalLengthBeyondTheBufferIsTruncated() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), 0, 59));
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, 60));
    }

    @Test
    void headerLengthBeyondTheBufferIsTruncated() {
        byte[] b = hex(Captured.WIKIPEDIA_HEADER);
        b[0] = 0x46;
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), 0, 20, false));
    }

    @Test
    void aRangeOutsideTheSegmentIsTruncatedNotAnException() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), 1, 60));
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), -1, 20));
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), Long.MAX_VALUE, 20));
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), 0, -5));
        assertFalse(ip.wrapForWrite(seg(b), 41, 20));
    }

    @Test
    void versionOtherThan4IsBadVersion() {
        byte[] b = hex(Captured.WIKIPEDIA_HEADER);
        for (int v : new int[] {0, 5, 6, 15}) {
            b[0] = (byte) (v << 4 | 5);
            assertEquals(WireStatus.BAD_VERSION, ip.wrap(seg(b), 0, 20, false), "version " + v);
        }
    }

    @Test
    void ihlBelow5IsBadHeaderLength() {
        byte[] b = hex(Captured.WIKIPEDIA_HEADER);
        for (int ihl = 0; ihl < 5; ihl++) {
            b[0] = (byte) (0x40 | ihl);
            assertEquals(WireStatus.BAD_HEADER_LENGTH, ip.wrap(seg(b), 0, 20, false), "IHL " + ihl);
        }
    }

    @Test
    void totalLengthBelowTheHeaderLengthIsBadTotalLength() {
        byte[] b = concat(hex(Captured.WIKIPEDIA_HEADER), new byte[100]);
        for (int total : new int[] {0, 1, 19}) {
            b[2] = 0;
            b[3] = (byte) total;
            assertEquals(WireStatus.BAD_TOTAL_LENGTH, ip.wrap(seg(b), 0, b.length, false), "total " + total);
        }
        b[0] = 0x46; // IHL 6: 24 bytes of header, total length 20 < 24
        b[3] = 20;
        assertEquals(WireStatus.BAD_TOTAL_LENGTH, ip.wrap(seg(b), 0, b.length, false));
    }

    @Test
    void aCorruptedHeaderIsBadChecksumOnlyWhenVerificationIsOn() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        b[8] = 63; // TTL changed without fixing the checksum
        assertEquals(WireStatus.BAD_CHECKSUM, ip.wrap(seg(b), 0, b.length));
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length, false));
        assertFalse(ip.verifyChecksum());
        assertEquals(0xF25A, ip.computeChecksum(), "one less TTL unit in the high byte adds 0x0100 to the checksum");
    }

    @Test
    void payloadCorruptionDoesNotAffectTheHeaderChecksum() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        b[40] ^= 0x55;
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
    }

    @Test
    void flagsAndFragmentOffsetRoundTripInBytes() {
        byte[] out = new byte[20];
        Ipv4Repr frag = new Ipv4Repr(0x0A000001, 0x0A000002, 17, 0, 64, 0, 0, 777, false, true, 1480);
        frag.emitInto(seg(out), 0, true);
        assertEquals(0x2000 | 185, WireBytes.u16(out, 6), "MF and 1480/8 = 185 units");
        // Total length says 20 with no payload: a zero-length fragment still parses.
        assertEquals(WireStatus.OK, ip.wrap(seg(out), 0, 20));
        assertTrue(ip.moreFragments());
        assertEquals(1480, ip.fragmentOffset());
        assertTrue(ip.isFragment());
        assertEquals(frag, Ipv4Repr.parse(ip));

        Ipv4Repr last = new Ipv4Repr(0x0A000001, 0x0A000002, 17, 0, 64, 0, 0, 777, false, false, 2960);
        last.emitInto(seg(out), 0, true);
        ip.wrap(seg(out), 0, 20);
        assertTrue(ip.isFragment(), "offset alone makes a fragment");
        assertFalse(ip.moreFragments());
    }

    @Test
    void reservedFlagIsAcceptedAndReported() {
        byte[] b = concat(hex(Captured.WIKIPEDIA_HEADER), new byte[95]);
        MemorySegment s = seg(b);
        b[6] |= (byte) 0x80;
        ip.wrapForWrite(s, 0, 20);
        ip.fillChecksum();
        assertEquals(WireStatus.OK, ip.wrap(s, 0, b.length, true));
        assertTrue(ip.reservedFlag());
        assertTrue(ip.dontFragment());
    }

    @Test
    void decrementTtlKeepsTheChecksumValidIncrementally() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        ip.wrap(seg(b), 0, b.length);
        for (int ttl = 63; ttl >= 0; ttl--) {
            ip.decrementTtl();
            assertEquals(ttl, ip.ttl());
            assertTrue(ip.verifyChecksum(), "TTL " + ttl);
            assertEquals(0xFFFF, naiveSum(b, 0, 20));
        }
    }

    @Test
    void quotedHeaderMayClaimMoreThanTheQuotedBytes() {
        byte[] b = Arrays.copyOf(hex(Captured.ECHO_REQUEST), 28);
        assertEquals(WireStatus.TRUNCATED, ip.wrap(seg(b), 0, 28));
        assertEquals(WireStatus.OK, ip.wrapQuoted(seg(b), 0, 28));
        assertEquals(40, ip.payloadLength());
        assertEquals(8, ip.availablePayloadLength());
        b[0] = 0x55;
        assertEquals(WireStatus.BAD_VERSION, ip.wrapQuoted(seg(b), 0, 28));
    }

    @Test
    void reprRejectsOutOfRangeFieldsWithAMessageNamingTheField() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Ipv4Repr(1, 2, 17, 0, 256));
        assertTrue(e.getMessage().contains("TTL"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new Ipv4Repr(1, 2, 17, 65516, 64));
        assertTrue(e.getMessage().contains("payload length"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new Ipv4Repr(1, 2, 17, 0, 64, 0, 0, 0, false, true, 12));
        assertTrue(e.getMessage().contains("multiple of 8"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Ipv4Repr(1, 2, 256, 0, 64));
        assertThrows(IllegalArgumentException.class, () -> new Ipv4Repr(1, 2, 1, 0, 64, 64, 0, 0, false, false, 0));
        assertThrows(IllegalArgumentException.class, () -> new Ipv4Repr(1, 2, 1, 0, 64, 0, 4, 0, false, false, 0));
        assertThrows(IllegalArgumentException.class, () -> new Ipv4Repr(1, 2, 1, 0, 64, 0, 0, 65536, false, false, 0));
    }

    @Test
    void wireStatusNamesAreDistinct() {
        assertEquals(WireStatus.COUNT, Arrays.stream(new int[] {0, 1, 2, 3, 4, 5, 6})
                .mapToObj(WireStatus::name).distinct().count());
        assertEquals("bad-checksum", WireStatus.name(WireStatus.BAD_CHECKSUM));
        assertEquals("unknown-99", WireStatus.name(99));
    }

    @Test
    void heapAndNativeSegmentsReadAlike() {
        byte[] b = hex(Captured.ECHO_REPLY);
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment n = arena.allocate(b.length + 3);
            MemorySegment.copy(b, 0, n, ValueLayout.JAVA_BYTE, 3, b.length);
            assertEquals(WireStatus.OK, ip.wrap(n, 3, b.length));
            Ipv4Repr fromNative = Ipv4Repr.parse(ip);
            assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
            assertEquals(Ipv4Repr.parse(ip), fromNative);
        }
    }
}
