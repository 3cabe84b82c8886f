package dev.nupa.tcp.wire;

import static dev.nupa.tcp.wire.WireBytes.segmentChecksum;
import static dev.nupa.tcp.wire.WireBytes.segmentSum;
import static dev.nupa.tcp.wire.WireBytes.u16;
import static dev.nupa.tcp.wire.WireBytes.u32;
import static dev.nupa.tcp.wire.WireBytes.u8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.nupa.ip.wire.WireStatus;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Fuzzes {@link TcpHeader}, {@link TcpOptions}, {@link TcpRepr} and {@link Seq} (RFC 9293 3.1,
 * 3.4): {@code wrap} never throws and returns the status a reference written from RFC 9293 and
 * {@link WireStatus} allows; after OK every accessor agrees with the bytes and stays inside the
 * segment, and the checksum over the pseudo header agrees with the reference; options parse never
 * throws and agrees with a reference parser, on the header's options and on arbitrary ranges
 * (longer than 40 bytes too); what was parsed emits (or is refused, when over 40 bytes) and
 * re-parses equal; the Repr emits with the same data, re-wraps with a verifying checksum and
 * parses to itself; and the sequence comparisons agree with arithmetic on longs. docs/fuzzing.md
 * says how to run it; seeds live in {@code dev/nupa/tcp/TcpFuzzTestInputs/tcp/}.
 *
 * <p>Input: two control bytes ({@link Frame}, the layout of stack-ip's wire fuzz tests; the spare
 * flag says whether the Repr computes its checksum), the IPv4 source and destination addresses of
 * the pseudo header (8 bytes), then the TCP segment (the IP payload).
 */
class TcpFuzzTest {
    private final TcpHeader tcp = new TcpHeader();
    private final TcpHeader again = new TcpHeader();
    private final TcpOptions options = new TcpOptions();
    private final TcpOptions reparsed = new TcpOptions();

    /**
     * The input layout, as in stack-ip's {@code Ipv4HeaderFuzzTest.Frame}. Byte 0: bits 0-2 the
     * number of junk bytes put before the frame, bits 3-5 the junk bytes after it, bit 6 "verify the
     * checksum", bit 7 a spare flag. Byte 1: a signed delta, the length of a second wrap of the frame
     * minus the frame's length. Then {@code skip} bytes the test reads itself, then the frame.
     * Missing bytes count as zero.
     */
    record Frame(byte[] buffer, int offset, int length, boolean verify, boolean flag, int delta, byte[] extra) {
        static final byte JUNK = (byte) 0xA5;

        static Frame of(byte[] input, int skip) {
            int control = input.length > 0 ? input[0] & 0xFF : 0;
            int delta = input.length > 1 ? input[1] : 0;
            byte[] extra = Arrays.copyOfRange(input, Math.min(input.length, 2), Math.min(input.length, 2) + skip);
            byte[] frame = Arrays.copyOfRange(input, Math.min(input.length, 2 + skip), input.length);
            int lead = control & 7;
            int trail = (control >>> 3) & 7;
            byte[] buffer = new byte[lead + frame.length + trail];
            Arrays.fill(buffer, JUNK);
            System.arraycopy(frame, 0, buffer, lead, frame.length);
            return new Frame(buffer, lead, frame.length, (control & 0x40) != 0, (control & 0x80) != 0, delta, extra);
        }

        MemorySegment segment() {
            return MemorySegment.ofArray(buffer);
        }

        /** (offset, length) pairs to wrap: the frame, the frame with the delta applied, and ranges that start before, end after or lie outside the segment. */
        long[][] probes() {
            long size = buffer.length;
            return new long[][] {
                {offset, length}, {offset, length + delta}, {offset - 1L, length + 1}, {offset + 1L, length - 1},
                {0, size}, {-1, length}, {size, 0}, {size - 20, 20}, {size - 7, 8}, {Long.MAX_VALUE, 20},
                {Long.MIN_VALUE, 20}, {offset, Integer.MAX_VALUE}, {offset, Integer.MIN_VALUE}, {offset, -1}
            };
        }
    }

