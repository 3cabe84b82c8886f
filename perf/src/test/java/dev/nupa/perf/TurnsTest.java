package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TurnsTest {

    @Test
    void aWarmUpGoesInTurnsOfAPeerTurnThatAddUpToItsLength() {
        assertArrayEquals(new long[] {1000, 1000, 500}, Turns.warmUp(2500));
        assertArrayEquals(new long[] {1000, 1000}, Turns.warmUp(2000));
        assertArrayEquals(new long[] {7}, Turns.warmUp(7));
        assertArrayEquals(new long[0], Turns.warmUp(0));
    }

    @Test
    void iterationsSplitIntoTurnsWithAShorterLastOne() {
        Turns t = new Turns(2, 2500, 1000);
        assertEquals(3, t.count());
        assertEquals(1000, t.length(0));
        assertEquals(1000, t.length(1));
        assertEquals(500, t.length(2));
        assertEquals(1, new Turns(1, 1, 1000).count());
        assertThrows(IllegalArgumentException.class, () -> new Turns(1, 0, 1000));
    }

    /**
     * Two placements in one run: in two turns ours takes 100 against a floor of 50 (2x), in one it takes
     * 400 against 100 (4x). The median over turns says 2x; the pooled p50s (100 and 50 or 100) would
     * compare a fast turn's ours with whichever floor the pool's middle lands on.
     */
    @Test
    void theRatioIsTheMedianOfEachTurnsOwnRatio() {
        Turns t = new Turns(2, 3000, 1000);
        long[][] turns = {{100, 50}, {400, 100}, {100, 50}};
        for (long[] v : turns) {
            for (int i = 0; i < 1000; i++) {
                t.turn(0).recordValue(v[0]);
                t.turn(1).recordValue(v[1]);
            }
            t.endTurn();
        }
        assertEquals(2.0, t.ratio(0, 1), 0.01);
        assertEquals(0.5, t.ratio(1, 0), 0.01);
        assertEquals(3000, t.pooled(0).getTotalCount(), "every sample is pooled");
        assertEquals(100, t.pooled(0).getValueAtPercentile(50), 1);
        assertEquals(400, t.pooled(0).getMaxValue(), 1);
        assertEquals(0, t.turn(0).getTotalCount(), "a finished turn's histogram starts empty again");
        assertEquals(2.0, t.pooledRatio(0, 1), 0.05);
    }

    @Test
    void anEvenNumberOfTurnsAveragesTheMiddleTwo() {
        Turns t = new Turns(2, 2, 1);
        turn(t, 200, 100);
        turn(t, 400, 100);
        assertEquals(3.0, t.ratio(0, 1), 0.01);
    }

    @Test
    void turnsWhereASeriesRecordedNothingAreLeftOut() {
        Turns t = new Turns(2, 2, 1);
        turn(t, 300, 100);
        turn(t, 500, 0); // the other series was not measured this turn
        assertEquals(3.0, t.ratio(0, 1), 0.01);
        Turns none = new Turns(2, 1, 1);
        none.endTurn();
        assertTrue(Double.isNaN(none.ratio(0, 1)), "no turn with both series: no ratio");
    }

    /** One turn with one sample of series 0 and, unless {@code floor} is 0, one of series 1. */
    private static void turn(Turns t, long ours, long floor) {
        t.turn(0).recordValue(ours);
        if (floor > 0) {
            t.turn(1).recordValue(floor);
        }
        t.endTurn();
    }
}
