package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.RdmaCounter;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.EnumMap;
import java.util.Map;

/** The context's counters: one writer (the context's thread), read from any thread. */
public final class RdmaCounters {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final RdmaCounter[] ALL = RdmaCounter.values();
    private final long[] values = new long[ALL.length];

    public void add(RdmaCounter c, long n) {
        int i = c.ordinal();
        LONGS.setOpaque(values, i, (long) LONGS.getOpaque(values, i) + n);
    }

    public long get(RdmaCounter c) {
        return (long) LONGS.getOpaque(values, c.ordinal());
    }

    public Map<RdmaCounter, Long> snapshot() {
        Map<RdmaCounter, Long> m = new EnumMap<>(RdmaCounter.class);
        for (RdmaCounter c : ALL) {
            m.put(c, get(c));
        }
        return m;
    }
}