    static int bit(int status) {
        return 1 << status;
    }

    /** The statuses a wrap may return, as a bit set: OK alone for a well-formed segment, else every code whose condition holds. */
    static int allowedStatuses(byte[] b, long off, int len, int src, int dst, boolean verify) {
        if (len < TcpHeader.MIN_HEADER || off < 0 || off > (long) b.length - len) {
            return bit(WireStatus.TRUNCATED);
        }
        int o = (int) off;
        int headerLength = (u8(b, o + 12) >>> 4) * 4;
        int bad = 0;
        if (headerLength < 20) {
            bad |= bit(WireStatus.BAD_HEADER_LENGTH);
        }
        if (headerLength > len) {
            bad |= bit(WireStatus.TRUNCATED);
        }
        if (len > 0xFFFF) {
            bad |= bit(WireStatus.BAD_LENGTH);
        }
        if (bad == 0 && verify && segmentSum(b, o, len, src, dst) != 0xFFFF) {
            bad |= bit(WireStatus.BAD_CHECKSUM);
        }
        return bad == 0 ? bit(WireStatus.OK) : bad;
    }

    /** What a parse of options should give, from a reference parser written from RFC 9293 3.1 and the class contract. */
    record Expected(int status, int parsedLength, int mss, int windowScale, boolean sackPermitted, long tsVal, long tsEcr,
            List<Integer> sackEdges) {
    }

    static Expected referenceOptions(byte[] b, int from, int to) {
        int mss = -1;
        int windowScale = -1;
        boolean sackPermitted = false;
        long tsVal = -1;
        long tsEcr = -1;
        List<Integer> edges = new ArrayList<>();
        int status = OptionStatus.OK;
        int i = from;
        while (i < to) {
            int kind = u8(b, i);
            if (kind == 0) {
                break;
            } else if (kind == 1) {
                i++;
                continue;
            }
            if (i + 1 >= to) {
                status = OptionStatus.TRUNCATED;
                break;
            }
            int len = u8(b, i + 1);
            if (len < 2) {
                status = OptionStatus.BAD_LENGTH;
                break;
            }
            if (i + len > to) {
                status = OptionStatus.TRUNCATED;
                break;
            }
            boolean wrong = switch (kind) {
                case 2 -> len != 4;
                case 3 -> len != 3;
                case 4 -> len != 2;
                case 5 -> len != 10 && len != 18 && len != 26 && len != 34;
                case 8 -> len != 10;
                default -> false;
            };
            if (wrong) {
                status = OptionStatus.WRONG_LENGTH;
                break;
            }
            switch (kind) {
                case 2 -> mss = u16(b, i + 2);
                case 3 -> windowScale = Math.min(14, u8(b, i + 2));
                case 4 -> sackPermitted = true;
                case 5 -> {
                    edges.clear();
                    for (int e = i + 2; e < i + len; e += 4) {
                        edges.add(u32(b, e));
                    }
                }
                case 8 -> {
                    tsVal = u32(b, i + 2) & 0xFFFF_FFFFL;
                    tsEcr = u32(b, i + 6) & 0xFFFF_FFFFL;
                }
                default -> {
                }
            }
            i += len;
        }
        return new Expected(status, i - from, mss, windowScale, sackPermitted, tsVal, tsEcr, edges);
    }

    static void optionsAgree(Expected want, int status, TcpOptions o, String where) {
        assertEquals(want.status(), status, "options status " + where);
        assertEquals(want.parsedLength(), o.parsedLength(), "parsed length " + where);
        assertEquals(want.mss() >= 0, o.hasMss(), "MSS present " + where);
        if (o.hasMss()) {
            assertEquals(want.mss(), o.mss());
        }
        assertEquals(want.windowScale() >= 0, o.hasWindowScale(), "window scale present " + where);
        if (o.hasWindowScale()) {
            assertEquals(want.windowScale(), o.windowScale());
        }
        assertEquals(want.sackPermitted(), o.sackPermitted(), "SACK-permitted " + where);
        assertEquals(want.tsVal() >= 0, o.hasTimestamps(), "timestamps present " + where);
        if (o.hasTimestamps()) {
            assertEquals(want.tsVal(), o.tsVal() & 0xFFFF_FFFFL);
            assertEquals(want.tsEcr(), o.tsEcr() & 0xFFFF_FFFFL);
        }
        assertEquals(want.sackEdges().size() / 2, o.sackBlockCount(), "SACK blocks " + where);
        for (int i = 0; i < o.sackBlockCount(); i++) {
            assertEquals(want.sackEdges().get(2 * i), o.sackLeft(i));
            assertEquals(want.sackEdges().get(2 * i + 1), o.sackRight(i));
        }
    }

