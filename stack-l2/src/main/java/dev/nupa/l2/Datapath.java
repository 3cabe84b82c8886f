package dev.nupa.l2;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * A node's datapath loop (DESIGN.md section 4, run to completion): one thread polls the link,
 * which carries each frame up through the registered handlers by direct calls, and runs the
 * {@link Timer}s of the layers above when they fall due. Nothing is handed between threads.
 *
 * <p>Idling follows NAPI: spin while frames keep coming, then yield, then sleep on the device's
 * armed interrupt, never past the earliest timer deadline. A handler or timer that throws is counted
 * ({@link #errors()}) and the loop goes on.
 */
public final class Datapath implements AutoCloseable {
    /** A layer's timers: polled at {@code now}, returns the next time it wants to be polled ({@link Long#MAX_VALUE}: none). */
    @FunctionalInterface
    public interface Timer {
        long poll(long now);
    }

    /** How the loop idles: {@code spins} idle rounds spinning, {@code yields} more yielding, then sleeps of at most {@code maxSleepNs}. */
    public record Idle(int spins, int yields, long maxSleepNs) {
        public Idle {
            if (spins < 0 || yields < 0 || maxSleepNs <= 0) {
                throw new IllegalArgumentException("idle needs spins >= 0, yields >= 0 and a positive sleep; got "
                        + spins + ", " + yields + ", " + maxSleepNs + " ns");
            }
        }

        /** About 20 us of spinning and a few yields before sleeping: a wake from the interrupt costs about 22 us here. */
        public static Idle backoff() {
            return new Idle(20_000, 200, 100_000_000L);
        }

        /** Never sleeps: lowest latency, one core per node. */
        public static Idle busySpin() {
            return new Idle(Integer.MAX_VALUE, 0, 100_000_000L);
        }
    }

    /** Frames taken per poll before timers are looked at again. */
    public static final int BATCH = 64;

    private static final VarHandle ERRORS = fieldHandle("errorCount", long.class);

    private final Link link;
    private final Idle idle;
    private volatile Timer[] timers = new Timer[0];
    private volatile boolean running;
    private volatile long errorCount;
    private Thread thread;

    public Datapath(Link link, Idle idle) {
        this.link = link;
        this.idle = idle;
    }

    public Link link() {
        return link;
    }

    /** Adds a layer's timers; it is first polled on the loop's next round. Callable from any thread. */
    public synchronized void addTimer(Timer timer) {
        Timer[] t = Arrays.copyOf(timers, timers.length + 1);
        t[t.length - 1] = timer;
        timers = t;
    }

    /** Starts the loop on its own thread, named after the node. */
    public synchronized void start() {
        if (thread != null) {
            throw new IllegalStateException("datapath of node " + link.address() + " is already started");
        }
        running = true;
        thread = Thread.ofPlatform().daemon().name("nupa-datapath-" + link.address()).start(this::run);
    }

    /** Whether the calling thread is this loop's. */
    public boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** Handler and timer exceptions caught by the loop. */
    public long errors() {
        return (long) ERRORS.getOpaque(this);
    }

    private void run() {
        int idles = 0;
        long next = Long.MIN_VALUE;
        Timer[] seen = null;
        long[] deadlines = null; // owned by the loop, one per timer of `seen`
        while (running) {
            long now = System.nanoTime();
            int work;
            try {
                work = link.poll(BATCH, now);
            } catch (RuntimeException | LinkageError | AssertionError e) {
                countError();
                work = 1;
            }
            Timer[] t = timers;
            if (t != seen) { // a timer was added: poll every timer at once
                long[] d = Arrays.copyOf(deadlines == null ? new long[0] : deadlines, t.length);
                Arrays.fill(d, seen == null ? 0 : seen.length, t.length, Long.MIN_VALUE);
                seen = t;
                deadlines = d;
                next = Long.MIN_VALUE;
            }
            if (work > 0 || now >= next) {
                // After work too: a frame may have started something with a deadline (a reassembly).
                next = runTimers(seen, deadlines, now, work > 0);
            }
            if (work > 0) {
                idles = 0;
            } else if (idles < idle.spins()) {
                idles++;
                Thread.onSpinWait();
            } else if (idles - idle.spins() < idle.yields()) {
                idles++;
                Thread.yield();
            } else {
                long sleep = Math.min(idle.maxSleepNs(), next - now);
                if (sleep > 0) {
                    link.awaitFrames(sleep);
                }
            }
        }
    }

    /** Polls the timers that are due (or all); returns the earliest deadline. Timers must be cheap when nothing is due. */
    private long runTimers(Timer[] t, long[] d, long now, boolean all) {
        long earliest = Long.MAX_VALUE;
        for (int i = 0; i < t.length; i++) {
            if (all || d[i] <= now) {
                try {
                    d[i] = t[i].poll(now);
                } catch (RuntimeException | LinkageError | AssertionError e) {
                    countError();
                    d[i] = now + 1_000_000L; // try again in a millisecond, not in a hot loop
                }
            }
            earliest = Math.min(earliest, d[i]);
        }
        return earliest;
    }

    private void countError() {
        ERRORS.setOpaque(this, (long) ERRORS.getOpaque(this) + 1);
    }

    /** Stops the loop and waits for it; the link is left to its owner to close. */
    @Override
    public void close() {
        Thread t;
        synchronized (this) {
            running = false;
            t = thread;
        }
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static VarHandle fieldHandle(String name, Class<?> type) {
        try {
            return MethodHandles.lookup().findVarHandle(Datapath.class, name, type);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
