package dev.nupa.node;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ListenerNotFoundException;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * Counts this JVM's garbage collections and their longest pause while it is open, from the collectors'
 * notifications (whole milliseconds, as the JVM reports them: 0 is a pause under 1 ms). The perf tools
 * report it beside a rate, since a pause of one process stalls both ends of a connection.
 */
final class GcWatch implements NotificationListener, AutoCloseable {
    private final List<NotificationEmitter> emitters = new ArrayList<>();
    private final AtomicLong collections = new AtomicLong();
    private final AtomicLong longestMs = new AtomicLong();

    GcWatch() {
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc instanceof NotificationEmitter e) {
                e.addNotificationListener(this, null, null);
                emitters.add(e);
            }
        }
    }

    @Override
    public void handleNotification(Notification n, Object handback) {
        if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
            return;
        }
        GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
        collections.incrementAndGet();
        longestMs.accumulateAndGet(info.getGcInfo().getDuration(), Math::max);
    }

    /** Starts counting again from nothing. */
    void reset() {
        collections.set(0);
        longestMs.set(0);
    }

    long collections() {
        return collections.get();
    }

    long longestMs() {
        return longestMs.get();
    }

    /** Bytes the calling thread has allocated in its life (the JVM's per-thread counter). */
    static long threadAllocated() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getCurrentThreadAllocatedBytes();
    }

    @Override
    public void close() {
        for (NotificationEmitter e : emitters) {
            try {
                e.removeNotificationListener(this);
            } catch (ListenerNotFoundException ignored) {
                // never added: nothing to remove
            }
        }
    }
}
