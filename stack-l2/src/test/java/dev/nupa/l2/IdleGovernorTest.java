package dev.nupa.l2;

import static dev.nupa.l2.IdleGovernor.SLEEP;
import static dev.nupa.l2.IdleGovernor.SPIN;
import static dev.nupa.l2.IdleGovernor.YIELD;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** {@link IdleGovernor}'s decisions on virtual time: the clock is a number the test moves. */
class IdleGovernorTest {
    private static final long US = 1_000L;
    private final Datapath.Idle adaptive = Datapath.Idle.adaptive(); // spin 5 us, poll at most 50 us

    /** Virtual time, moved by the test. */
    private long now = 1_000_000_000L;

    /** An idle period from now on that ends with work {@code gapUs} later; returns what its first round did. */
    private int period(IdleGovernor g, long gapUs) {
        int first = g.next(now);
        now += gapUs * US;
        g.work(now);
        return first;
    }

    @Test
    void fixedIdlesByTimeSinceTheLastWork() {
        IdleGovernor g = new IdleGovernor(new Datapath.Idle(50 * US, 1_000 * US, 10_000_000L), now);
        g.work(now);
        assertEquals(SPIN, g.next(now + 49 * US));
        assertEquals(YIELD, g.next(now + 50 * US));
        assertEquals(YIELD, g.next(now + 999 * US));
        assertEquals(SLEEP, g.next(now + 1_000 * US));
        g.work(now + 2_000 * US); // work again: spinning again, whatever came before
        assertEquals(SPIN, g.next(now + 2_001 * US));
    }

    @Test
    void busySpinNeverSleeps() {
        IdleGovernor g = new IdleGovernor(Datapath.Idle.busySpin(), now);
        assertEquals(SPIN, g.next(now + 3_600_000_000_000L));
    }

    @Test
    void aFreshLoopPollsItsWholeWindowThenSleeps() {
        IdleGovernor g = new IdleGovernor(adaptive, now);
        g.work(now);
        assertEquals(SPIN, g.next(now));
        assertEquals(SPIN, g.next(now + 4 * US));
        assertEquals(YIELD, g.next(now + 5 * US));
        assertEquals(YIELD, g.next(now + 49 * US));
        assertEquals(SLEEP, g.next(now + 50 * US));
        assertEquals(SLEEP, g.next(now + 5_000 * US), "once asleep the period sleeps on (a timer woke it, not work)");
    }

    @Test
    void aRunOfLongGapsSleepsAtOnceAndBackToBackWorkSpinsAgain() {
        IdleGovernor g = new IdleGovernor(adaptive, now);
        period(g, 5_000);
        period(g, 5_000);
        period(g, 5_000);
        assertEquals(SLEEP, g.next(now), "after gaps that each ended in sleep, the next period sleeps at once");
        assertEquals(0, g.window());
        now += 30 * US; // work came soon after all (a wake-up's worth later)
        g.work(now);
        period(g, 30);
        assertEquals(SPIN, g.next(now), "two short gaps in a row: polling again");
    }

    @Test
    void theWindowIsTwiceTheRecentShortGapWithinItsBounds() {
        IdleGovernor g = new IdleGovernor(adaptive, now);
        for (int i = 0; i < 40; i++) {
            period(g, 10); // closed loop: answers every 10 us
        }
        assertEquals(2 * 10 * US, g.window(), "twice the recent short gap");
        long start = now;
        assertEquals(SPIN, g.next(start));
        assertEquals(YIELD, g.next(start + 19 * US));
        assertEquals(SLEEP, g.next(start + 20 * US), "nothing within twice the recent gap: sleep");
        g.work(start + 21 * US);
        now = start + 21 * US;
        for (int i = 0; i < 40; i++) {
            period(g, 1);
        }
        assertEquals(IdleGovernor.MIN_POLL_NS, g.window(), "never below the shortest window");
        for (int i = 0; i < 40; i++) {
            period(g, 45);
        }
        assertEquals(50 * US, g.window(), "never above the strategy's bound");
    }

    @Test
    void alternatingGapsPollForTheAnswerAndSleepThroughTheNextRequest() {
        // A client at light load: its request goes out, the answer comes 30 us later, the next request 2 ms after that.
        IdleGovernor g = new IdleGovernor(adaptive, now);
        for (int i = 0; i < 10; i++) {
            period(g, 30);
            period(g, 2_000);
        }
        assertEquals(SPIN, period(g, 30), "after a long gap (a request went out) it polls for the answer");
        assertEquals(SLEEP, period(g, 2_000), "after the answer it sleeps at once");
        assertEquals(SPIN, period(g, 30));
    }

    @Test
    void aServerAtLightLoadSleepsAtOnce() {
        IdleGovernor g = new IdleGovernor(adaptive, now);
        for (int i = 0; i < 5; i++) {
            period(g, 1_000);
        }
        for (int i = 0; i < 100; i++) {
            assertEquals(SLEEP, period(g, 500 + 37 * i), "requests far apart: no polling between them");
        }
    }
}
