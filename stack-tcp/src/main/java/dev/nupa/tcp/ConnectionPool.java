package dev.nupa.tcp;

import java.util.ArrayDeque;
import java.util.function.IntConsumer;

/**
 * A layer's closed and released connections, ready for reuse (object, arrays, hooks), so that opening one allocates
 * nothing and churn leaves the collector nothing to copy. A connection released during the layer's own processing
 * waits in {@link #released} until the layer's next entry ({@link #recycleReleased}), so no frame still running in it
 * sees it become another connection. A pool no connection drew from for {@link #IDLE_NS} is let go down to
 * {@link #KEEP} connections ({@link #trimIdle}), with the budget's empty buffers down to its floor. Owner thread.
 */
final class ConnectionPool {
    /** A pool no connection drew from for this long is let go, its memory back to the system. */
    static final long IDLE_NS = 1_000_000_000L;
    /**
     * Closed connections kept however long the pool goes unused, as a kernel's slab caches keep a few sockets: a
     * service that gets a connection every few seconds opens each one from the pool, not from fresh memory (on a
     * VM whose fresh pages fault in from the host, the buffers of a connection opened from nothing took 5 ms).
     */
    static final int KEEP = 2;

    private final TcpLayer layer;
    private final BufferBudget buffers;
    private final ArrayDeque<TcpConnection> free = new ArrayDeque<>();
    private final ArrayDeque<TcpConnection> released = new ArrayDeque<>();
    /** Whether a connection was taken from {@link #free} since the last check. */
    private boolean drawn;
    /** When the pools are checked next ({@link #trimIdle}); 0 while they hold no more than their floors. */
    private long checkAt;
    private int limit = TcpLayer.DEFAULT_CONNECTION_POOL_LIMIT;
    private IntConsumer releaseHandler = n -> { };

    ConnectionPool(TcpLayer layer, BufferBudget buffers) {
        this.layer = layer;
        this.buffers = buffers;
    }

    /** A connection in CLOSED for the 4-tuple: a pooled one when there is one, else a new one. */
    TcpConnection open(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, TcpLayer.Listener l,
            TcpConnection.Events user) {
        TcpConnection c = free.pollFirst();
        int mss = layer.mssTo(config, remoteIp);
        if (c == null) {
            c = new TcpConnection(localIp, localPort, remoteIp, remotePort, config, mss, layer.sender.output,
                    new ConnectionHooks(layer), buffers);
        } else {
            drawn = true;
            c.reuse(localIp, localPort, remoteIp, remotePort, config, mss, c.events());
            layer.count(TcpCounter.CONNECTIONS_REUSED);
        }
        ((ConnectionHooks) c.events()).begin(l, user);
        return c;
    }

    /** {@code c} was released: reusable from the layer's next entry. */
    void release(TcpConnection c) {
        released.addLast(c);
    }

    boolean hasReleased() {
        return !released.isEmpty();
    }

    /** Released connections become reusable; called where no connection's processing is under way. */
    void recycleReleased() {
        TcpConnection c;
        while ((c = released.pollFirst()) != null) {
            if (free.size() < limit) {
                free.addFirst(c);
            }
        }
    }

    /** {@code c}, just released, is reusable at once if nothing of it runs any more (the last one released). */
    void reuseAtOnce(TcpConnection c) {
        if (released.peekLast() == c) {
            released.pollLast();
            free.addFirst(c);
        }
    }

    /** Whether {@link #trimIdle} is due at {@code now}. */
    boolean checkDue(long now) {
        return checkAt != 0 ? now >= checkAt : aboveFloor();
    }

    /** When the pools are checked next; 0 while they hold no more than their floors. */
    long checkAt() {
        return checkAt;
    }

    /**
     * Lets the pools go that no connection drew from for {@link #IDLE_NS}, down to their floors: closed connections
     * kept for reuse and the budget's empty buffers. Kept, they serve churn; once the churn stops (a client that held
     * thousands of connections died) their memory goes back to the system, as a kernel's would when its sockets
     * close, all but what the next connection or two need. Returns when to check next (0: never, the pools are at
     * their floors).
     */
    long trimIdle(long now) {
        if (checkAt != 0) {
            if (!drawn && free.size() > KEEP) {
                int n = free.size() - KEEP;
                for (int i = 0; i < n; i++) {
                    free.pollLast(); // the oldest: the newest stay, as the budget keeps its newest buffers
                }
                releaseHandler.accept(n);
            }
            drawn = false;
            buffers.trimUnused();
        }
        checkAt = aboveFloor() ? now + IDLE_NS : 0;
        return checkAt;
    }

    /** Whether either pool holds more than it keeps however long it goes unused. */
    private boolean aboveFloor() {
        return free.size() > KEEP || buffers.pooledAboveFloor();
    }

    /** See {@link TcpLayer#setPoolReleaseHandler}. */
    void setReleaseHandler(IntConsumer handler) {
        releaseHandler = handler == null ? n -> { } : handler;
    }

    /** See {@link TcpLayer#setConnectionPoolLimit}. */
    void setLimit(int limit) {
        this.limit = limit;
        while (free.size() > limit) {
            free.pollLast();
        }
    }

    /** How many closed connections wait for reuse now. */
    int size() {
        return free.size() + released.size();
    }
}
