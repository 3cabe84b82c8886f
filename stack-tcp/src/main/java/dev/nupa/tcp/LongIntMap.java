package dev.nupa.tcp;

import java.util.Arrays;

/**
 * An open-addressing map from a long key to a non-negative int, so a lookup on the datapath allocates
 * nothing. Grows by doubling; deletion uses backward shifting (no tombstones). Not thread-safe: its
 * owner serializes the calls.
 */
final class LongIntMap {
    private static final int EMPTY = -1;
    private long[] keys = new long[64];
    private int[] values = empty(64);
    private int size;

    int size() {
        return size;
    }

    /** The value of {@code key}, or -1. */
    int get(long key) {
        int mask = keys.length - 1;
        for (int i = slot(key, mask); values[i] != EMPTY; i = (i + 1) & mask) {
            if (keys[i] == key) {
                return values[i];
            }
        }
        return EMPTY;
    }

    void put(long key, int value) {
        if (value < 0) {
            throw new IllegalArgumentException("values are 0 or more, not " + value);
        }
        if ((size + 1) * 2 > keys.length) {
            grow();
        }
        int mask = keys.length - 1;
        int i = slot(key, mask);
        while (values[i] != EMPTY && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (values[i] == EMPTY) {
            size++;
        }
        keys[i] = key;
        values[i] = value;
    }

    /** Removes {@code key}; returns its value, or -1 if it had none. */
    int remove(long key) {
        int mask = keys.length - 1;
        int i = slot(key, mask);
        while (values[i] != EMPTY && keys[i] != key) {
            i = (i + 1) & mask;
        }
        int removed = values[i];
        if (removed == EMPTY) {
            return EMPTY;
        }
        values[i] = EMPTY;
        size--;
        // Backward shift: move later members of the probe run into the hole.
        int hole = i;
        for (int j = (i + 1) & mask; values[j] != EMPTY; j = (j + 1) & mask) {
            int home = slot(keys[j], mask);
            boolean between = hole <= j ? hole < home && home <= j : hole < home || home <= j;
            if (!between) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                values[j] = EMPTY;
                hole = j;
            }
        }
        return removed;
    }

    private void grow() {
        long[] oldKeys = keys;
        int[] oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = empty(oldKeys.length * 2);
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldValues[i] != EMPTY) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }

    private static int[] empty(int n) {
        int[] a = new int[n];
        Arrays.fill(a, EMPTY);
        return a;
    }

    private static int slot(long key, int mask) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
