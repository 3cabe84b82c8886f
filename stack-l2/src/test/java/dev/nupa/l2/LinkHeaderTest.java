package dev.nupa.l2;

import static dev.nupa.l2.L2Fixture.bytes;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;

/** The 8-byte link header: view and value record against bytes written by hand from docs/link-layer.md. */
class LinkHeaderTest {
    // dst 0x0002, src 0x0001, IPv4, 4 payload bytes "abcd", then 3 trailing bytes the slot may carry.
    private static final int[] FRAME = {0x00, 0x02, 0x00, 0x01, 0x08, 0x00, 0x00, 0x04, 'a', 'b', 'c', 'd', 0xEE, 0xEE, 0xEE};

    @Test
    void viewReadsHandWrittenBytes() {
        MemorySegment m = bytes(FRAME);
        LinkHeader h = new LinkHeader().wrap(m, 0);
        assertEquals(2, h.destination());
        assertEquals(1, h.source());
        assertEquals(EtherType.IPV4, h.protocol());
        assertEquals(4, h.payloadLength());
        assertEquals(8, h.payloadOffset());
        assertTrue(h.payloadFits(FRAME.length), "trailing bytes beyond header + length are allowed");
        assertTrue(h.payloadFits(12));
        assertFalse(h.payloadFits(11));
        assertFalse(h.payloadFits(7));
    }

    @Test
    void reprParsesAndEmitsTheSameBytes() {
        MemorySegment m = bytes(FRAME);
        LinkRepr r = LinkRepr.parse(m, 0, FRAME.length);
        assertEquals(new LinkRepr(2, 1, 0x0800, 4), r);
        assertEquals(8, r.length());
        assertEquals(12, r.frameLength());
        MemorySegment out = MemorySegment.ofArray(new byte[8]);
        r.emitInto(out, 0);
        assertArrayEquals(m.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE), out.toArray(ValueLayout.JAVA_BYTE));
    }

    @Test
    void fieldsAreUnsignedBigEndian() {
        LinkRepr r = new LinkRepr(0xFFFF, 0x8001, EtherType.NUPA_RDMA, 0xABCD);
        MemorySegment out = MemorySegment.ofArray(new byte[10]);
        r.emitInto(out, 2);
        assertArrayEquals(new byte[] {0, 0, (byte) 0xFF, (byte) 0xFF, (byte) 0x80, 0x01, (byte) 0x89, 0x15, (byte) 0xAB, (byte) 0xCD},
                out.toArray(ValueLayout.JAVA_BYTE));
        LinkHeader h = new LinkHeader().wrap(out, 2);
        assertEquals(0xFFFF, h.destination());
        assertEquals(0x8001, h.source());
        assertEquals(0x8915, h.protocol());
        assertEquals(0xABCD, h.payloadLength());
        assertEquals(r, LinkRepr.parse(h));
    }

    @Test
    void viewSettersWriteInPlace() {
        MemorySegment out = MemorySegment.ofArray(new byte[8]);
        new LinkHeader().wrap(out, 0).set(2, 1, EtherType.IPV4, 4);
        assertArrayEquals(bytes(FRAME).asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE), out.toArray(ValueLayout.JAVA_BYTE));
        new LinkHeader().wrap(out, 0).destination(7).source(9).protocol(0x86DD).payloadLength(300);
        assertEquals(new LinkRepr(7, 9, 0x86DD, 300), LinkRepr.parse(new LinkHeader().wrap(out, 0)));
    }

    @Test
    void truncatedHeadersAreRejected() {
        MemorySegment m = bytes(FRAME);
        for (int len = 0; len < 8; len++) {
            int l = len;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LinkRepr.parse(m, 0, l));
            assertTrue(e.getMessage().contains("truncated"), e.getMessage());
        }
        assertThrows(IndexOutOfBoundsException.class, () -> new LinkHeader().wrap(MemorySegment.ofArray(new byte[7]), 0));
        assertThrows(IndexOutOfBoundsException.class, () -> new LinkHeader().wrap(m, FRAME.length - 7));
        assertThrows(IndexOutOfBoundsException.class, () -> new LinkHeader().wrap(m, -1));
        assertFalse(LinkHeader.fits(m, FRAME.length - 7));
        assertTrue(LinkHeader.fits(m, FRAME.length - 8));
        assertThrows(IndexOutOfBoundsException.class, () -> new LinkRepr(1, 2, 3, 4).emitInto(MemorySegment.ofArray(new byte[8]), 1));
    }

    @Test
    void aLengthBeyondTheFrameIsRejected() {
        MemorySegment m = bytes(FRAME);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LinkRepr.parse(m, 0, 11));
        assertTrue(e.getMessage().contains("announces 4 payload bytes"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> LinkRepr.parse(m, 0, FRAME.length + 1), "frame beyond the segment");
        assertThrows(IllegalArgumentException.class, () -> LinkRepr.parse(m, 8, 8), "frame beyond the segment at an offset");
    }

    @Test
    void reprFieldsMustBeU16() {
        assertThrows(IllegalArgumentException.class, () -> new LinkRepr(0x10000, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new LinkRepr(0, -1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new LinkRepr(0, 0, 0x10000, 0));
        assertThrows(IllegalArgumentException.class, () -> new LinkRepr(0, 0, 0, 70000));
    }

    @Test
    void everyTwoByteFieldRoundTrips() {
        MemorySegment out = MemorySegment.ofArray(new byte[8]);
        LinkHeader h = new LinkHeader().wrap(out, 0);
        for (int v = 0; v <= 0xFFFF; v += 257) {
            LinkRepr r = new LinkRepr(v, 0xFFFF - v, v ^ 0x5555, v);
            r.emitInto(h);
            assertEquals(r, LinkRepr.parse(h));
        }
    }
}
