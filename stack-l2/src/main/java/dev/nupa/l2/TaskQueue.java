package dev.nupa.l2;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A bounded many-producer, one-consumer queue of tasks for a datapath loop: other threads
 * {@link #offer}, the loop {@link #poll}s. An array of cells, each with a sequence number that says
 * whose turn it is (Vyukov's bounded queue): a producer claims a position with one CAS, fills the
 * cell and publishes it with a release store; the consumer reads it with an acquire load. Nothing is
 * allocated per task, and a full queue refuses rather than grows (the caller decides how to wait).
 * Not Agrona's ManyToOneConcurrentArrayQueue, which is the same design: Agrona 2 reaches
 * jdk.internal.misc.Unsafe, so every JVM that embeds a node would need
 * {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED} or fail with IllegalAccessError.
 */
final class TaskQueue {
    private static final VarHandle SEQ = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle TASK = MethodHandles.arrayElementVarHandle(Runnable[].class);

    private final int mask;
    private final long[] sequence;
    private final Runnable[] tasks;
    private final AtomicLong tail = new AtomicLong();
    private long head; // the consumer's only

    /** A queue of {@code capacity} tasks, rounded up to a power of two. */
    TaskQueue(int capacity) {
        if (capacity < 1 || capacity > 1 << 24) {
            throw new IllegalArgumentException("task queue capacity must be 1.." + (1 << 24) + ", got " + capacity);
        }
        int n = Integer.highestOneBit(capacity - 1 == 0 ? 1 : (capacity - 1) << 1);
        mask = n - 1;
        sequence = new long[n];
        tasks = new Runnable[n];
        for (int i = 0; i < n; i++) {
            sequence[i] = i;
        }
    }

    int capacity() {
        return mask + 1;
    }

    /** Adds {@code task}; false if the queue is full. Any thread. */
    boolean offer(Runnable task) {
        while (true) {
            long t = tail.get();
            int i = (int) t & mask;
            long s = (long) SEQ.getAcquire(sequence, i);
            if (s == t) {
                if (tail.compareAndSet(t, t + 1)) {
                    TASK.set(tasks, i, task);
                    SEQ.setRelease(sequence, i, t + 1);
                    return true;
                }
            } else if (s < t) {
                return false; // the cell still holds the task of one lap before: full
            }
            // else another producer took position t: read the tail again
        }
    }

    /** How many tasks were ever claimed: a bound for {@link #poll(long)} that leaves out tasks offered later. */
    long claimed() {
        return tail.get();
    }

    /** The next task, or null when none is published. The consumer's thread only. */
    Runnable poll() {
        return poll(Long.MAX_VALUE);
    }

    /** The next task if it was claimed before {@code end} ({@link #claimed()}), else null. The consumer's thread only. */
    Runnable poll(long end) {
        long h = head;
        if (h >= end) {
            return null;
        }
        int i = (int) h & mask;
        if ((long) SEQ.getAcquire(sequence, i) != h + 1) {
            return null;
        }
        Runnable r = (Runnable) TASK.get(tasks, i);
        TASK.set(tasks, i, null);
        SEQ.setRelease(sequence, i, h + mask + 1);
        head = h + 1;
        return r;
    }
}
