package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.ChecksumFuzzTest.referenceChecksum;
import static dev.nupa.ip.wire.ChecksumFuzzTest.referenceSum;
import static dev.nupa.ip.wire.ChecksumFuzzTest.u16;
import static dev.nupa.ip.wire.ChecksumFuzzTest.u32;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Fuzzes {@link Ipv4Header} and {@link Ipv4Repr} (RFC 791 3.1): {@code wrap} and {@code wrapQuoted}
 * never throw and return the status a reference written from RFC 791 and {@link WireStatus}
 * allows; after OK every accessor agrees with the bytes and stays inside the buffer; the Repr
 * emits, re-wraps and parses to itself with a checksum that verifies. docs/fuzzing.md says how to
 * run it; seeds live in {@code dev/nupa/ip/Ipv4HeaderFuzzTestInputs/ipv4/}.
 *
 * <p>Input (shared by the wire fuzz tests, see {@link Frame}): two control bytes, then the datagram.
 */
class Ipv4HeaderFuzzTest {
    private final Ipv4Header ip = new Ipv4Header();
    private final Ipv4Header again = new Ipv4Header();

    /**
     * The input layout of the wire fuzz tests. Byte 0: bits 0-2 the number of junk bytes put before
     * the frame (so the frame sits at that offset of the segment), bits 3-5 the junk bytes after it,
     * bit 6 "verify the checksum", bit 7 a spare flag. Byte 1: a signed delta, the length of a
     * second wrap of the frame minus the frame's length. Then {@code skip} bytes the test reads
     * itself (UDP: two addresses), then the frame. Missing bytes count as zero.
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

        /**
         * (offset, length) pairs to wrap: the frame, the frame with the delta applied, and ranges that
         * start before, end after or lie outside the segment. Every wrap must answer, not throw.
         */
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

    /**
     * The statuses a wrap may return, as a bit set: OK alone for a well-formed header, else every
     * {@link WireStatus} code whose condition holds (which one a wrap reports first is its choice).
     */
    static int allowedStatuses(byte[] b, long off, int len, boolean verify, boolean quoted) {
        if (len < Ipv4Header.MIN_HEADER || off < 0 || off > (long) b.length - len) {
            return bit(WireStatus.TRUNCATED);
        }
        int o = (int) off;
        int version = (b[o] & 0xFF) >>> 4;
        int headerLength = (b[o] & 0x0F) * 4;
        int total = u16(b, o + 2);
        int bad = 0;
        if (version != 4) {
            bad |= bit(WireStatus.BAD_VERSION);
        }
        if (headerLength < Ipv4Header.MIN_HEADER) {
            bad |= bit(WireStatus.BAD_HEADER_LENGTH);
        }
        if (headerLength > len) {
            bad |= bit(WireStatus.TRUNCATED);
        }
        if (total < headerLength) {
            bad |= bit(WireStatus.BAD_TOTAL_LENGTH);
        }
        if (!quoted && total > len) {
            bad |= bit(WireStatus.TRUNCATED);
        }
        if (!quoted && verify && headerLength >= Ipv4Header.MIN_HEADER && headerLength <= len
                && referenceSum(b, o, o + headerLength) != 0xFFFF) {
            bad |= bit(WireStatus.BAD_CHECKSUM);
        }
        return bad == 0 ? bit(WireStatus.OK) : bad;
    }

    @FuzzTest
    void ipv4(byte[] input) {
        Frame f = Frame.of(input, 0);
        MemorySegment seg = f.segment();
        for (long[] p : f.probes()) {
            long off = p[0];
            int len = (int) p[1];
            String where = "offset " + off + " length " + len + " of " + f.buffer().length;

            int status = ip.wrap(seg, off, len, f.verify());
            assertTrue((allowedStatuses(f.buffer(), off, len, f.verify(), false) & bit(status)) != 0,
                    "wrap: " + WireStatus.name(status) + " at " + where);
            if (status == WireStatus.OK) {
                viewAgreesWithTheBytes(ip, f.buffer(), (int) off, len, false);
                reprRoundTrips(ip, f.buffer(), (int) off);
            }

            int quotedStatus = ip.wrapQuoted(seg, off, len);
            assertTrue((allowedStatuses(f.buffer(), off, len, false, true) & bit(quotedStatus)) != 0,
                    "wrapQuoted: " + WireStatus.name(quotedStatus) + " at " + where);
            if (quotedStatus == WireStatus.OK) {
                viewAgreesWithTheBytes(ip, f.buffer(), (int) off, len, true);
                reprRoundTrips(ip, f.buffer(), (int) off);
            }
        }
    }

