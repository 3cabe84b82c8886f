package dev.nupa.tcp.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** RFC 9293 3.4: comparisons modulo 2^32, at the edges where a plain {@code <} goes wrong. */
class SeqTest {
    private static final int[] EDGES = {
        0, 1, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE - 1, Integer.MIN_VALUE + 1, 0x3FFF_FFFF,
        0x4000_0000, 0xC000_0000, 0xFFFF_FFF0, 0x10, 1000, 65535, 65536
    };

    /** The reference: b - a taken modulo 2^32 as a number 0 .. 2^32 - 1, in a long. */
    private static long ahead(int a, int b) {
        return (b - (long) a) & 0xFFFF_FFFFL;
    }

    @Test
    void aNumberJustBeforeTheWrapComesBeforeOneJustAfter() {
        assertTrue(Seq.lt(0xFFFF_FFFF, 0));
        assertTrue(Seq.lt(0xFFFF_FFF0, 0x10));
        assertTrue(Seq.gt(0x10, 0xFFFF_FFF0));
        assertTrue(Seq.le(-1, 0));
        assertTrue(Seq.ge(0, -1));
        assertFalse(Seq.lt(0, 0xFFFF_FFFF));
        assertTrue(Seq.lt(Integer.MAX_VALUE, Integer.MIN_VALUE), "across the sign bit as well");
        assertFalse(Seq.gt(Integer.MAX_VALUE, Integer.MIN_VALUE));
        assertEquals(0x10, Seq.max(0xFFFF_FFF0, 0x10));
        assertEquals(0xFFFF_FFF0, Seq.min(0xFFFF_FFF0, 0x10));
        assertEquals(Integer.MIN_VALUE, Seq.max(Integer.MAX_VALUE, Integer.MIN_VALUE));
    }

    @Test
    void aNumberIsEqualToItselfOnly() {
        for (int a : EDGES) {
            assertFalse(Seq.lt(a, a));
            assertFalse(Seq.gt(a, a));
            assertTrue(Seq.le(a, a));
            assertTrue(Seq.ge(a, a));
            assertEquals(a, Seq.max(a, a));
            assertEquals(a, Seq.min(a, a));
        }
    }

    @Test
    void theOrderMatchesTheDistanceModulo2To32AtEveryPairOfEdges() {
        for (int a : EDGES) {
            for (int b : EDGES) {
                for (int da = -2; da <= 2; da++) {
                    int x = a + da;
                    long ahead = ahead(x, b);
                    String where = Integer.toUnsignedString(x) + " vs " + Integer.toUnsignedString(b);
                    assertEquals(ahead >= 1 && ahead <= 0x8000_0000L, Seq.lt(x, b), "lt " + where);
                    assertEquals(ahead <= 0x8000_0000L, Seq.le(x, b), "le " + where);
                    assertEquals(ahead > 0x8000_0000L, Seq.gt(x, b), "gt " + where);
                    assertEquals(ahead == 0 || ahead > 0x8000_0000L, Seq.ge(x, b), "ge " + where);
                    if (ahead != 0x8000_0000L) {
                        assertEquals(Seq.lt(x, b), Seq.gt(b, x), "lt mirrors gt " + where);
                        assertEquals(Seq.le(x, b), Seq.ge(b, x), "le mirrors ge " + where);
                        assertEquals(!Seq.lt(x, b), Seq.ge(x, b), "ge is not lt " + where);
                        assertEquals(Seq.lt(x, b) ? b : x, Seq.max(x, b), "max " + where);
                        assertEquals(Seq.lt(x, b) ? x : b, Seq.min(x, b), "min " + where);
                    }
                }
            }
        }
    }

    /** 2^31 apart there is no order: each is "before" the other and neither "after". Nothing in TCP gets there (windows stay below 2^30). */
    @Test
    void exactlyHalfTheSpaceApartEachComesFirst() {
        assertTrue(Seq.lt(0, Integer.MIN_VALUE));
        assertTrue(Seq.lt(Integer.MIN_VALUE, 0));
        assertFalse(Seq.gt(0, Integer.MIN_VALUE));
        assertFalse(Seq.gt(Integer.MIN_VALUE, 0));
        assertTrue(Seq.lt(5, 5 + Integer.MIN_VALUE));
        assertFalse(Seq.lt(5, 4 + Integer.MIN_VALUE) && Seq.lt(4 + Integer.MIN_VALUE, 5));
    }

    @Test
    void inWindowIsHalfOpenAndWrapsAround() {
        int start = 0xFFFF_FFF0;
        assertTrue(Seq.inWindow(start, start, 0x20));
        assertTrue(Seq.inWindow(-1, start, 0x20));
        assertTrue(Seq.inWindow(0, start, 0x20), "past the wrap");
        assertTrue(Seq.inWindow(0x0F, start, 0x20), "the last one");
        assertFalse(Seq.inWindow(0x10, start, 0x20), "start + size is outside");
        assertFalse(Seq.inWindow(start - 1, start, 0x20), "one before the start");
        assertFalse(Seq.inWindow(start, start, 0), "an empty window holds nothing, not even its start");
        assertFalse(Seq.inWindow(start, start, -5), "nor does a negative one");
        assertTrue(Seq.inWindow(start, start, 1));
        assertFalse(Seq.inWindow(start + 1, start, 1));
    }

    @Test
    void inWindowAgreesWithTheReferenceForWindowsUpTo2To31() {
        int[] sizes = {0, 1, 2, 65535, 65535 << 7, 0x3FFF_C000, 1 << 30, Integer.MAX_VALUE};
        for (int start : EDGES) {
            for (int size : sizes) {
                for (int seq : EDGES) {
                    for (int d = -2; d <= 2; d++) {
                        int x = seq + d;
                        assertEquals(ahead(start, x) < size, Seq.inWindow(x, start, size),
                                Integer.toUnsignedString(x) + " in [" + Integer.toUnsignedString(start) + ", +" + size + ")");
                    }
                }
                if (size > 0) {
                    assertTrue(Seq.inWindow(start + size - 1, start, size), "the last one of " + size);
                    assertFalse(Seq.inWindow(start + size, start, size), "the one after " + size);
                    assertFalse(Seq.inWindow(start - 1, start, size), "the one before " + size);
                }
            }
        }
    }

    @Test
    void theLargestScaledWindowStillOrdersItsEnds() {
        // RFC 7323 2.3: 65535 << 14 is the largest window; both ends stay ordered from anywhere.
        int window = 65535 << 14;
        for (int start : EDGES) {
            assertTrue(Seq.lt(start, start + window));
            assertTrue(Seq.le(start + window, start + window));
            assertTrue(Seq.inWindow(start + window - 1, start, window));
        }
    }
}
