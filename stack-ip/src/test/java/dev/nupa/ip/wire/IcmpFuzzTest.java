package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.ChecksumFuzzTest.referenceChecksum;
import static dev.nupa.ip.wire.ChecksumFuzzTest.referenceSum;
import static dev.nupa.ip.wire.ChecksumFuzzTest.u16;
import static dev.nupa.ip.wire.ChecksumFuzzTest.u32;
import static dev.nupa.ip.wire.Ipv4HeaderFuzzTest.bit;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.nupa.ip.wire.Ipv4HeaderFuzzTest.Frame;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Fuzzes {@link IcmpHeader} and {@link IcmpRepr} (RFC 792): {@code wrap} never throws and returns
 * the status the reference allows; after OK every accessor agrees with the bytes and stays inside
 * the buffer; the Repr emits, re-wraps and parses to itself with a checksum that verifies; an echo
 * request turned into a reply in place still verifies (RFC 1624); an error built about the quoted
 * header, when the data holds one, parses back. docs/fuzzing.md says how to run it; seeds live in
 * {@code dev/nupa/ip/IcmpFuzzTestInputs/icmp/}.
 *
 * <p>Input: two control bytes ({@link Frame}), then the ICMP message (the IP payload).
 */
class IcmpFuzzTest {
    /** The most data one IPv4 datagram can carry after the ICMP header; IcmpRepr refuses more. */
    private static final int MAX_DATA = Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER - IcmpHeader.HEADER;

    private final IcmpHeader icmp = new IcmpHeader();
    private final IcmpHeader again = new IcmpHeader();
    private final Ipv4Header quoted = new Ipv4Header();

    static int allowedStatuses(byte[] b, long off, int len, boolean verify) {
        if (len < IcmpHeader.HEADER || off < 0 || off > (long) b.length - len) {
            return bit(WireStatus.TRUNCATED);
        }
        if (verify && referenceSum(b, (int) off, (int) off + len) != 0xFFFF) {
            return bit(WireStatus.BAD_CHECKSUM);
        }
        return bit(WireStatus.OK);
    }

    @FuzzTest
    void icmp(byte[] input) {
        Frame f = Frame.of(input, 0);
        MemorySegment seg = f.segment();
        for (long[] p : f.probes()) {
            long off = p[0];
            int len = (int) p[1];
            int status = icmp.wrap(seg, off, len, f.verify());
            assertTrue((allowedStatuses(f.buffer(), off, len, f.verify()) & bit(status)) != 0,
                    "wrap: " + WireStatus.name(status) + " at offset " + off + " length " + len + " of " + f.buffer().length);
            if (status == WireStatus.OK) {
                viewAgreesWithTheBytes(f.buffer(), (int) off, len);
                if (icmp.dataLength() <= MAX_DATA) {
                    reprRoundTrips(f.buffer(), (int) off, len);
                } else {
                    assertThrows(IllegalArgumentException.class, () -> IcmpRepr.parse(icmp));
                }
            }
        }
    }

    private void viewAgreesWithTheBytes(byte[] b, int o, int len) {
        assertEquals(b[o] & 0xFF, icmp.type());
        assertEquals(b[o + 1] & 0xFF, icmp.code());
        assertEquals(u16(b, o + 2), icmp.checksum());
        assertEquals(u32(b, o + 4), icmp.restOfHeader());
        assertEquals(u16(b, o + 4), icmp.echoIdentifier());
        assertEquals(u16(b, o + 6), icmp.echoSequence());
        assertEquals(u16(b, o + 6), icmp.nextHopMtu());
        assertEquals(b[o + 4] & 0xFF, icmp.pointer());
        assertEquals(o, icmp.offset());
        assertEquals(len, icmp.length());
        assertEquals(o + IcmpHeader.HEADER, icmp.dataOffset());
        assertEquals(len - IcmpHeader.HEADER, icmp.dataLength());
        assertTrue(icmp.dataLength() >= 0 && icmp.dataOffset() + icmp.dataLength() <= b.length, "data inside the buffer");

        byte[] message = Arrays.copyOfRange(b, o, o + len);
        assertEquals(referenceSum(message) == 0xFFFF, icmp.verifyChecksum());
        message[2] = 0;
        message[3] = 0;
        int want = referenceChecksum(message, 0, len);
        assertEquals(want, icmp.computeChecksum(), "computeChecksum: the field taken as zero; stored "
                + Integer.toHexString(icmp.checksum()));
    }

