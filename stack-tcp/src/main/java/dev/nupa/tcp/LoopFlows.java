package dev.nupa.tcp;

import org.agrona.collections.Long2LongHashMap;

/**
 * Where the connections that moved off a node's primary loop live now: four-tuple key ({@link
 * ConnectionTable#key}) to loop. The primary looks here when a segment finds no connection of its own,
 * and hands the segment to that loop (a peer that has not yet learned the loop's fabric node still sends
 * to the primary). Shared by the layers of one node's loops, so its calls are serialized; the primary
 * reads it only on a miss of its own table, and only while it holds something.
 */
final class LoopFlows {
    private final Long2LongHashMap map = new Long2LongHashMap(-1); // key to loop, -1 for none
    private volatile int size;

    synchronized void put(long key, int loop) {
        map.put(key, loop);
        size = map.size();
    }

    /** The loop of {@code key}, or -1. */
    int get(long key) {
        if (size == 0) {
            return -1;
        }
        synchronized (this) {
            return (int) map.get(key);
        }
    }

    /** Forgets {@code key} if it leads to {@code loop}. */
    void remove(long key, int loop) {
        if (size == 0) {
            return;
        }
        synchronized (this) {
            if (map.get(key) == loop) {
                map.remove(key);
                size = map.size();
            }
        }
    }

    int size() {
        return size;
    }
}