    @FuzzTest
    void tcp(byte[] input) {
        Frame f = Frame.of(input, 8);
        byte[] addresses = Arrays.copyOf(f.extra(), 8);
        int src = u32(addresses, 0);
        int dst = u32(addresses, 4);
        byte[] b = f.buffer();
        MemorySegment seg = f.segment();
        for (long[] p : f.probes()) {
            long off = p[0];
            int len = (int) p[1];
            String where = " at offset " + off + " length " + len + " of " + b.length;
            int plain = tcp.wrap(seg, off, len);
            assertTrue((allowedStatuses(b, off, len, src, dst, false) & bit(plain)) != 0,
                    "wrap: " + WireStatus.name(plain) + where);
            int status = tcp.wrap(seg, off, len, src, dst, f.verify());
            assertTrue((allowedStatuses(b, off, len, src, dst, f.verify()) & bit(status)) != 0,
                    "wrap with checksum: " + WireStatus.name(status) + where);
            if (status == WireStatus.OK) {
                viewAgreesWithTheBytes(b, (int) off, len, src, dst);
                int o = (int) off;
                int optionsStatus = options.parse(tcp);
                optionsAgree(referenceOptions(b, o + 20, o + tcp.headerLength()), optionsStatus, options, where);
                optionsReEmit(options);
                reprRoundTrips(b, o, src, dst, f.flag());
            }

            // Options over any range: never throws; inside the segment, agrees with the reference.
            int optionsStatus = options.parse(seg, off, len);
            if (off >= 0 && len >= 0 && off <= b.length - (long) len) {
                optionsAgree(referenceOptions(b, (int) off, (int) off + len), optionsStatus, options, "range" + where);
                optionsReEmit(options);
            } else {
                assertEquals(OptionStatus.TRUNCATED, optionsStatus, "range" + where);
                assertEquals(new TcpOptions(), options, "nothing parsed outside the segment");
            }
        }
        sequenceArithmetic(src, dst, u16(addresses, 2) << (addresses[7] & 15));
    }

