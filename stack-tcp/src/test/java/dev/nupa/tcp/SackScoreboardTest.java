package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The RFC 6675 scoreboard on its own: Update, IsLost, SetPipe and the hole search, across the 2^32 wrap too. */
class SackScoreboardTest {
    static final int SMSS = 1000;

    /** Sequence numbers start just below the wrap, so every test crosses it. */
    static final int BASE = -5_000;

    static int at(int k) {
        return BASE + k * SMSS;
    }

    @Test
    void rfc6675_update_keepsSortedDisjointRangesAndCountsOnlyNewOctets() {
        SackScoreboard b = new SackScoreboard(8);
        assertEquals(SMSS, b.add(at(5), at(6)));
        assertEquals(SMSS, b.add(at(1), at(2)));
        assertEquals(0, b.add(at(5), at(6)), "known octets are not new");
        assertEquals(SMSS, b.add(at(3), at(4)));
        assertEquals("[1,2) [3,4) [5,6)", ranges(b));
        assertEquals(2 * SMSS, b.add(at(2), at(5)), "a range bridging three merges them; only the gaps are new");
        assertEquals("[1,6)", ranges(b));
        assertEquals(SMSS, b.add(at(6), at(7)), "a touching range merges too");
        assertEquals("[1,7)", ranges(b));
        assertEquals(0, b.add(at(7), at(7)), "an empty range is nothing");
        assertTrue(b.sacked(at(1)) && b.sacked(at(7) - 1) && !b.sacked(at(7)) && !b.sacked(at(1) - 1));
    }

    @Test
    void aFullScoreboardForgetsARangeThatNeedsASlotButStillMerges() {
        SackScoreboard b = new SackScoreboard(2);
        b.add(at(1), at(2));
        b.add(at(3), at(4));
        assertEquals(0, b.add(at(5), at(6)), "no slot: forgotten (costs a retransmission, loses nothing)");
        assertEquals(SMSS, b.add(at(2), at(3)), "merging needs no slot");
        assertEquals("[1,4)", ranges(b));
        assertThrows(IllegalArgumentException.class, () -> new SackScoreboard(0));
    }

    @Test
    void dropBelowForgetsWhatTheCumulativeAckCoversAndCutsARangeItEntered() {
        SackScoreboard b = new SackScoreboard(8);
        b.add(at(1), at(2));
        b.add(at(3), at(5));
        b.dropBelow(at(4) - 10);
        assertEquals(1, b.count(), ranges(b));
        assertEquals(at(4) - 10, b.left(0));
        assertEquals(at(5), b.right(0));
        assertEquals(SMSS + 10, b.sackedBytes(at(0), at(9)));
        b.dropBelow(at(5));
        assertTrue(b.isEmpty());
    }

    @Test
    void rfc6675_isLost_dupThreshRangesAboveOrMoreThanTwoSmssOfOctetsAbove() {
        SackScoreboard b = new SackScoreboard(8);
        b.add(at(1), at(3)); // 2 SMSS above at(0): not more than (DupThresh - 1) * SMSS
        assertFalse(b.isLost(at(0), SMSS));
        b.add(at(3), at(3) + 1); // one octet more, same range
        assertTrue(b.isLost(at(0), SMSS));
        SackScoreboard small = new SackScoreboard(8);
        small.add(at(1), at(1) + 1);
        small.add(at(2), at(2) + 1);
        assertFalse(small.isLost(at(0), SMSS), "two ranges of one octet");
        small.add(at(3), at(3) + 1);
        assertTrue(small.isLost(at(0), SMSS), "DupThresh discontiguous ranges, however small");
        assertFalse(small.isLost(at(1) + 1, SMSS), "only what lies above counts");
    }

    @Test
    void rfc6675_setPipe_notLostOnceRetransmittedOnceMoreLostNotAtAll() {
        SackScoreboard b = new SackScoreboard(8);
        // Sent 0..9; SACKed 2, 4, 6: holes 0-1 (lost: 3 ranges above), 3, 5 (not lost), 7-9 (above all).
        b.add(at(2), at(3));
        b.add(at(4), at(5));
        b.add(at(6), at(7));
        assertEquals(5 * SMSS, b.pipe(at(0), at(10), at(0), SMSS));
        assertEquals(6 * SMSS, b.pipe(at(0), at(10), at(1), SMSS), "segment 0 retransmitted: counts once");
        assertEquals(8 * SMSS, b.pipe(at(0), at(10), at(4), SMSS), "0, 1 retransmitted (once each), 3 (twice)");
        assertEquals(10 * SMSS, new SackScoreboard(1).pipe(at(0), at(10), at(0), SMSS), "nothing SACKed: FlightSize");
    }

    @Test
    void rfc6675_nextSeg_findHoleGivesTheFirstUnsackedOctetFromHighRxtBelowTheHighestSack() {
        SackScoreboard b = new SackScoreboard(8);
        b.add(at(2), at(3));
        b.add(at(4), at(5));
        b.add(at(6), at(7));
        assertTrue(b.findHole(at(0), at(0), SMSS));
        assertEquals(at(0), b.holeStart());
        assertEquals(at(2), b.holeEnd());
        assertTrue(b.holeLost());
        assertTrue(b.findHole(at(0), at(2), SMSS), "from inside a SACKed range: the next hole");
        assertEquals(at(3), b.holeStart());
        assertEquals(at(4), b.holeEnd());
        assertFalse(b.holeLost(), "two ranges, 2 SMSS above");
        assertTrue(b.findHole(at(0), at(5) + 7, SMSS));
        assertEquals(at(5) + 7, b.holeStart(), "from inside a hole: there");
        assertFalse(b.findHole(at(0), at(6), SMSS), "above the highest SACKed octet there is no hole (1.b)");
        assertEquals(at(7), b.skipSacked(at(6)));
        assertEquals(at(5), b.skipSacked(at(5)));
        assertEquals(at(4), b.nextSackedAbove(at(3), at(9)));
        assertEquals(at(9), b.nextSackedAbove(at(7), at(9)));
    }

    private static String ranges(SackScoreboard b) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < b.count(); i++) {
            sb.append(i == 0 ? "" : " ").append('[').append((b.left(i) - BASE) / SMSS).append(',')
                    .append((b.right(i) - BASE) / SMSS).append(')');
        }
        return sb.toString();
    }
}
