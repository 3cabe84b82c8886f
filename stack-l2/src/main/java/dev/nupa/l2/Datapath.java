package dev.nupa.l2;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import dev.nupa.device.DatapathErrors;

/**
 * A node's datapath loop (run to completion): one thread polls the link,
 * which carries each frame up through the registered handlers by direct calls, and runs the
 * {@link Timer}s of the layers above when they fall due. Nothing is handed between threads per frame.
 *
 * <p><b>One owner.</b> While the loop runs, its thread owns the node: every send, receive and timer
 * of the link and the layers above runs on it ({@link Link#checkOwner} refuses other threads). Work
 * from other threads (verbs or stack calls from an application thread) is
 * handed over through {@link #execute}, a bounded queue the loop drains every round.
 *
 * <p>Idling follows NAPI: spin while frames keep coming, then yield, then sleep on the device's
 * armed interrupt, never past the earliest timer deadline, for as long as its {@link Idle} says ({@link IdleGovernor}).
 * A handler, task or timer that fails is counted
 * ({@link #errors()}) and the loop goes on, out of memory or stack included ({@link DatapathErrors}).
 */
public final class Datapath implements AutoCloseable {
    /** A layer's timers: polled at {@code now}, returns the next time it wants to be polled ({@link Long#MAX_VALUE}: none). */
    @FunctionalInterface
    public interface Timer {
        long poll(long now);
    }

    /**
     * How the loop idles after a round with no work ({@link IdleGovernor} decides): fixed, by time since the last
     * work, spin for {@code spinNs}, then yield until {@code yieldNs}, then sleep on the interrupt for at most
     * {@code maxSleepNs} at a time; adaptive, poll (spin up to {@code spinNs}, then yield) only as long as recent gaps
     * between work say work is likely to come, at most {@code yieldNs}, and sleep otherwise. Time, not round counts:
     * a PAUSE costs from 10 to 140 cycles depending on the CPU.
     */
    public record Idle(long spinNs, long yieldNs, long maxSleepNs, boolean adapts) {
        public Idle {
            if (spinNs < 0 || yieldNs < spinNs || maxSleepNs <= 0) {
                throw new IllegalArgumentException("idle needs 0 <= spin <= yield times and a positive sleep; got "
                        + spinNs + ", " + yieldNs + ", " + maxSleepNs + " ns");
            }
        }

        /** Fixed: spin for {@code spinNs} after the last work, yield until {@code yieldNs}, then sleep. */
        public Idle(long spinNs, long yieldNs, long maxSleepNs) {
            this(spinNs, yieldNs, maxSleepNs, false);
        }

        /**
         * 5 us of spinning, yielding to 10 us, then sleeping. Chosen by measurement on the 2-vCPU
         * machines here (`nupa udp-check` between node processes): with 20/50 us, echo throughput was
         * 10-20% lower, since spinning loops took the cores the event loops needed. Give `busySpin`
         * to a node that has a core to itself.
         */
        public static Idle backoff() {
            return new Idle(5_000L, 10_000L, 10_000_000L);
        }

        /**
         * Fixed, 50 us of spinning, yielding to 1 ms, then sleeping: a request/response exchange never waits for a
         * wake-up, but a loop that gets work every millisecond or so never sleeps either (a core per loop at light load).
         */
        public static Idle eventLoop() {
            return new Idle(50_000L, 1_000_000L, 10_000_000L);
        }

        /**
         * Adaptive, polling windows of at most 50 us, spinning the first 5 us of them and yielding after: the default
         * of the Vert.x transport's loops and the node's datapath. Busy, where work comes back to back, the loop
         * never sleeps (a wake-up costs tens of microseconds on a VM, more than an exchange); at light load it
         * polls only for what tends to come soon (a client's answer) and sleeps through the rest, so it uses about
         * the CPU an epoll loop uses. 50 us: an answer from a peer that was asleep (its wake-up and its work) mostly
         * falls inside, while the gaps between requests at 10,000 a second (100 us on average) mostly do not, and
         * polling through them costs a core where an epoll loop uses a quarter of one. A yield after 5 us: where a
         * client's and a server's loops share a core (two loops on two busy vCPUs), each spinning its whole window
         * before the other may run costs the window per message (seen here: 25 us of spinning made each
         * one-connection HTTP exchange take 57 us, 50 us took 103 us, 5 us 4 us); with a core of its own a yielding
         * loop looks again within a microsecond or two.
         */
        public static Idle adaptive() {
            return new Idle(5_000L, 50_000L, 10_000_000L, true);
        }