    private void viewAgreesWithTheBytes(byte[] b, int o, int len, int src, int dst) {
        int headerLength = (u8(b, o + 12) >>> 4) * 4;
        int flags = u8(b, o + 13);
        assertEquals(u16(b, o), tcp.sourcePort());
        assertEquals(u16(b, o + 2), tcp.destinationPort());
        assertEquals(u32(b, o + 4), tcp.sequenceNumber());
        assertEquals(u32(b, o + 8), tcp.acknowledgmentNumber());
        assertEquals(headerLength, tcp.headerLength());
        assertTrue(headerLength >= TcpHeader.MIN_HEADER && headerLength <= TcpHeader.MAX_HEADER);
        assertEquals(u8(b, o + 12) & 15, tcp.reserved());
        assertEquals(flags, tcp.flags());
        assertEquals((flags & 1) != 0, tcp.isFin());
        assertEquals((flags & 2) != 0, tcp.isSyn());
        assertEquals((flags & 4) != 0, tcp.isRst());
        assertEquals((flags & 8) != 0, tcp.isPsh());
        assertEquals((flags & 16) != 0, tcp.isAck());
        assertEquals((flags & 32) != 0, tcp.isUrg());
        assertEquals((flags & 64) != 0, tcp.isEce());
        assertEquals((flags & 128) != 0, tcp.isCwr());
        assertEquals(true, tcp.hasFlags(flags));
        assertEquals(u16(b, o + 14), tcp.window());
        assertEquals(u16(b, o + 16), tcp.checksum());
        assertEquals(u16(b, o + 18), tcp.urgentPointer());
        assertEquals(o, tcp.offset());
        assertEquals(len, tcp.length());

        // Bounds: options and data lie inside the wrapped range, end to end.
        assertEquals(o + 20, tcp.optionsOffset());
        assertEquals(headerLength - 20, tcp.optionsLength());
        assertTrue(tcp.optionsLength() >= 0 && tcp.optionsLength() <= TcpOptions.MAX_LENGTH);
        assertEquals(tcp.optionsOffset() + tcp.optionsLength(), tcp.payloadOffset());
        assertEquals(len - headerLength, tcp.payloadLength());
        assertTrue(tcp.payloadLength() >= 0);
        assertEquals((long) o + len, tcp.payloadOffset() + tcp.payloadLength());
        assertTrue(tcp.payloadOffset() + tcp.payloadLength() <= b.length);
        assertEquals(len - headerLength + (flags >>> 1 & 1) + (flags & 1), tcp.sequenceLength());

        // Checksum against the reference; TCP has no "none", and a computation never gives ffff.
        assertEquals(segmentSum(b, o, len, src, dst) == 0xFFFF, tcp.verifyChecksum(src, dst));
        int computed = tcp.computeChecksum(src, dst);
        assertEquals(segmentChecksum(b, o, len, src, dst), computed);
        assertNotEquals(0xFFFF, computed, "the pseudo header's protocol 6 keeps the sum from being 0");
    }

    /** Emit what was parsed: refused over 40 bytes, else word-aligned, inside its range, and re-parsed equal. */
    private void optionsReEmit(TcpOptions o) {
        int n = o.length();
        assertEquals(0, n % 4, "whole words");
        byte[] out = new byte[3 + Math.min(n, TcpOptions.MAX_LENGTH) + 3];
        Arrays.fill(out, Frame.JUNK);
        byte[] untouched = out.clone();
        if (n > TcpOptions.MAX_LENGTH) {
            assertThrows(IllegalStateException.class, () -> o.emit(MemorySegment.ofArray(out), 3));
            assertArrayEquals(untouched, out, "a refused emit writes nothing");
            return;
        }
        assertEquals(n, o.emit(MemorySegment.ofArray(out), 3));
        assertArrayEquals(Arrays.copyOf(untouched, 3), Arrays.copyOf(out, 3), "nothing before");
        assertArrayEquals(Arrays.copyOfRange(untouched, 3 + n, out.length), Arrays.copyOfRange(out, 3 + n, out.length),
                "nothing after");
        assertEquals(OptionStatus.OK, reparsed.parse(MemorySegment.ofArray(out), 3, n));
        assertEquals(o, reparsed);
        assertEquals(o.hashCode(), reparsed.hashCode());
        assertEquals(n, reparsed.parsedLength());
        optionsAgree(referenceOptions(out, 3, 3 + n), OptionStatus.OK, reparsed, "re-emitted");
        assertEquals(o.toString(), reparsed.toString());
    }

