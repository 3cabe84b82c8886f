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
 */
final class BufferBudget {
    /** No bound and no pool (a connection made outside a layer, as in tests). */
    static final BufferBudget UNLIMITED = new BufferBudget(Long.MAX_VALUE, 0);
    static final int MAX_POOLED = 64;

    private final long limit;
    private final int maxPooled;
    /** Newest first; walked by index, so a take allocates nothing. */
    private final ArrayList<MemorySegment> pool = new ArrayList<>();
    /** Bytes connections hold (rings not yet released). */
    private long used;
    /** Bytes waiting in the pool. */
    private long pooled;

    BufferBudget(long limit) {
        this(limit, MAX_POOLED);
    }

    private BufferBudget(long limit, int maxPooled) {
        this.limit = checkLimit(limit);
        this.maxPooled = maxPooled;
    }

    /**
     * Memory for a buffer of {@code capacity} bytes, from the pool or new, counted as held; null (nothing
     * taken) when it does not fit under the bound or the JVM has no memory for it.
     */
    synchronized MemorySegment take(int capacity) {
        if (capacity > limit - used) {
            return null;
        }
        for (int i = 0; i < pool.size(); i++) {
            MemorySegment m = pool.get(i);
            if (m.byteSize() == capacity) {
                pool.remove(i);
                pooled -= capacity;
                used += capacity;
                return m;
            }
        }
        while (!pool.isEmpty() && capacity > limit - used - pooled) {
            pooled -= pool.remove(pool.size() - 1).byteSize(); // buffers of other sizes make room (the collector frees them)
        }
        MemorySegment m = allocate(capacity);
        if (m == null && !pool.isEmpty()) {
            pool.clear(); // the JVM's own bound came first: let the pool go (the collector frees it) and try again
            pooled = 0;
            m = allocate(capacity);
        }
        if (m == null) {
            return null;
        }
        used += capacity;
        return m;
    }

    private static MemorySegment allocate(int capacity) {
        try {
            return Arena.ofAuto().allocate(capacity, 64);
        } catch (OutOfMemoryError e) {
            return null; // the JVM's bound on native memory (other native memory of the process came first)
        }
    }

    /** {@code capacity} bytes a connection held are no longer counted (it closed; see {@link #recycle}). */
    synchronized void give(int capacity) {
        used -= capacity;
    }

    /** The memory of an empty buffer whose bytes were given back: kept for the next one of its size while room allows. */
    synchronized void recycle(MemorySegment memory) {
        long size = memory.byteSize();
        if (maxPooled == 0) {
            return;
        }
        if (pool.size() == maxPooled) {
            pooled -= pool.remove(pool.size() - 1).byteSize(); // the oldest goes: a burst of one size must not keep the pool
        }
        if (size <= limit - used - pooled) {
            pool.add(0, memory);
            pooled += size;
        }
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

    /** 3/4 of the JVM's bound on native buffer memory ({@code -XX:MaxDirectMemorySize}; by default the heap's maximum). */
    static long jvmDefault() {
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
        return max / 4 * 3;
    }
}
