package dev.nupa.l2;

import java.util.Arrays;

/**
 * Which receive ring of its destination a frame of each service level goes to (docs/link-layer.md, "Service levels"):
 * 16 levels, 0 the lowest, as InfiniBand's SL (IBA 7.6.5) and a QP's {@code ah_attr.sl}. The rings are served by
 * strict priority, highest first ({@link RingPolicy}), so a level is a priority once it has a ring of its own.
 * Immutable; {@link #ring} is an array load, safe from any thread.
 */
public final class ServiceLevels {
    /** Service levels 0 .. 15. */
    public static final int LEVELS = 16;

    private final int rings;
    private final byte[] ringOf;

    private ServiceLevels(int rings, byte[] ringOf) {
        this.rings = rings;
        this.ringOf = ringOf;
    }

    /** The default for a fabric of {@code rings} rings per node: level {@code l} on ring {@code l * rings / 16}, so higher levels on higher rings, all on ring 0 when there is one. */
    public static ServiceLevels defaults(int rings) {
        checkRings(rings);
        byte[] r = new byte[LEVELS];
        for (int l = 0; l < LEVELS; l++) {
            r[l] = (byte) (l * rings / LEVELS);
        }
        return new ServiceLevels(rings, r);
    }

    /** Every level on ring 0: one shared ring, whatever the fabric has (the baseline QoS is measured against). */
    public static ServiceLevels shared(int rings) {
        checkRings(rings);
        return new ServiceLevels(rings, new byte[LEVELS]);
    }

    /** An explicit map: {@code ringOfLevel[l]} is level l's ring; 16 entries, each in 0 .. rings - 1. */
    public static ServiceLevels of(int rings, int... ringOfLevel) {
        checkRings(rings);
        if (ringOfLevel.length != LEVELS) {
            throw new IllegalArgumentException("a service level map names a ring for each of the " + LEVELS
                    + " levels, not " + ringOfLevel.length + "; give " + LEVELS + " ring numbers");
        }
        byte[] r = new byte[LEVELS];
        for (int l = 0; l < LEVELS; l++) {
            if (ringOfLevel[l] < 0 || ringOfLevel[l] >= rings) {
                throw new IllegalArgumentException("service level " + l + " maps to ring " + ringOfLevel[l]
                        + ", outside 0.." + (rings - 1) + "; the fabric has " + rings + " ring(s) per node");
            }
            r[l] = (byte) ringOfLevel[l];
        }
        return new ServiceLevels(rings, r);
    }

    /**
     * Parses "default", "shared", or 16 comma-separated ring numbers (level 0 first) for a fabric of {@code rings} rings
     * per node; throws IllegalArgumentException naming the problem.
     */
    public static ServiceLevels parse(String spec, int rings) {
        String s = spec.strip();
        if (s.equals("default")) {
            return defaults(rings);
        }
        if (s.equals("shared")) {
            return shared(rings);
        }
        String[] parts = s.split(",");
        int[] r = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                r[i] = Integer.parseInt(parts[i].strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("service level map \"" + spec + "\": \"" + parts[i]
                        + "\" is not a ring number; give default, shared or " + LEVELS + " ring numbers");
            }
        }
        return of(rings, r);
    }

    private static void checkRings(int rings) {
        if (rings < 1 || rings > LEVELS) {
            throw new IllegalArgumentException("rings per node " + rings + " is outside 1.." + LEVELS);
        }
    }

    /** The ring of {@code level}; a level outside 0..15 is taken modulo 16 (the 4 bits of an SL). */
    public int ring(int level) {
        return ringOf[level & (LEVELS - 1)];
    }

    /** The rings per node this map was made for. */
    public int rings() {
        return rings;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ServiceLevels s && s.rings == rings && Arrays.equals(s.ringOf, ringOf);
    }

    @Override
    public int hashCode() {
        return rings * 31 + Arrays.hashCode(ringOf);
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        for (int l = 0; l < LEVELS; l++) {
            b.append(l == 0 ? "" : ",").append(ringOf[l]);
        }
        return "ServiceLevels[" + rings + " rings: " + b + "]";
    }
}