    /**
     * Parse to a Repr, emit it with the same data into a fresh buffer at another offset, re-wrap with
     * checksum verification: the same Repr, the same data, the same fixed fields (the reserved bits
     * zeroed), and the original checksum where the bytes come out identical.
     */
    private void reprRoundTrips(byte[] b, int o, int src, int dst, boolean computeChecksum) {
        TcpRepr r = TcpRepr.parse(tcp, options);
        r.toString();
        int headerLength = r.headerLength();
        int payloadLength = tcp.payloadLength();
        int at = (o + 1) & 7;
        byte[] out = new byte[at + Math.min(headerLength, TcpHeader.MAX_HEADER) + payloadLength + 2];
        Arrays.fill(out, Frame.JUNK);
        MemorySegment outSeg = MemorySegment.ofArray(out);
        if (headerLength > TcpHeader.MAX_HEADER) {
            assertThrows(IllegalStateException.class,
                    () -> r.emitInto(outSeg, at, src, dst, tcp.segment(), tcp.payloadOffset(), payloadLength, true));
            return;
        }
        int length = headerLength + payloadLength;
        if (length > TcpHeader.MAX_LENGTH) {
            assertThrows(IllegalArgumentException.class,
                    () -> r.emitInto(outSeg, at, src, dst, tcp.segment(), tcp.payloadOffset(), payloadLength, true));
            return;
        }
        r.emitInto(outSeg, at, src, dst, tcp.segment(), tcp.payloadOffset(), payloadLength, computeChecksum);
        if (at > 0) {
            assertEquals(Frame.JUNK, out[at - 1], "nothing written before");
        }
        assertEquals(Frame.JUNK, out[at + length], "nothing written after");
        if (!computeChecksum) {
            assertEquals(0, u16(out, at + 16), "no checksum asked: the field stays zero");
            assertEquals(WireStatus.OK, again.wrap(outSeg, at, length));
            again.fillChecksum(src, dst);
        }
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, length, src, dst, true), r.toString());
        assertEquals(0xFFFF, segmentSum(out, at, length, src, dst), "the emitted checksum verifies");
        assertEquals(OptionStatus.OK, reparsed.parse(again));
        assertEquals(r, TcpRepr.parse(again, reparsed));
        assertEquals(headerLength, again.headerLength());
        assertArrayEquals(Arrays.copyOfRange(b, (int) tcp.payloadOffset(), (int) tcp.payloadOffset() + payloadLength),
                Arrays.copyOfRange(out, at + headerLength, at + length), "the data");
        assertArrayEquals(Arrays.copyOfRange(b, o, o + 12), Arrays.copyOfRange(out, at, at + 12), "ports, seq, ack");
        assertEquals((headerLength / 4) << 4, u8(out, at + 12), "data offset, reserved bits zero");
        assertArrayEquals(Arrays.copyOfRange(b, o + 13, o + 16), Arrays.copyOfRange(out, at + 13, at + 16), "flags, window");
        assertArrayEquals(Arrays.copyOfRange(b, o + 18, o + 20), Arrays.copyOfRange(out, at + 18, at + 20), "urgent pointer");

        int original = tcp.checksum();
        boolean sameHeader = Arrays.equals(Arrays.copyOfRange(b, o, o + tcp.headerLength()),
                0, tcp.headerLength(), withChecksum(out, at, original), at, at + headerLength);
        if (sameHeader && tcp.verifyChecksum(src, dst) && original != 0xFFFF) {
            // Identical bytes but for a checksum that verified: the only value a computation gives
            // (ffff also verifies where 0 is right: one's complement has two zeros).
            assertEquals(original, again.checksum(), "checksum of an identical segment");
        }
    }

    private static byte[] withChecksum(byte[] out, int at, int checksum) {
        byte[] copy = out.clone();
        WireBytes.putU16(copy, at + 16, checksum);
        return copy;
    }

    /** Seq against the distance modulo 2^32 taken in longs. */
    private static void sequenceArithmetic(int a, int b, int size) {
        long ahead = (b - (long) a) & 0xFFFF_FFFFL;
        assertEquals(ahead >= 1 && ahead <= 0x8000_0000L, Seq.lt(a, b));
        assertEquals(ahead <= 0x8000_0000L, Seq.le(a, b));
        assertEquals(ahead > 0x8000_0000L, Seq.gt(a, b));
        assertEquals(ahead == 0 || ahead > 0x8000_0000L, Seq.ge(a, b));
        if (ahead != 0x8000_0000L) {
            assertEquals(Seq.lt(a, b), Seq.gt(b, a));
            assertEquals(Seq.le(a, b), Seq.ge(b, a));
            assertEquals(Seq.lt(a, b) ? b : a, Seq.max(a, b));
            assertEquals(Seq.lt(a, b) ? a : b, Seq.min(a, b));
        }
        long into = (a - (long) b) & 0xFFFF_FFFFL;
        assertEquals(size > 0 && into < size, Seq.inWindow(a, b, size));
    }
}