    private void reprRoundTrips(byte[] b, int o, int len) {
        IcmpRepr r = IcmpRepr.parse(icmp);
        assertEquals(icmp.type(), r.type());
        assertEquals(icmp.code(), r.code());
        assertEquals(icmp.restOfHeader(), r.restOfHeader());
        assertArrayEquals(Arrays.copyOfRange(b, o + IcmpHeader.HEADER, o + len), r.data());
        assertEquals(len, r.length());
        r.toString();

        int at = (o + 5) & 7;
        byte[] out = new byte[at + r.length() + 3];
        Arrays.fill(out, Frame.JUNK);
        MemorySegment outSeg = MemorySegment.ofArray(out);
        r.emitInto(outSeg, at);
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, r.length(), true), r.toString());
        assertEquals(r, IcmpRepr.parse(again));
        assertEquals(0xFFFF, referenceSum(out, at, at + len), "the emitted checksum verifies");
        assertEquals(again.checksum(), again.computeChecksum(), "computeChecksum of what emit stored");

        // The same bytes but the checksum; the checksum too when the original verified (0xFFFF and
        // 0 are both valid for a sum of 0xFFFF, and a computation gives 0).
        byte[] originalNoSum = Arrays.copyOfRange(b, o, o + len);
        byte[] emittedNoSum = Arrays.copyOfRange(out, at, at + len);
        originalNoSum[2] = originalNoSum[3] = emittedNoSum[2] = emittedNoSum[3] = 0;
        assertArrayEquals(originalNoSum, emittedNoSum);
        int original = u16(b, o + 2);
        int emitted = u16(out, at + 2);
        if (icmp.verifyChecksum() && !(original == 0xFFFF && emitted == 0)) {
            assertEquals(original, emitted, "checksum of an identical message");
        }

        if (r.type() == IcmpHeader.TYPE_ECHO_REQUEST) {
            // RFC 792: the reply is the request with type 0; the checksum is patched (RFC 1624).
            again.echoRequestToReply();
            assertEquals(IcmpHeader.TYPE_ECHO_REPLY, again.type());
            assertEquals(new IcmpRepr(IcmpHeader.TYPE_ECHO_REPLY, r.code(), r.restOfHeader(), r.data()),
                    IcmpRepr.parse(again));
            byte[] reply = Arrays.copyOfRange(out, at, at + len);
            assertEquals(0xFFFF, referenceSum(reply), "the reply made in place verifies: checksum "
                    + Integer.toHexString(again.checksum()) + " of " + r);
            reply[2] = 0;
            reply[3] = 0;
            assertEquals(referenceChecksum(reply, 0, len), again.checksum(), "patched equals recomputed");
        }

        quotedHeaderParses(r, b);
    }

    /** The data of an error holds an original header: IcmpRepr.quotedHeader agrees with wrapQuoted, and an error about it parses back. */
    private void quotedHeaderParses(IcmpRepr r, byte[] b) {
        int status = quoted.wrapQuoted(MemorySegment.ofArray(b), icmp.dataOffset(), icmp.dataLength());
        Ipv4Repr q = r.quotedHeader();
        if (status != WireStatus.OK) {
            assertNull(q, "quotedHeader where wrapQuoted says " + WireStatus.name(status));
            return;
        }
        assertNotNull(q);
        assertEquals(Ipv4Repr.parse(quoted), q);

        int quotedLength = IcmpHeader.quotedLength(quoted);
        assertTrue(quotedLength <= icmp.dataLength(), "the quote lies inside the data");
        int at = 3;
        int need = IcmpHeader.HEADER + quotedLength;
        byte[] out = new byte[at + need + 1];
        MemorySegment outSeg = MemorySegment.ofArray(out);
        assertEquals(-1, again.emitError(outSeg, at, need - 1, IcmpHeader.TYPE_DESTINATION_UNREACHABLE,
                IcmpHeader.UNREACHABLE_PORT, 0, quoted), "no room");
        assertEquals(need, again.emitError(outSeg, at, need, IcmpHeader.TYPE_DESTINATION_UNREACHABLE,
                IcmpHeader.UNREACHABLE_PORT, 0, quoted));
        assertEquals(WireStatus.OK, again.wrap(outSeg, at, need, true));
        assertEquals(0xFFFF, referenceSum(out, at, at + need), "the error's checksum verifies");
        byte[] quote = Arrays.copyOfRange(b, (int) icmp.dataOffset(), (int) icmp.dataOffset() + quotedLength);
        assertEquals(IcmpRepr.destinationUnreachable(IcmpHeader.UNREACHABLE_PORT, quote), IcmpRepr.parse(again));
    }
}
