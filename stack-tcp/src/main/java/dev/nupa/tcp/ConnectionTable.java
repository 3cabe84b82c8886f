package dev.nupa.tcp;

import java.util.ArrayList;
import java.util.List;

/**
 * Connections by (remote address, remote port, local port): an open-addressing map from a long key
 * to a connection, so a lookup on the datapath allocates nothing. Grows by doubling; deletion uses
 * backward shifting (no tombstones). Not thread-safe: the TCP layer's lock guards it.
 */
final class ConnectionTable {
    private long[] keys = new long[64];
    private TcpConnection[] values = new TcpConnection[64];
    private int size;

    static long key(int remoteIp, int remotePort, int localPort) {
        return (long) remoteIp << 32 | (long) (remotePort & 0xFFFF) << 16 | (localPort & 0xFFFF);
    }

    int size() {
        return size;
    }

    TcpConnection get(long key) {
        int mask = keys.length - 1;
        for (int i = slot(key, mask); values[i] != null; i = (i + 1) & mask) {
            if (keys[i] == key) {
                return values[i];
            }
        }
        return null;
    }

    void put(long key, TcpConnection c) {
        if ((size + 1) * 2 > keys.length) {
            grow();
        }
        int mask = keys.length - 1;
        int i = slot(key, mask);
        while (values[i] != null && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (values[i] == null) {
            size++;
        }
        keys[i] = key;
        values[i] = c;
    }

    boolean remove(long key, TcpConnection c) {
        int mask = keys.length - 1;
        int i = slot(key, mask);
        while (values[i] != null && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (values[i] != c || c == null) {
            return false;
        }
        values[i] = null;
        size--;
        // Backward shift: move later members of the probe run into the hole.
        int hole = i;
        for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
            int home = slot(keys[j], mask);
            boolean between = hole <= j ? hole < home && home <= j : hole < home || home <= j;
            if (!between) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                values[j] = null;
                hole = j;
            }
        }
        return true;
    }

    /** A copy of the connections, for timers and tools. */
    List<TcpConnection> all() {
        List<TcpConnection> l = new ArrayList<>(size);
        for (TcpConnection c : values) {
            if (c != null) {
                l.add(c);
            }
        }
        return l;
    }

    private void grow() {
        long[] oldKeys = keys;
        TcpConnection[] oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = new TcpConnection[oldKeys.length * 2];
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldValues[i] != null) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }

    private static int slot(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