        /** Never sleeps: lowest latency, one core per node. */
        public static Idle busySpin() {
            return new Idle(Long.MAX_VALUE, Long.MAX_VALUE, 10_000_000L);
        }
    }

    /** Frames taken per poll before timers are looked at again. */
    public static final int BATCH = 64;

    /**
     * Work the loop takes each round beside its link's ring, on the loop's thread: a loopback interface's queue, a
     * work ring's WQEs. Polled every round right after the ring, and asked before the loop sleeps: {@link #ready} is
     * asked after the loop has taken its sleep token ({@link Link#prepareSleep}), so a producer on another thread or
     * process wakes a sleeping loop by making its work visible and then ringing the node's doorbell ({@link
     * dev.nupa.device.FabricDevice#wake}, as a work ring's poster does, docs/work-rings.md): work made visible before
     * that look is seen by it, and a ring after it ends the sleep. A producer on the loop itself needs no ring: the
     * look sees its work. A producer that cannot ring (a GPU kernel) is found by polling: its layer adds a
     * {@link Timer} whose deadline bounds the sleep. Timers are for time only.
     */
    public interface Source {
        /** Handles up to {@code limit} items at {@code now}; returns how many. */
        int poll(int limit, long now);

        /** Whether items wait; cheap (a load or two). */
        boolean ready();
    }

    /** Default bound of tasks handed over and not yet run ({@link #execute}). */
    public static final int DEFAULT_TASK_QUEUE = 16_384;
    /** How long {@link #execute} waits for room in a full task queue before it refuses the task. */
    static final long FULL_QUEUE_WAIT_NS = 1_000_000_000L;

    private static final VarHandle ERRORS = fieldHandle("errorCount", long.class);

    private final Link link;
    private final Idle idle;
    private volatile Timer[] timers = new Timer[0];
    private volatile Source[] sources = new Source[0];
    private final TaskQueue tasks;
    private volatile boolean tasksPending;
    private volatile boolean stopped;
    private final Object taskLock = new Object();
    private volatile boolean running;
    private volatile boolean timersChanged;
    private volatile long errorCount;
    private volatile Thread thread;
    /** The thread driving the loop is another's (an event loop's), not one this datapath started. */
    private boolean driven;

    // The loop's own state (its driving thread only).
    private final IdleGovernor governor;
    private long next = Long.MIN_VALUE;
    private Timer[] seen;
    private long[] deadlines; // one per timer of `seen`

    public Datapath(Link link, Idle idle) {
        this(link, idle, DEFAULT_TASK_QUEUE);
    }

