package dev.nupa.tcp;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;

/**
 * The native memory the connection buffers of one {@link TcpLayer} may hold together, in the manner of
 * Linux's {@code tcp_mem} "high" mark, and the pool their memory is recycled through. A buffer that would
 * pass the bound is not given: the connection drops the data it cannot hold (its peer sends it again) or
 * refuses the write, and the layer counts it.
 *
 * <p>Why a budget of our own: buffers live in native memory, which the JVM bounds by
 * {@code -XX:MaxDirectMemorySize}; at that bound an allocation first runs the garbage collector and
 * sleeps, up to about half a second, before it fails. On the datapath that would stall every connection
 * of the node, so the layer refuses well before: by default at 3/4 of the JVM's bound.
 *
 * <p>Why a pool: a fresh buffer is a fresh mapping that the kernel zeroes page by page as it is first
 * touched, and the collector frees it only later. Connections that each carry a few bytes and close
 * (connect-request-close) spent milliseconds per connection on that; an empty buffer of a closed
 * connection is kept here instead (up to {@value #MAX_POOLED}) and handed to the next connection that
 * needs one of its size. Bytes a ring never wrote are never read, so a reused buffer needs no clearing.
 *
 * <p>Memory pressure, as Linux's {@code tcp_mem} middle mark (net/ipv4/tcp.c {@code tcp_init_mem}: pressure
 * at 2/3 of the hard limit; {@code sk_mem_reclaim} under pressure): past {@link #pressure} a ring that empties
 * gives its memory back at once instead of keeping it for its next bytes, so idle connections and peers
 * that never read stop holding memory they do not use. A buffer that leaves the pool is freed at once (its
 * own shared arena, closed) rather than when the collector next runs, so the process's memory falls when
 * connections close.
 */
final class BufferBudget {
    /** No bound and no pool (a connection made outside a layer, as in tests). */
    static final BufferBudget UNLIMITED = new BufferBudget(Long.MAX_VALUE, 0);
    static final int MAX_POOLED = 64;
    /**
     * The newest empty buffers the pool keeps however long it goes unused (at most {@link #KEEP_BYTES} of them): a
     * connection pair's worth at the default sizes, so that the next connection after a quiet spell takes its
     * buffers from the pool ({@link ConnectionPool#KEEP}).
     */
    static final int KEEP_BUFFERS = 4;
    static final long KEEP_BYTES = 1L << 20;
    /** The default bound's ceiling: however large the JVM's bound, the connections' buffers hold at most this. */
    static final long DEFAULT_CEILING = 256L << 20;

    private final long limit;
    private final int maxPooled;
    /** Newest first; walked by index, so a take allocates nothing. */
    private final ArrayList<MemorySegment> pool = new ArrayList<>();
    /** Bytes connections hold (rings not yet released). */
    private long used;
    /** Bytes waiting in the pool, and how many buffers; written under the lock, read without it by {@link #pooledAboveFloor}. */
    private volatile long pooled;
    private volatile int pooledBuffers;
    /** Whether a buffer was taken from the pool since the last {@link #trimUnused}. */
    private boolean drawn;
    /** Whether {@link #used} is past the pressure mark; read on the datapath without the lock. */
    private volatile boolean underPressure;
    /** The arena of each buffer this budget allocated and has not freed (a fresh allocation only: the pool reuses). */
    private final java.util.IdentityHashMap<MemorySegment, Arena> arenas = new java.util.IdentityHashMap<>();

    BufferBudget(long limit) {
        this(limit, MAX_POOLED);
    }

    private BufferBudget(long limit, int maxPooled) {
        this.limit = checkLimit(limit);
        this.maxPooled = maxPooled;
        NativeHeap.fixMmapThreshold();
    }

    /**
     * Memory for a buffer of {@code capacity} bytes, from the pool or new, counted as held; null (nothing
     * taken) when it does not fit under the bound or the JVM has no memory for it.
     */
    synchronized MemorySegment take(int capacity) {
        return take(capacity, false);
    }

