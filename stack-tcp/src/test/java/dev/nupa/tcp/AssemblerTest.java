package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The out-of-order ranges behind RCV.NXT's advance and the SACK blocks (RFC 2018). */
class AssemblerTest {

    @Test
    void rangesMergeWhenTheyTouchAndHoleFillReturnsWhatBecameContiguous() {
        Assembler a = new Assembler(8);
        assertTrue(a.add(10, 20));
        assertTrue(a.add(30, 40));
        assertTrue(a.add(20, 30)); // touches both: one range 10..40
        assertEquals(1, a.ranges());
        assertEquals(0, a.advance(5), "5 in-order bytes do not reach the range at 10");
        assertEquals(30, a.advance(5), "10..40 became 5..35, then 0..30: all 30 bytes are now in order");
        assertTrue(a.isEmpty());
    }

    @Test
    void rangesBeyondTheFilledOneStayRelativeToTheNewRcvNxt() {
        // Found by LossyNetworkTest: after a hole fill released a range, later ranges were not moved
        // by the released bytes, so SACK blocks and RCV.NXT ran ahead of what the sender had sent.
        Assembler a = new Assembler(8);
        a.add(100, 200);
        a.add(300, 400);
        int more = a.advance(100); // bytes 0..100 arrived in order: 100..200 follows at once
        assertEquals(100, more);
        // RCV.NXT moved by 200 in all: the second range must now be at 100..200 relative to it.
        int[] l = new int[4];
        int[] r = new int[4];
        assertEquals(1, a.sackBlocks(1000, l, r, 4));
        assertArrayEquals(new int[] {1100, 1200}, new int[] {l[0], r[0]});
    }

    @Test
    void sackBlocksPutTheMostRecentFirstAndRespectTheLimit() {
        Assembler a = new Assembler(8);
        a.add(10, 20);
        a.add(30, 40);
        a.add(50, 60);
        a.add(32, 35); // inside 30..40: that range is the most recent
        int[] l = new int[4];
        int[] r = new int[4];
        assertEquals(2, a.sackBlocks(0, l, r, 2));
        assertEquals(30, l[0]);
        assertEquals(40, r[0]);
    }

    @Test
    void aBoundedNumberOfRangesIsKept() {
        Assembler a = new Assembler(2);
        assertTrue(a.add(10, 20));
        assertTrue(a.add(30, 40));
        assertFalse(a.add(50, 60), "a third disjoint range is refused, not kept");
        assertEquals(2, a.ranges());
        assertTrue(a.add(15, 35), "a merge needs no new range");
        assertEquals(1, a.ranges());
    }
}
