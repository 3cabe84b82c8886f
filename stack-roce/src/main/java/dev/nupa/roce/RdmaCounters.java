package dev.nupa.roce;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.EnumMap;
import java.util.Map;

/** The context's counters: one writer (the context's thread), read from any thread. */
final class RdmaCounters {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private final long[] values = new long[RdmaCounter.ALL.length];

    void add(RdmaCounter c, long n) {
        int i = c.ordinal();
        LONGS.setOpaque(values, i, (long) LONGS.getOpaque(values, i) + n);
    }

    long get(RdmaCounter c) {
        return (long) LONGS.getOpaque(values, c.ordinal());
    }

    Map<RdmaCounter, Long> snapshot() {
        Map<RdmaCounter, Long> m = new EnumMap<>(RdmaCounter.class);
        for (RdmaCounter c : RdmaCounter.ALL) {
            m.put(c, get(c));
        }
        return m;
    }
}
