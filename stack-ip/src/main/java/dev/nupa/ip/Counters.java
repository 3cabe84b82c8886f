package dev.nupa.ip;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.EnumMap;
import java.util.Map;

/**
 * The live counters of one stack, allocation-free and without locked instructions: each counter has
 * one writer at a time (the datapath thread for what it receives, or a sender holding the stack's
 * send lock), so an opaque load and store suffice and readers on other threads see whole values.
 */
final class Counters {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final IpCounter[] ALL = IpCounter.values();

    private final long[] values = new long[ALL.length];

    void inc(IpCounter c) {
        add(c, 1L);
    }

    void add(IpCounter c, long delta) {
        int i = c.ordinal();
        LONGS.setOpaque(values, i, (long) LONGS.getOpaque(values, i) + delta);
    }

    long get(IpCounter c) {
        return (long) LONGS.getOpaque(values, c.ordinal());
    }

    Map<IpCounter, Long> snapshot() {
        Map<IpCounter, Long> m = new EnumMap<>(IpCounter.class);
        for (IpCounter c : ALL) {
            m.put(c, get(c));
        }
        return m;
    }
}
