package dev.nupa.ip;

import java.util.Arrays;

import dev.nupa.l2.ServiceLevels;

/**
 * The service level (0..15, {@link ServiceLevels}) of an IPv4 datagram, from its DSCP (the TOS byte's high 6 bits,
 * RFC 2474): the level picks the ring of the receiving node the datagram goes to (docs/link-layer.md, "Service
 * levels"). The default is the DSCP's high 4 bits, {@code dscp >> 2}: class selectors in order (CS0 0, CS1 2, ..., CS6
 * 12, CS7 14), AF4x 8, EF (46) 11. With two rings per node everything from CS4 (DSCP 32) up, so EF, CS6 and CS7, takes
 * the high ring. Immutable; {@link #level} is an array load.
 */
public final class DscpLevels {
    private static final DscpLevels DEFAULTS;

    static {
        byte[] l = new byte[64];
        for (int d = 0; d < 64; d++) {
            l[d] = (byte) (d >> 2);
        }
        DEFAULTS = new DscpLevels(l);
    }

    private final byte[] levelOf;

    private DscpLevels(byte[] levelOf) {
        this.levelOf = levelOf;
    }

    public static DscpLevels defaults() {
        return DEFAULTS;
    }

    /** The defaults with {@code dscp} at {@code level}; throws IllegalArgumentException for a DSCP outside 0..63 or a level outside 0..15. */
    public DscpLevels with(int dscp, int level) {
        if (dscp < 0 || dscp > 63) {
            throw new IllegalArgumentException("DSCP " + dscp + " is outside 0..63 (RFC 2474)");
        }
        if (level < 0 || level >= ServiceLevels.LEVELS) {
            throw new IllegalArgumentException("service level " + level + " is outside 0.." + (ServiceLevels.LEVELS - 1));
        }
        byte[] l = levelOf.clone();
        l[dscp] = (byte) level;
        return new DscpLevels(l);
    }

    /**
     * Parses "default" or a comma list of DSCP=LEVEL pairs over the defaults (e.g. "46=15,34=12"); throws
     * IllegalArgumentException naming the problem.
     */
    public static DscpLevels parse(String spec) {
        DscpLevels d = DEFAULTS;
        String s = spec.strip();
        if (s.equals("default")) {
            return d;
        }
        for (String pair : s.split(",")) {
            int eq = pair.indexOf('=');
            try {
                if (eq < 0) {
                    throw new NumberFormatException();
                }
                d = d.with(Integer.parseInt(pair.substring(0, eq).strip()), Integer.parseInt(pair.substring(eq + 1).strip()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("DSCP map \"" + spec + "\": \"" + pair + "\" is not DSCP=LEVEL; give e.g. 46=15,34=12, or default");
            }
        }
        return d;
    }

    /** The service level of a datagram whose TOS byte is {@code tos} (ECN bits ignored). */
    public int level(int tos) {
        return levelOf[(tos >>> 2) & 63];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DscpLevels d && Arrays.equals(d.levelOf, levelOf);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(levelOf);
    }
}
