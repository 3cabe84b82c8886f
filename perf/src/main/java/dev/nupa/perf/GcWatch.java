package dev.nupa.perf;

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
 * report it beside a rate, since a pause of one process stalls both ends of a connection. Where a tool
 * runs a peer's turns in the same process ({@link #peerBegins}, {@link #peerEnds}), each collection is
 * put down to whoever was running when it started: the allocation that filled the heap happened then.
 */
final class GcWatch implements NotificationListener, AutoCloseable {
    private static final int MAX_RECORDED = 4096;
    private final List<NotificationEmitter> emitters = new ArrayList<>();
    private final AtomicLong collections = new AtomicLong();
    private final AtomicLong longestMs = new AtomicLong();
    /** Start (JVM uptime, ms) and duration of each collection, up to {@value #MAX_RECORDED}. */
    private final long[] starts = new long[MAX_RECORDED];
    private final long[] durations = new long[MAX_RECORDED];
    /** The peer's turns, as [begin, end) in JVM uptime ms. */
    private final long[] peerFrom = new long[MAX_RECORDED];
    private final long[] peerTo = new long[MAX_RECORDED];
    private int peerTurns;
    private boolean peerOpen;
    /** Collections that started before this (JVM uptime, ms) belong to before {@link #reset}. */
    private volatile long since;

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
        if (info.getGcInfo().getStartTime() < since) {
            return; // notifications come later, from another thread: one may tell of a collection before reset()
        }
        synchronized (this) {
            long i = collections.getAndIncrement();
            if (i < MAX_RECORDED) {
                starts[(int) i] = info.getGcInfo().getStartTime();
                durations[(int) i] = info.getGcInfo().getDuration();
            }
        }
        longestMs.accumulateAndGet(info.getGcInfo().getDuration(), Math::max);
    }

    /** Starts counting again from nothing. */
    synchronized void reset() {
        since = uptimeMs();
        collections.set(0);
        longestMs.set(0);
        peerTurns = 0;
        peerOpen = false;
    }

    /** A turn of the peer (not ours) begins on this process. */
    synchronized void peerBegins() {
        if (peerTurns < MAX_RECORDED) {
            peerFrom[peerTurns] = uptimeMs();
            peerTo[peerTurns] = Long.MAX_VALUE;
            peerOpen = true;
        }
    }

    /** The peer's turn ends. */
    synchronized void peerEnds() {
        if (peerOpen) {
            peerTo[peerTurns++] = uptimeMs();
            peerOpen = false;
        }
    }

    /** The collections that started outside the peer's turns: [count, longest ms]. */
    synchronized long[] ours() {
        long count = 0;
        long longest = 0;
        int recorded = (int) Math.min(collections.get(), MAX_RECORDED);
        for (int i = 0; i < recorded; i++) {
            if (!inPeerTurn(starts[i])) {
                count++;
                longest = Math.max(longest, durations[i]);
            }
        }
        return new long[] {count, longest};
    }

    private boolean inPeerTurn(long t) {
        for (int k = 0; k < peerTurns + (peerOpen ? 1 : 0); k++) {
            if (t >= peerFrom[k] && t < peerTo[k]) {
                return true;
            }
        }
        return false;
    }

    private static long uptimeMs() {
        return ManagementFactory.getRuntimeMXBean().getUptime();
    }

    long collections() {
        return collections.get();
    }

    long longestMs() {
        return longestMs.get();
    }

    /** Kept: looking the bean up allocates (some 660 B a call on JDK 25), which a count around a turn would include. */
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** Bytes the calling thread has allocated in its life (the JVM's per-thread counter); allocates nothing itself. */
    static long threadAllocated() {
        return THREADS.getCurrentThreadAllocatedBytes();
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