    /** Every accessor of a view that wrapped OK against the bytes, and the bounds it gives. */
    static void viewAgreesWithTheBytes(Ipv4Header h, byte[] b, int o, int len, boolean quoted) {
        int headerLength = (b[o] & 0x0F) * 4;
        int total = u16(b, o + 2);
        int flags = u16(b, o + 6);
        assertEquals(4, h.version());
        assertEquals(headerLength, h.headerLength());
        assertTrue(headerLength >= Ipv4Header.MIN_HEADER && headerLength <= Ipv4Header.MAX_HEADER);
        assertEquals(b[o + 1] & 0xFF, h.typeOfService());
        assertEquals((b[o + 1] & 0xFF) >>> 2, h.dscp());
        assertEquals(b[o + 1] & 3, h.ecn());
        assertEquals(total, h.totalLength());
        assertEquals(u16(b, o + 4), h.identification());
        assertEquals((flags & 0x8000) != 0, h.reservedFlag());
        assertEquals((flags & 0x4000) != 0, h.dontFragment());
        assertEquals((flags & 0x2000) != 0, h.moreFragments());
        assertEquals((flags & 0x1FFF) * 8, h.fragmentOffset());
        assertEquals((flags & 0x3FFF) != 0, h.isFragment());
        assertEquals(b[o + 8] & 0xFF, h.ttl());
        assertEquals(b[o + 9] & 0xFF, h.protocol());
        assertEquals(u16(b, o + 10), h.headerChecksum());
        assertEquals(u32(b, o + 12), h.sourceAddress());
        assertEquals(u32(b, o + 16), h.destinationAddress());
        assertEquals(headerLength - Ipv4Header.MIN_HEADER, h.optionsLength());
        assertEquals(len, h.bufferLength());
        assertEquals(o, h.offset());

        // Bounds: header, payload and what is present of it lie inside the wrapped range.
        assertEquals(o + headerLength, h.payloadOffset());
        assertEquals(total - headerLength, h.payloadLength());
        assertTrue(headerLength <= len && headerLength <= total, "header inside the buffer and the datagram");
        assertEquals(Math.min(total, len) - headerLength, h.availablePayloadLength());
        assertTrue(h.availablePayloadLength() >= 0);
        assertTrue(h.payloadOffset() + h.availablePayloadLength() <= (long) o + len);
        if (!quoted) {
            assertTrue(total <= len, "the datagram lies inside the buffer");
            assertEquals(h.payloadLength(), h.availablePayloadLength());
        }

        // Checksum against the reference: the field taken as zero, and whether the header verifies.
        byte[] header = Arrays.copyOfRange(b, o, o + headerLength);
        assertEquals(referenceSum(header) == 0xFFFF, h.verifyChecksum());
        header[10] = 0;
        header[11] = 0;
        assertEquals(referenceChecksum(header, 0, headerLength), h.computeChecksum());

        // What ICMP errors take from a header (RFC 792, RFC 1122 3.2.2).
        int quotedLength = IcmpHeader.quotedLength(h);
        assertEquals(headerLength + Math.min(IcmpHeader.QUOTED_PAYLOAD, h.availablePayloadLength()), quotedLength);
        assertArrayEquals(Arrays.copyOfRange(b, o, o + quotedLength), IcmpRepr.quote(h));
        IcmpHeader.mayAnswerWithError(h, false);
        IcmpHeader.mayAnswerWithError(h, true);
    }

    /**
     * Parse to a Repr, emit it (20-byte header, payload copied) into a fresh segment at another
     * offset, re-wrap with checksum verification: the same Repr, a verifying checksum, the same field
     * bytes (options and the reserved flag are not represented), and a TTL decrement that keeps the
     * checksum right (RFC 1624).
     */
    private void reprRoundTrips(Ipv4Header h, byte[] b, int o) {
        Ipv4Repr r = Ipv4Repr.parse(h);
        assertEquals(h.payloadLength(), r.payloadLength());
        r.toString();
        int at = (o + 3) & 7;
        byte[] out = new byte[at + r.length() + 2];
        Arrays.fill(out, Frame.JUNK);
        System.arraycopy(b, (int) h.payloadOffset(), out, at + Ipv4Header.MIN_HEADER, h.availablePayloadLength());
        MemorySegment outSeg = MemorySegment.ofArray(out);

        r.emitInto(outSeg, at, false);
        assertEquals(0, u16(out, at + 10), "no checksum asked, the field stays zero");
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, r.length(), false), r.toString());
        assertEquals(r, Ipv4Repr.parse(again));

        r.emitInto(outSeg, at, true);
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, r.length(), true), r.toString());
        assertEquals(r, Ipv4Repr.parse(again));
        assertEquals(0xFFFF, referenceSum(out, at, at + Ipv4Header.MIN_HEADER), "the emitted checksum verifies");
        assertEquals(again.headerChecksum(), again.computeChecksum());
        assertEquals(at + Ipv4Header.MIN_HEADER, again.payloadOffset());
        assertEquals(r.length(), again.totalLength());

        assertEquals(0x45, out[at] & 0xFF);
        assertEquals(b[o + 1], out[at + 1], "TOS");
        assertEquals(u16(b, o + 4), u16(out, at + 4), "identification");
        assertEquals(u16(b, o + 6) & 0x7FFF, u16(out, at + 6), "flags and fragment offset, reserved flag dropped");
        assertEquals(b[o + 8], out[at + 8], "TTL");
        assertEquals(b[o + 9], out[at + 9], "protocol");
        assertArrayEquals(Arrays.copyOfRange(b, o + 12, o + 20), Arrays.copyOfRange(out, at + 12, at + 20), "addresses");
        int original = u16(b, o + 10);
        if (h.headerLength() == Ipv4Header.MIN_HEADER && !h.reservedFlag() && h.verifyChecksum() && original != 0xFFFF) {
            // Same 20 bytes but for a checksum that verified: the only value a computation gives.
            assertEquals(original, u16(out, at + 10), "checksum of an identical header");
        }

        if (r.ttl() > 0) {
            again.decrementTtl();
            assertEquals(r.ttl() - 1, again.ttl());
            assertEquals(0xFFFF, referenceSum(out, at, at + Ipv4Header.MIN_HEADER), "checksum after decrementTtl verifies");
            assertEquals(again.computeChecksum(), again.headerChecksum(), "incremental equals full recomputation");
        }
    }
}
