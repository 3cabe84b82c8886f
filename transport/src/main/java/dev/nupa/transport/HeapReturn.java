package dev.nupa.transport;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Gives the heap of thousands of closed connections back to the system. A kernel frees a socket's memory when it
 * closes; here a connection's objects (the TCP layer's, Netty's channel and pipeline, Vert.x's socket) are heap,
 * which the collector reclaims only when allocation next asks it to, and G1 returns to the system only after a
 * collection that shrinks the heap. A node whose thousands of connections ended at once (their client died) and
 * that then idles would keep that memory for good. So when a TCP layer lets go of at least {@link #MIN_CONNECTIONS}
 * pooled connections that went unused (TcpLayer's pool check, a second after they closed), one collection runs, on
 * a thread of its own and at most once every {@link #MIN_INTERVAL_NS}, followed by glibc's {@code malloc_trim(0)},
 * which hands back the free pages of the C heap the JVM's native allocations left behind.
 * {@code -XX:+DisableExplicitGC} turns the collection off.
 */
final class HeapReturn {
    static final int MIN_CONNECTIONS = 1024;
    static final long MIN_INTERVAL_NS = 10_000_000_000L;
    private static final AtomicLong LAST = new AtomicLong(System.nanoTime() - MIN_INTERVAL_NS);

    private HeapReturn() {
    }

    /** A layer let go of {@code connections} pooled connections: collect if they were many. Any thread. */
    static void released(int connections) {
        if (connections < MIN_CONNECTIONS) {
            return;
        }
        long now = System.nanoTime();
        long last = LAST.get();
        if (now - last < MIN_INTERVAL_NS || !LAST.compareAndSet(last, now)) {
            return;
        }
        Thread.ofVirtual().name("nupa-heap-return").start(() -> {
            System.gc();
            trimCHeap();
        });
    }

    private static void trimCHeap() {
        MethodHandle trim = MallocTrim.HANDLE;
        if (trim != null) {
            try {
                int ignored = (int) trim.invokeExact(0L);
            } catch (Throwable e) {
                // Nothing returned; the memory stays free for the C heap's next use.
            }
        }
    }

    /** glibc's malloc_trim(3), or null where the C library has none or native access is refused. */
    private static final class MallocTrim {
        static final MethodHandle HANDLE = find();

        private static MethodHandle find() {
            try {
                Linker linker = Linker.nativeLinker();
                return linker.defaultLookup().find("malloc_trim")
                        .map(f -> linker.downcallHandle(f, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG)))
                        .orElse(null);
            } catch (RuntimeException e) {
                return null;
            }
        }
    }
}
