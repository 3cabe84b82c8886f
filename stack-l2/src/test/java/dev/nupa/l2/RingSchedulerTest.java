package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The order in which a poll serves the rings: strict priority, a weighted share of first turns, a burst bound. */
class RingSchedulerTest {
    /** Rings as counts of waiting frames (-1: endless), recording each frame taken in order. */
    static final class FakeRings implements RingScheduler.Rings {
        final long[] waiting;
        final long[] taken;
        final List<Integer> order = new ArrayList<>();

        FakeRings(long... waiting) {
            this.waiting = waiting;
            this.taken = new long[waiting.length];
        }

        @Override
        public int poll(int ring, int limit) {
            int n = 0;
            while (n < limit && waiting[ring] != 0) {
                if (waiting[ring] > 0) {
                    waiting[ring]--;
                }
                taken[ring]++;
                order.add(ring);
                n++;
            }
            return n;
        }
    }

    @Test
    void theHigherRingGoesFirst() {
        RingScheduler s = new RingScheduler(new RingPolicy(new int[] {0, 1}, 4)); // ring 0 never leads
        FakeRings r = new FakeRings(3, 2);
        assertEquals(5, s.poll(r, 16));
        assertEquals(List.of(1, 1, 0, 0, 0), r.order);
    }

    @Test
    void aLowerRingGivesAtMostItsBurstAPoll() {
        RingScheduler s = new RingScheduler(RingPolicy.defaults(2));
        FakeRings r = new FakeRings(-1, 0);
        for (int i = 0; i < 100; i++) {
            assertEquals(RingPolicy.DEFAULT_BURST, s.poll(r, 64), "poll " + i);
        }
    }

    @Test
    void aHighFrameWaitsBehindAtMostOneBurstOfLowerFrames() {
        RingScheduler s = new RingScheduler(RingPolicy.defaults(2));
        FakeRings r = new FakeRings(-1, 0);
        for (int i = 0; i < 20; i++) {
            s.poll(r, 64);
        }
        r.waiting[1] = 1; // a ping arrives on the high ring while the low one floods
        r.order.clear();
        s.poll(r, 64);
        if (r.taken[1] == 0) {
            r.order.clear();
            s.poll(r, 64);
        }
        assertEquals(1, r.taken[1]);
        assertTrue(r.order.indexOf(1) <= RingPolicy.DEFAULT_BURST, "the high frame came after " + r.order.indexOf(1) + " low ones");
    }

    @Test
    void aLowRingIsServedUnderAFloodingHighRing() {
        RingScheduler s = new RingScheduler(RingPolicy.defaults(2)); // weights 1, 7; burst 4
        FakeRings r = new FakeRings(-1, -1);
        int rounds = 8 * 100;
        for (int i = 0; i < rounds; i++) {
            assertEquals(64, s.poll(r, 64));
        }
        // Ring 0 leads one round in 8 and gives its burst then; otherwise the flooding high ring takes every slot.
        assertEquals(100L * RingPolicy.DEFAULT_BURST, r.taken[0]);
        assertEquals(64L * rounds - 100L * RingPolicy.DEFAULT_BURST, r.taken[1]);
    }

    @Test
    void weightsSetTheShareOfFirstTurns() {
        RingScheduler s = new RingScheduler(new RingPolicy(new int[] {1, 1, 2}, 8));
        FakeRings r = new FakeRings(-1, -1, -1);
        for (int i = 0; i < 400; i++) {
            s.poll(r, 16);
        }
        // Each of rings 0 and 1 leads 100 rounds (8 frames each); ring 2 takes the rest of every round.
        assertEquals(800, r.taken[0]);
        assertEquals(800, r.taken[1]);
        assertEquals(400 * 16 - 1600, r.taken[2]);
        int[] leaders = s.leaders();
        assertEquals(4, leaders.length);
        assertEquals(2, leaders[0], "the highest weight leads first");
        assertNotEquals(leaders[0], leaders[1], "turns are spread, not bunched");
    }

    @Test
    void aMiddleRingBeatsALowerOneInStrictOrder() {
        RingScheduler s = new RingScheduler(new RingPolicy(new int[] {0, 0, 1}, 2));
        FakeRings r = new FakeRings(5, 5, 0);
        assertEquals(4, s.poll(r, 4));
        assertEquals(List.of(1, 1, 0, 0), r.order);
    }
}
