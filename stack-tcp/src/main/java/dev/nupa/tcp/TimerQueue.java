package dev.nupa.tcp;

import java.util.Arrays;

/**
 * The connections of one layer that have a timer pending, ordered by deadline: an indexed binary
 * min-heap, so the layer's timer poll visits only the connections that are due (O(log n) each)
 * instead of every connection it holds. Each connection keeps its place in {@code timerIndex}, so
 * a deadline that moves (each ACK re-arms the retransmission timer) re-sorts in place, and a
 * connection is never queued twice. Not thread-safe: the layer's lock guards it. Allocates only to grow.
 */
final class TimerQueue {
    private static final long NEVER = Long.MAX_VALUE;

    private long[] deadlines = new long[16];
    private TcpConnection[] connections = new TcpConnection[16];
    private int size;

    int size() {
        return size;
    }

    /** The earliest deadline queued, {@link Long#MAX_VALUE} when none. */
    long earliest() {
        return size == 0 ? NEVER : deadlines[0];
    }

    /** The connection with the earliest deadline, or null when none. */
    TcpConnection first() {
        return size == 0 ? null : connections[0];
    }

    boolean contains(TcpConnection c) {
        int i = c.timerIndex;
        return i >= 0 && i < size && connections[i] == c;
    }

    /** Queues {@code c} at {@code deadline}, moving it if queued; {@link Long#MAX_VALUE} (no timer) removes it. */
    void schedule(TcpConnection c, long deadline) {
        if (deadline == NEVER) {
            remove(c);
            return;
        }
        if (!contains(c)) {
            if (size == deadlines.length) {
                deadlines = Arrays.copyOf(deadlines, size * 2);
                connections = Arrays.copyOf(connections, size * 2);
            }
            int i = size++;
            place(i, c, deadline);
            up(i);
            return;
        }
        int i = c.timerIndex;
        long before = deadlines[i];
        deadlines[i] = deadline;
        if (deadline < before) {
            up(i);
        } else if (deadline > before) {
            down(i);
        }
    }

    /** Takes {@code c} out of the queue if it is there. */
    void remove(TcpConnection c) {
        if (!contains(c)) {
            return;
        }
        int i = c.timerIndex;
        c.timerIndex = -1;
        int last = --size;
        if (i != last) {
            long moved = deadlines[last];
            place(i, connections[last], moved);
            connections[last] = null;
            if (i > 0 && moved < deadlines[(i - 1) >>> 1]) {
                up(i);
            } else {
                down(i);
            }
        } else {
            connections[last] = null;
        }
    }

    private void up(int i) {
        TcpConnection c = connections[i];
        long d = deadlines[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (deadlines[parent] <= d) {
                break;
            }
            place(i, connections[parent], deadlines[parent]);
            i = parent;
        }
        place(i, c, d);
    }

    private void down(int i) {
        TcpConnection c = connections[i];
        long d = deadlines[i];
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            if (child + 1 < size && deadlines[child + 1] < deadlines[child]) {
                child++;
            }
            if (d <= deadlines[child]) {
                break;
            }
            place(i, connections[child], deadlines[child]);
            i = child;
        }
        place(i, c, d);
    }

    private void place(int i, TcpConnection c, long d) {
        connections[i] = c;
        deadlines[i] = d;
        c.timerIndex = i;
    }
}