    /**
     * As {@link #take(int)}; a {@code send} buffer is given only below the pressure mark, so connections whose
     * peers never read hold at most that much, and the rest stays for data that arrives (Linux: under pressure
     * sk_stream_moderate_sndbuf shrinks send buffers and __sk_mem_raise_allocated refuses them memory first).
     */
    synchronized MemorySegment take(int capacity, boolean send) {
        if (capacity > (send ? pressure() : limit) - used) {
            return null;
        }
        for (int i = 0; i < pool.size(); i++) {
            MemorySegment m = pool.get(i);
            if (m.byteSize() == capacity) {
                pool.remove(i);
                pooled -= capacity;
                pooledBuffers = pool.size();
                drawn = true;
                counted(capacity);
                return m;
            }
        }
        while (!pool.isEmpty() && capacity > limit - used - pooled) {
            dropOldest(); // buffers of other sizes make room
        }
        MemorySegment m = allocate(capacity);
        if (m == null && !pool.isEmpty()) {
            while (!pool.isEmpty()) {
                dropOldest(); // the JVM's own bound came first: let the pool go and try again
            }
            m = allocate(capacity);
        }
        if (m == null) {
            return null;
        }
        counted(capacity);
        return m;
    }

    /** Whether a buffer of {@code capacity} bytes could be given at all, every other buffer's memory given back. */
    boolean couldFit(int capacity, boolean send) {
        return capacity <= (send ? pressure() : limit);
    }

    private void counted(long delta) {
        used += delta;
        underPressure = used > pressure();
    }

    /** Past this many bytes held, rings that empty give their memory back (Linux's tcp_mem[1], 2/3 of the hard limit). */
    long pressure() {
        return limit / 3 * 2;
    }

    /** Whether the connections hold more than {@link #pressure}: a ring that empties gives its memory back. */
    boolean underPressure() {
        return underPressure;
    }

    private MemorySegment allocate(int capacity) {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment m = arena.allocate(capacity, 64);
            arenas.put(m, arena);
            return m;
        } catch (OutOfMemoryError e) {
            arena.close();
            return null; // the JVM's bound on native memory (other native memory of the process came first)
        }
    }

    private void dropOldest() {
        MemorySegment m = pool.remove(pool.size() - 1);
        pooled -= m.byteSize();
        pooledBuffers = pool.size();
        free(m);
    }

    /** Gives the buffer's memory back to the system now, not when the collector next runs. */
    private void free(MemorySegment m) {
        Arena arena = arenas.remove(m);
        if (arena != null) {
            arena.close();
        }
    }

    /** {@code capacity} bytes a connection held are no longer counted (it closed; see {@link #recycle}). */
    synchronized void give(int capacity) {
        counted(-capacity);
    }

    /** The memory of an empty buffer whose bytes were given back: kept for the next one of its size while room allows. */
    synchronized void recycle(MemorySegment memory) {
        long size = memory.byteSize();
        if (maxPooled == 0) {
            free(memory);
            return;
        }
        if (pool.size() == maxPooled) {
            dropOldest(); // the oldest goes: a burst of one size must not keep the pool
        }
        if (size <= limit - used - pooled) {
            pool.add(0, memory);
            pooled += size;
            pooledBuffers = pool.size();
        } else {
            free(memory);
        }
    }

    /**
     * Frees the pool down to its floor ({@link #KEEP_BUFFERS}, {@link #KEEP_BYTES}; the oldest go first) when no
     * buffer was taken from it since the last call: a layer calls this about once a second while the pool holds more,
     * so memory kept for churn goes back to the system once the churn stops.
     */
    synchronized void trimUnused() {
        if (!drawn) {
            while (pooledAboveFloor()) {
                dropOldest();
            }
        }
        drawn = false;
    }

    /** Whether the pool holds more than its floor now (no lock: a hint for the datapath). */
    boolean pooledAboveFloor() {
        return pooledBuffers > KEEP_BUFFERS || pooled > KEEP_BYTES;
    }

    synchronized long used() {
        return used;
    }

    synchronized long pooled() {
        return pooled;
    }

    long limit() {
        return limit;
    }

    /** {@code limit} if it can bound a budget, else an error that names it. */
    static long checkLimit(long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("TCP buffer memory limit " + limit + " is negative; give a number of bytes, 0 or more");
        }
        return limit;
    }

    /**
     * 3/4 of the JVM's bound on native buffer memory ({@code -XX:MaxDirectMemorySize}; by default the heap's
     * maximum), and at most {@link #DEFAULT_CEILING}: the JVM's bound grows with the machine (a quarter of its
     * memory), and connections whose peers never read would otherwise hold gigabytes.
     */
    static long jvmDefault() {
        return Math.min(DEFAULT_CEILING, jvmBound() / 4 * 3);
    }

    private static long jvmBound() {
        long max = Runtime.getRuntime().maxMemory();
        try {
            HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            long set = Long.parseLong(hs.getVMOption("MaxDirectMemorySize").getValue());
            if (set > 0) {
                max = set;
            }
        } catch (RuntimeException e) {
            // Not a HotSpot JVM, or no such option: the heap's maximum is the JDK's own default bound.
        }
        return max;
    }
}