    /** A loop whose {@link #execute} queue holds at most {@code taskQueue} tasks (rounded up to a power of two). */
    public Datapath(Link link, Idle idle, int taskQueue) {
        this.link = link;
        this.idle = idle;
        this.governor = new IdleGovernor(idle, System.nanoTime());
        this.tasks = new TaskQueue(taskQueue);
        link.attach(this);
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

    /** Adds a source of work the loop polls each round after its ring ({@link Source}). Callable from any thread. */
    public synchronized void addSource(Source source) {
        Source[] t = Arrays.copyOf(sources, sources.length + 1);
        t[t.length - 1] = source;
        sources = t;
    }

    /** Removes a source added before; the loop stops polling it on its next round. */
    public synchronized void removeSource(Source source) {
        sources = without(sources, source);
    }

    /** {@code array} less its first element that is {@code item} (the same array when none is). */
    private static <T> T[] without(T[] array, T item) {
        for (int i = 0; i < array.length; i++) {
            if (array[i] == item) {
                T[] u = java.util.Arrays.copyOf(array, array.length - 1);
                System.arraycopy(array, i + 1, u, i, array.length - i - 1);
                return u;
            }
        }
        return array;
    }

    /** Removes a timer added before (an undeployed layer's); the loop stops polling it on its next round. */
    public synchronized void removeTimer(Timer timer) {
        timers = without(timers, timer);
    }

    /**
     * Tells the loop that a timer's deadline moved earlier from another thread (a socket call set a
     * retransmission timer): every timer is polled on the next round; a sleeping loop is woken.
     */
    public void timersChanged() {
        timersChanged = true;
        wakeup();
    }

    /**
     * From another thread: a sleeping loop wakes now, not at the end of its sleep (up to {@link
     * Idle#maxSleepNs}); from the loop itself nothing. An event loop that drives it calls this for its own tasks.
     */
    public void wakeup() {
        if (!inLoop()) {
            try {
                link.wakeup();
            } catch (RuntimeException e) {
                // The node is closing under us (its fabric unmapped): so is the loop, and nobody sleeps.
            }
        }
    }

    /**
     * Runs {@code task} on the loop's thread: at once when called from it, else on the loop's next
     * round (the way onto the datapath for sockets and verbs called from other threads). A loop
     * that sleeps is woken for it (see {@link Link#wakeup}); a busy-polling one takes it at once. Once the
     * loop has stopped, tasks run on the caller's thread, so every task runs exactly once. A task that
     * throws is counted in {@link #errors()}. The queue is bounded: when it is full the caller waits for
     * room, and after a second of waiting the task is refused with RejectedExecutionException.
     */
    public void execute(Runnable task) {
        if (inLoop()) {
            task.run();
            return;
        }
        post(task);
    }

    /**
     * Queues {@code task} for the loop's next round, even from the loop itself: there it runs after the
     * next poll of the rings (a send that found a ring full tries again once the loop has received).
     * Otherwise as {@link #execute}.
     */
    public void post(Runnable task) {
        if (!tasks.offer(task)) {
            awaitRoom(task);
        }
        tasksPending = true;
        timersChanged = true; // a task may move deadlines: poll every timer after it
        wakeup();
        if (stopped) {
            runTasks(); // the loop is gone (its last drain may have missed this one)
        }
    }

    private void awaitRoom(Runnable task) {
        if (inLoop()) { // nobody else drains it
            throw new RejectedExecutionException("datapath of node " + link.address() + ": its task queue of "
                    + tasks.capacity() + " is full and the loop itself posts more; give it a larger task queue");
        }
        long start = System.nanoTime();
        tasksPending = true;
        wakeup();
        while (!tasks.offer(task)) {
            if (stopped) {
                runTasks(); // the loop is gone: make room by running what waits
                continue;
            }
            if (System.nanoTime() - start > FULL_QUEUE_WAIT_NS) {
                throw new RejectedExecutionException("datapath of node " + link.address() + ": " + tasks.capacity()
                        + " tasks are waiting and none was taken for a second (is the loop stuck in a handler?);"
                        + " hand over less at once or give the loop a larger task queue");
            }
            LockSupport.parkNanos(10_000L);
        }
    }

    /** Runs queued tasks, under their own lock so the loop's last drain and a caller's never run side by side. */
    private int runTasks() {
        int n = 0;
        synchronized (taskLock) {
            long end = tasks.claimed(); // tasks these post wait for the next round
            for (Runnable r = tasks.poll(end); r != null; r = tasks.poll(end)) {
                try {
                    r.run();
                } catch (Throwable e) {
                    if (!DatapathErrors.survivable(e)) {
                        throw e;
                    }
                    countError();
                }
                n++;
            }
        }
        return n;
    }

    /** Starts the loop on its own thread, named after the node. */
    public synchronized void start() {
        if (thread != null) {
            throw new IllegalStateException("datapath of node " + link.address() + " is already started");
        }
        running = true;
        thread = Thread.ofPlatform().daemon().name("nupa-datapath-" + link.address()).unstarted(this::run);
        link.setOwner(thread); // before it starts: from now on no other thread sends beside it
        thread.start();
    }

    /**
     * Makes the calling thread the loop's from now on, without a thread of its own: an event loop
     * (the Vert.x transport's IoHandler) calls {@link #runOnce} and {@link #idle} on it, and
     * {@link #close} ends it. Sends and polls from other threads are refused as with {@link #start}.
     */
    public synchronized void drive() {
        if (thread != null) {
            throw new IllegalStateException("datapath of node " + link.address() + " is already started");
        }
        running = true;
        driven = true;
        thread = Thread.currentThread();
        link.setOwner(thread);
    }

    /** Whether the loop runs (started or driven, and not closed). */
    public boolean isRunning() {
        Thread t = thread;
        return running && t != null && t.isAlive();
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
        try {
            loop();
        } finally {
            link.setOwner(null); // from here callers own the link, one at a time through execute()
            stopped = true; // from here execute() runs tasks itself; this drain takes what came before
            runTasks();
        }
    }

    private void loop() {
        while (running) {
            long now = System.nanoTime();
            idle(now, runOnce(now), Long.MAX_VALUE, ALWAYS);
        }
    }

    private static final BooleanSupplier ALWAYS = () -> true;

    /**
     * One round of the loop at {@code now}: a batch of frames, the tasks handed over, the timers that
     * are due (all of them after work or a change). Returns how much work was done (0: none). Called by
     * the loop's own thread, or by the event loop that drives it ({@link #drive}).
     */
    public int runOnce(long now) {
        int work;
        try {
            work = link.poll(BATCH, now);
            Source[] src = sources;
            for (int i = 0; i < src.length; i++) {
                work += src[i].poll(BATCH, now);
            }
        } catch (Throwable e) {
            if (!DatapathErrors.survivable(e)) {
                throw e;
            }
            countError();
            work = 1;
        }
        if (tasksPending) {
            tasksPending = false;
            work += runTasks();
        }
        Timer[] t = timers;
        if (t != seen) { // a timer was added or removed: poll every timer at once
            long[] d = new long[t.length];
            Arrays.fill(d, Long.MIN_VALUE);
            seen = t;
            deadlines = d;
            next = Long.MIN_VALUE;
        }
        boolean changed = timersChanged;
        if (changed) {
            timersChanged = false; // another thread moved a deadline: poll every timer now, due or not
        }
        if (work > 0 || changed || now >= next) {
            // After work too: a frame may have started something with a deadline (a reassembly).
            next = runTimers(seen, deadlines, now, work > 0 || changed);
        }
        if (work > 0) {
            governor.work(now);
        }
        return work;
    }

    /**
     * Work the driving event loop did beside {@link #runOnce} at {@code now} (its own tasks: a request an
     * application handed to it), which the idle strategy counts as the loop's work. On the loop's thread.
     */
    public void workDone(long now) {
        governor.work(now);
    }

    /**
     * After a round that did {@code work}: nothing when it did some; else spin, yield, or sleep on the device's
     * armed interrupt as the idle strategy says ({@link IdleGovernor}; never past the earliest timer, nor
     * {@code maxWaitNs}, nor while {@code mayBlock} says other work waits: an event loop's tasks).
     */
    public void idle(long now, int work, long maxWaitNs, BooleanSupplier mayBlock) {
        if (work > 0) {
            return;
        }
        int action = governor.next(now);
        if (action == IdleGovernor.SPIN) {
            Thread.onSpinWait();
        } else if (action == IdleGovernor.YIELD) {
            Thread.yield();
        } else {
            try {
                sleep(now, maxWaitNs, mayBlock);
            } catch (Throwable e) {
                if (!DatapathErrors.survivable(e)) {
                    throw e;
                }
                countError(); // a fault on the fabric's memory, say: the device's owner stops it, not this loop
            }
        }
    }

    /** The idle round's last look for work and its sleep on the device's armed interrupt. */
    private void sleep(long now, long maxWaitNs, BooleanSupplier mayBlock) {
        long sleep = Math.min(Math.min(idle.maxSleepNs(), maxWaitNs), next - now);
        // The token before the last look: work handed over since the top of this round is seen
        // here, and work handed over after the token's read rang the doorbell (the flag is set
        // before the ring), which ends the sleep at once.
        int token = link.prepareSleep();
        for (Source src : sources) {
            if (src.ready()) {
                return; // work handed over after its last poll (a loopback datagram, a work ring's WQE): no sleep
            }
        }
        if (sleep > 0 && running && !tasksPending && !timersChanged && mayBlock.getAsBoolean()) {
            link.awaitFrames(sleep, token); // a doorbell for a source's work ends it: the next round polls the sources
        }
    }

    /** Polls the timers that are due (or all); returns the earliest deadline. Timers must be cheap when nothing is due. */
    private long runTimers(Timer[] t, long[] d, long now, boolean all) {
        long earliest = Long.MAX_VALUE;
        for (int i = 0; i < t.length; i++) {
            if (all || d[i] <= now) {
                try {
                    d[i] = t[i].poll(now);
                } catch (Throwable e) {
                    if (!DatapathErrors.survivable(e)) {
                        throw e;
                    }
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

    /**
     * Stops the loop and waits for it; the link is left to its owner to close. A driven loop ({@link
     * #drive}) is closed by its driving thread, which runs what was handed over and gives the link up.
     */
    @Override
    public void close() {
        Thread t;
        synchronized (this) {
            running = false;
            t = thread;
        }
        if (driven) {
            if (t != Thread.currentThread()) {
                throw new IllegalStateException("datapath of node " + link.address() + " is driven by " + t.getName()
                        + "; close it from that thread (the event loop closes it when it shuts down)");
            }
            link.setOwner(null);
            stopped = true;
            runTasks();
            return;
        }
        if (t != null && t != Thread.currentThread()) {
            wakeup(); // a loop asleep stops now, not at the end of its sleep
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
