package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Fuzzes {@link LinkHeader} and {@link LinkRepr} (docs/link-layer.md): {@code wrap} throws
 * IndexOutOfBoundsException exactly when {@link LinkHeader#fits} says no, and nothing else;
 * {@link LinkRepr#parse(MemorySegment, long, int)} throws IllegalArgumentException exactly when the
 * frame is truncated, lies outside the segment or announces more payload than it holds; the
 * accessors read the bytes big-endian; the Repr emits, re-parses to itself and gives back the same
 * 8 bytes. docs/fuzzing.md says how to run it; seeds live in
 * {@code dev/nupa/l2/LinkHeaderFuzzTestInputs/linkHeader/}.
 *
 * <p>Input: byte 0: bits 0-2 the junk bytes put before the frame (its offset in the segment), bits
 * 3-5 the junk bytes after it; byte 1: a signed delta, the length of a second parse minus the
 * frame's length; then the frame. Missing bytes count as zero.
 */
class LinkHeaderFuzzTest {
    private static final byte JUNK = (byte) 0xA5;

    private final LinkHeader header = new LinkHeader();
    private final LinkHeader again = new LinkHeader();

    @FuzzTest
    void linkHeader(byte[] input) {
        int control = input.length > 0 ? input[0] & 0xFF : 0;
        int delta = input.length > 1 ? input[1] : 0;
        byte[] frame = Arrays.copyOfRange(input, Math.min(input.length, 2), input.length);
        int lead = control & 7;
        int trail = (control >>> 3) & 7;
        byte[] b = new byte[lead + frame.length + trail];
        Arrays.fill(b, JUNK);
        System.arraycopy(frame, 0, b, lead, frame.length);
        MemorySegment seg = MemorySegment.ofArray(b);
        long size = b.length;

        for (long off : new long[] {lead, lead + delta, lead - 1L, lead + 1L, 0, -1, size - 8, size - 7, size,
            Long.MAX_VALUE, Long.MIN_VALUE}) {
            wrapAgreesWithFits(seg, b, off);
        }
        for (long[] p : new long[][] {{lead, frame.length}, {lead, frame.length + delta}, {lead + 1L, frame.length - 1},
            {lead - 1L, frame.length + 1}, {0, size}, {-1, frame.length}, {size - 8, 8}, {size - 7, 8},
            {Long.MAX_VALUE, 8}, {lead, Integer.MAX_VALUE}, {lead, Integer.MIN_VALUE}}) {
            parseAgreesWithTheFrame(seg, b, p[0], (int) p[1]);
        }
    }

    private void wrapAgreesWithFits(MemorySegment seg, byte[] b, long off) {
        boolean fits = off >= 0 && off <= b.length - (long) LinkHeader.LENGTH;
        assertEquals(fits, LinkHeader.fits(seg, off), "fits at " + off + " of " + b.length);
        if (!fits) {
            assertThrows(IndexOutOfBoundsException.class, () -> header.wrap(seg, off), "wrap at " + off);
            return;
        }
        int o = (int) off;
        assertEquals(header, header.wrap(seg, off));
        assertEquals(seg, header.memory());
        assertEquals(off, header.offset());
        assertEquals(u16(b, o), header.destination());
        assertEquals(u16(b, o + 2), header.source());
        assertEquals(u16(b, o + 4), header.protocol());
        assertEquals(u16(b, o + 6), header.payloadLength());
        assertEquals(off + LinkHeader.LENGTH, header.payloadOffset());
        assertTrue(header.payloadOffset() <= b.length, "payload starts inside the segment");
        for (int frameLength : new int[] {0, 7, 8, b.length - o, header.payloadLength() + 7, header.payloadLength() + 8,
            Integer.MAX_VALUE, Integer.MIN_VALUE}) {
            assertEquals(frameLength >= LinkHeader.LENGTH && (long) header.payloadLength() <= frameLength - 8L,
                    header.payloadFits(frameLength), "payloadFits(" + frameLength + ")");
        }
        header.toString();
    }

    private void parseAgreesWithTheFrame(MemorySegment seg, byte[] b, long off, int frameLength) {
        boolean inside = frameLength >= LinkHeader.LENGTH && off >= 0 && off <= b.length - (long) frameLength;
        if (!inside || u16(b, (int) off + 6) > frameLength - LinkHeader.LENGTH) {
            assertThrows(IllegalArgumentException.class, () -> LinkRepr.parse(seg, off, frameLength),
                    "parse of " + frameLength + " bytes at " + off + " of " + b.length);
            return;
        }
        int o = (int) off;
        LinkRepr r = LinkRepr.parse(seg, off, frameLength);
        assertEquals(new LinkRepr(u16(b, o), u16(b, o + 2), u16(b, o + 4), u16(b, o + 6)), r);
        assertEquals(r, LinkRepr.parse(header.wrap(seg, off)));
        assertEquals(LinkHeader.LENGTH, r.length());
        assertEquals(LinkHeader.LENGTH + r.payloadLength(), r.frameLength());
        assertTrue(r.frameLength() <= frameLength && off + r.frameLength() <= b.length, "payload inside the frame");

        // Emit header and payload into a fresh segment at another offset: the same frame, the same Repr.
        int at = (o + 3) & 7;
        byte[] out = new byte[at + r.frameLength() + 1];
        Arrays.fill(out, JUNK);
        MemorySegment outSeg = MemorySegment.ofArray(out);
        r.emitInto(outSeg, at);
        MemorySegment.copy(seg, off + LinkHeader.LENGTH, outSeg, at + LinkHeader.LENGTH, r.payloadLength());
        assertArrayEquals(Arrays.copyOfRange(b, o, o + r.frameLength()), Arrays.copyOfRange(out, at, at + r.frameLength()));
        assertEquals(r, LinkRepr.parse(outSeg, at, r.frameLength()));
        assertTrue(again.wrap(outSeg, at).payloadFits(r.frameLength()));
        assertFalse(again.payloadFits(r.frameLength() - 1), "the announced payload needs the whole frame");

        // The flyweight path writes the same bytes, and nothing outside the header.
        byte[] viaView = new byte[at + LinkHeader.LENGTH + 1];
        Arrays.fill(viaView, JUNK);
        r.emitInto(again.wrap(MemorySegment.ofArray(viaView), at));
        assertArrayEquals(Arrays.copyOfRange(b, o, o + LinkHeader.LENGTH), Arrays.copyOfRange(viaView, at, at + LinkHeader.LENGTH));
        assertEquals(JUNK, viaView[viaView.length - 1]);
        assertThrows(IndexOutOfBoundsException.class, () -> r.emitInto(MemorySegment.ofArray(new byte[at + 7]), at));
    }

    private static int u16(byte[] b, int at) {
        return (b[at] & 0xFF) << 8 | (b[at + 1] & 0xFF);
    }
}
