package dev.nupa.l2;

/**
 * Decides how a loop idles after a round with no work: spin, yield or sleep (sans-IO: it is told the time and what
 * happened, and reads no clock, so tests drive it on virtual time). One per loop, used by its thread only; nothing
 * allocated after construction.
 *
 * <p>A fixed {@link Datapath.Idle} spins for {@code spinNs} after the last work, yields until {@code yieldNs}, then
 * sleeps. An adaptive one ({@link Datapath.Idle#adapts}, as {@link Datapath.Idle#adaptive}) polls only where its recent history says work is likely to
 * come soon, in the manner of KVM's halt polling and Linux's cpuidle haltpoll governor (poll a window learnt from
 * recent wake-ups, sleep when they say polling is wasted; Documentation/virt/kvm/halt-polling.rst): it learns from
 * each idle period's gap (from the first idle round to the round that found work) whether the gap was short
 * ({@code <= yieldNs}: polling through it would have caught the work) and how long short gaps are. The prediction is
 * indexed by the class of the previous gap, one bit of history as a branch predictor keeps it (a two-bit saturating
 * counter per class), since at light load gaps alternate: a client's answer comes soon after its request went out,
 * its next request long after the answer; a server's requests all come far apart. A period predicted short polls for
 * {@code K} times that class's recent short gap (at least {@link #MIN_POLL_NS}, at most {@code yieldNs}), spinning
 * for the first {@code spinNs} of it and yielding after; a period predicted long sleeps at once. A run of gaps that
 * ended in sleep so stops polling, and work that comes back to back brings polling back.
 */
public final class IdleGovernor {
    /** What an idle round does. */
    public static final int SPIN = 0;
    public static final int YIELD = 1;
    public static final int SLEEP = 2;

    /** Polling window: this many times the recent short gap (its jitter, and a late answer, still caught). */
    static final int K = 2;
    /** The shortest window a period predicted short polls: a few rounds of the loop. */
    static final long MIN_POLL_NS = 5_000L;
    /** A two-bit saturating counter predicts short from here up. */
    private static final int PREDICT_SHORT = 2;
    private static final int COUNTER_MAX = 3;

    private final long spinNs;
    private final long yieldNs;
    private final boolean adaptive;

    private long lastWork;
    private boolean idle;
    private long periodStart;
    private long spinUntil;
    private long pollUntil;
    /** Class of the previous gap (1: short), indexing the two predictors. */
    private int previousShort;
    /** Per class of the previous gap: whether the next is short (two-bit counter), and the recent short gap (ns). */
    private int counterAfterLong = COUNTER_MAX;
    private int counterAfterShort = COUNTER_MAX;
    private long shortAfterLong;
    private long shortAfterShort;

    public IdleGovernor(Datapath.Idle idle, long now) {
        this.spinNs = idle.spinNs();
        this.yieldNs = idle.yieldNs();
        this.adaptive = idle.adapts();
        this.lastWork = now;
        long start = Math.max(MIN_POLL_NS, yieldNs / K); // a fresh loop polls its whole window first
        this.shortAfterLong = start;
        this.shortAfterShort = start;
    }

    /** A round did work at {@code now} (frames, tasks, an event loop's own tasks): an idle period, if any, ends. */
    public void work(long now) {
        if (idle && adaptive) {
            learn(now - periodStart);
        }
        idle = false;
        lastWork = now;
    }

    /** An idle round at {@code now}: {@link #SPIN}, {@link #YIELD} or {@link #SLEEP}. */
    public int next(long now) {
        if (!adaptive) {
            long idleFor = now - lastWork;
            return idleFor < spinNs ? SPIN : idleFor < yieldNs ? YIELD : SLEEP;
        }
        if (!idle) {
            idle = true;
            periodStart = now;
            long poll = window();
            spinUntil = Math.min(spinNs, poll);
            pollUntil = poll;
        }
        long idleFor = now - periodStart;
        return idleFor < spinUntil ? SPIN : idleFor < pollUntil ? YIELD : SLEEP;
    }

    /** How long the period that starts now polls before it sleeps: 0 when its gap is predicted long. */
    long window() {
        int counter = previousShort == 1 ? counterAfterShort : counterAfterLong;
        if (counter < PREDICT_SHORT) {
            return 0;
        }
        long recent = previousShort == 1 ? shortAfterShort : shortAfterLong;
        return Math.min(yieldNs, Math.max(MIN_POLL_NS, K * recent));
    }

    /** Learns from a period's gap: its class's counter moves, a short gap's length enters its class's mean. */
    private void learn(long gap) {
        boolean isShort = gap <= yieldNs;
        if (previousShort == 1) {
            counterAfterShort = step(counterAfterShort, isShort);
            if (isShort) {
                shortAfterShort += (gap - shortAfterShort) >> 2; // a moving mean of weight 1/4
            }
        } else {
            counterAfterLong = step(counterAfterLong, isShort);
            if (isShort) {
                shortAfterLong += (gap - shortAfterLong) >> 2;
            }
        }
        previousShort = isShort ? 1 : 0;
    }

    private static int step(int counter, boolean up) {
        return up ? Math.min(COUNTER_MAX, counter + 1) : Math.max(0, counter - 1);
    }
}
