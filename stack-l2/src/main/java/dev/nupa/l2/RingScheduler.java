package dev.nupa.l2;

/**
 * The order in which one poll serves a node's receive rings, after a {@link RingPolicy}: the round's leader first, then
 * the other rings from the highest down. Sans-IO (the rings are a {@link Rings} given per poll) and allocation-free;
 * one per link, used by its polling thread only.
 */
final class RingScheduler {
    /** The rings being served: takes up to {@code limit} frames of ring {@code ring}, returns how many. */
    interface Rings {
        int poll(int ring, int limit);
    }

    private final int rings;
    private final int burst;
    /** The leader of each round of a cycle, spread as a smooth weighted round robin (nginx's). */
    private final int[] leaders;
    private int round;

    RingScheduler(RingPolicy policy) {
        this.rings = policy.rings();
        this.burst = policy.burst();
        int[] w = policy.weights();
        int total = 0;
        for (int x : w) {
            total += x;
        }
        leaders = new int[total];
        int[] current = new int[rings];
        for (int i = 0; i < total; i++) {
            int best = -1;
            for (int r = rings - 1; r >= 0; r--) {
                current[r] += w[r];
                if (w[r] > 0 && (best < 0 || current[r] > current[best])) {
                    best = r;
                }
            }
            current[best] -= total;
            leaders[i] = best;
        }
    }

    /** One round: up to {@code limit} frames over all rings; returns how many. */
    int poll(Rings source, int limit) {
        int leader = leaders[round];
        round = round + 1 == leaders.length ? 0 : round + 1;
        int top = rings - 1;
        int n = source.poll(leader, leader == top ? limit : Math.min(burst, limit));
        for (int r = top; r >= 0 && n < limit; r--) {
            if (r != leader) {
                n += source.poll(r, r == top ? limit - n : Math.min(burst, limit - n));
            }
        }
        return n;
    }

    /** The leader of each round of one cycle (for tests). */
    int[] leaders() {
        return leaders.clone();
    }
}
