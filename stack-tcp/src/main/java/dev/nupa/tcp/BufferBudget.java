package dev.nupa.tcp;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The native memory the connection buffers of one {@link TcpLayer} may hold together, in the manner of
 * Linux's {@code tcp_mem} "high" mark: a buffer that would pass it is not allocated, the connection
 * drops the data it cannot hold (its peer sends it again) or refuses the write, and the layer counts it.
 *
 * <p>Why a budget of our own: buffers live in native memory, which the JVM bounds by
 * {@code -XX:MaxDirectMemorySize}; at that bound an allocation first runs the garbage collector and
 * sleeps, up to about half a second, before it fails. On the datapath that would stall every connection
 * of the node, so the layer refuses well before: by default at 3/4 of the JVM's bound.
 */
final class BufferBudget {
    /** No bound (a connection made outside a layer, as in tests). */
    static final BufferBudget UNLIMITED = new BufferBudget(Long.MAX_VALUE);

    private final long limit;
    private final AtomicLong used = new AtomicLong();

    BufferBudget(long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("TCP buffer memory limit " + limit + " is negative; give a number of bytes, 0 or more");
        }
        this.limit = limit;
    }

    /** Takes {@code bytes} if they fit under the limit; false (nothing taken) if not. */
    boolean take(long bytes) {
        while (true) {
            long u = used.get();
            if (bytes > limit - u) {
                return false;
            }
            if (used.compareAndSet(u, u + bytes)) {
                return true;
            }
        }
    }

    void give(long bytes) {
        used.addAndGet(-bytes);
    }

    long used() {
        return used.get();
    }

    long limit() {
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
