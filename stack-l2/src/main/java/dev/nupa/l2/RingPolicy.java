package dev.nupa.l2;

import java.util.Arrays;

/**
 * How a link's poll serves its receive rings (docs/link-layer.md, "Service levels"): strict priority, the highest ring
 * first, with a weighted share of first turns so that a flooding high ring cannot starve a lower one.
 *
 * <p>Every poll is a round. Ring {@code r} leads {@code weights[r]} rounds of every cycle of {@code sum(weights)}
 * rounds (spread evenly, as a smooth weighted round robin): the leader is served first, then the other rings from the
 * highest down, until the poll's limit. The highest ring takes up to the whole limit in its turn; a lower ring at most
 * {@code burst} frames, so a frame on a higher ring waits behind at most {@code burst} frames of a lower one. Under a
 * flooding highest ring, a lower ring still gets {@code burst} frames in each round it leads.
 *
 * @param weights rounds each ring leads per cycle, ring 0 first; one per ring, each 0 .. 4096, some above 0
 * @param burst   most frames a ring below the highest gives in one turn, 1 .. 4096
 */
public record RingPolicy(int[] weights, int burst) {
    /** The default burst: a high frame waits behind at most this many lower frames. */
    public static final int DEFAULT_BURST = 4;
    /** In the default weights, one round in this many is led by a lower ring (in turn). */
    public static final int DEFAULT_LOWER_EVERY = 8;

    public RingPolicy {
        weights = weights.clone();
        if (weights.length < 1 || weights.length > ServiceLevels.LEVELS) {
            throw new IllegalArgumentException("ring weights name " + weights.length + " rings; give one weight per ring, 1.."
                    + ServiceLevels.LEVELS);
        }
        long sum = 0;
        for (int i = 0; i < weights.length; i++) {
            if (weights[i] < 0 || weights[i] > 4096) {
                throw new IllegalArgumentException("weight " + weights[i] + " of ring " + i + " is outside 0..4096");
            }
            sum += weights[i];
        }
        if (sum == 0) {
            throw new IllegalArgumentException("ring weights are all 0; give at least one ring a weight above 0");
        }
        if (burst < 1 || burst > 4096) {
            throw new IllegalArgumentException("ring burst " + burst + " is outside 1..4096");
        }
    }

    /**
     * The default for {@code rings} rings: each lower ring weight 1 and the highest {@code 7 * (rings - 1)}, so one round in
     * {@value #DEFAULT_LOWER_EVERY} is led by a lower ring, in turn; burst {@value #DEFAULT_BURST}.
     */
    public static RingPolicy defaults(int rings) {
        if (rings < 1 || rings > ServiceLevels.LEVELS) {
            throw new IllegalArgumentException("rings per node " + rings + " is outside 1.." + ServiceLevels.LEVELS);
        }
        int[] w = new int[rings];
        Arrays.fill(w, 1);
        w[rings - 1] = rings == 1 ? 1 : (DEFAULT_LOWER_EVERY - 1) * (rings - 1);
        return new RingPolicy(w, DEFAULT_BURST);
    }

    /**
     * Parses "default" or "W0,W1,...[/BURST]" (one weight per ring, ring 0 first) for {@code rings} rings; throws
     * IllegalArgumentException naming the problem.
     */
    public static RingPolicy parse(String spec, int rings) {
        String s = spec.strip();
        if (s.equals("default")) {
            return defaults(rings);
        }
        int slash = s.indexOf('/');
        String[] parts = (slash >= 0 ? s.substring(0, slash) : s).split(",");
        try {
            int[] w = new int[parts.length];
            for (int i = 0; i < parts.length; i++) {
                w[i] = Integer.parseInt(parts[i].strip());
            }
            if (w.length != rings) {
                throw new IllegalArgumentException("ring weights \"" + spec + "\" name " + w.length + " rings; the fabric has "
                        + rings + " ring(s) per node: give one weight each");
            }
            return new RingPolicy(w, slash >= 0 ? Integer.parseInt(s.substring(slash + 1).strip()) : DEFAULT_BURST);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("ring weights \"" + spec + "\" are not W0,W1,...[/BURST] in whole numbers,"
                    + " nor default");
        }
    }

    /** The rings this policy is for. */
    public int rings() {
        return weights.length;
    }

    @Override
    public int[] weights() {
        return weights.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RingPolicy p && p.burst == burst && Arrays.equals(p.weights, weights);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(weights) * 31 + burst;
    }

    @Override
    public String toString() {
        return "RingPolicy[weights " + Arrays.toString(weights) + ", burst " + burst + "]";
    }
}
