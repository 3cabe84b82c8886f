package dev.nupa.ip;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.EnumMap;
import java.util.Map;

/** The live counters of one stack: atomic adds on a long array (senders and the datapath both count); allocation-free. */
final class Counters {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final IpCounter[] ALL = IpCounter.values();

    private final long[] values = new long[ALL.length];

    void inc(IpCounter c) {
        LONGS.getAndAdd(values, c.ordinal(), 1L);
    }

    void add(IpCounter c, long delta) {
        LONGS.getAndAdd(values, c.ordinal(), delta);
    }

    long get(IpCounter c) {
        return (long) LONGS.getVolatile(values, c.ordinal());
    }

    Map<IpCounter, Long> snapshot() {
        Map<IpCounter, Long> m = new EnumMap<>(IpCounter.class);
        for (IpCounter c : ALL) {
            m.put(c, get(c));
        }
        return m;
    }
}
