package dev.nupa.tcp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.agrona.collections.Long2LongHashMap;

/**
 * Connections by (remote address, remote port, local port): an open-addressing map (Agrona's) from the
 * key to a slot of a connection array, -1 for none, so a lookup on the datapath allocates nothing. Not thread-safe: the layer's
 * owner thread uses it.
 */
final class ConnectionTable {
    private final Long2LongHashMap index = new Long2LongHashMap(-1);
    private TcpConnection[] slots = new TcpConnection[64];
    /** Slots given back, to take before {@link #top}; slots from {@code top} on were never used. */
    private int[] free = new int[64];
    private int freeCount;
    private int top;

    static long key(int remoteIp, int remotePort, int localPort) {
        return (long) remoteIp << 32 | (long) (remotePort & 0xFFFF) << 16 | (localPort & 0xFFFF);
    }

    int size() {
        return index.size();
    }

    TcpConnection get(long key) {
        int i = (int) index.get(key);
        return i < 0 ? null : slots[i];
    }

    void put(long key, TcpConnection c) {
        int i = (int) index.get(key);
        if (i < 0) {
            i = freeCount > 0 ? free[--freeCount] : top++;
            if (i == slots.length) {
                slots = Arrays.copyOf(slots, slots.length * 2);
            }
            index.put(key, i);
        }
        slots[i] = c;
    }

    boolean remove(long key, TcpConnection c) {
        int i = (int) index.get(key);
        if (i < 0 || c == null || slots[i] != c) {
            return false;
        }
        index.remove(key);
        slots[i] = null;
        if (freeCount == free.length) {
            free = Arrays.copyOf(free, free.length * 2);
        }
        free[freeCount++] = i;
        return true;
    }

    /** A copy of the connections, for timers and tools. */
    List<TcpConnection> all() {
        List<TcpConnection> l = new ArrayList<>(size());
        for (int i = 0; i < top; i++) {
            if (slots[i] != null) {
                l.add(slots[i]);
            }
        }
        return l;
    }
}
