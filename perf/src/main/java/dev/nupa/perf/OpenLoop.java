package dev.nupa.perf;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongConsumer;

import org.HdrHistogram.Histogram;

/**
 * One turn of an open-loop test (`--rate`), as a service sees requests at light load: the calling thread draws
 * arrival times with exponential gaps of mean 1 / rate (Poisson arrivals) and at each hands a request over (parking
 * until shortly before, then spinning: the harness's thread, counted in neither side's CPU); each request is timed
 * from its arrival, so a slow answer delays no later arrival and shows in the tail (no coordinated omission). The
 * side under test records each answer ({@link #answered}) from whatever thread it runs on.
 */
final class OpenLoop {
    /** How long before an arrival the harness stops parking and spins: past a park's wake-up on a busy VM. */
    private static final long SPIN_BEFORE_NS = 50_000L;
    /** How long the answers may take after the turn's last arrival. */
    private static final long ANSWER_WAIT_NS = 30_000_000_000L;
    /** Where requests may be lost (UDP), how long after the last arrival an answer still counts; later it is lost. */
    private static final long LOSSY_WAIT_NS = 1_000_000_000L;

    private final double rate;
    private final double seconds;
    private final boolean lossy;
    private final Histogram latency = LatencyStats.newHistogram();
    private final AtomicLong answers = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private long sent;

    OpenLoop(double rate, double seconds) {
        this(rate, seconds, false);
    }

    /** {@code lossy}: requests may be lost (UDP drops what a full socket buffer cannot take); they are counted, not failed. */
    OpenLoop(double rate, double seconds, boolean lossy) {
        this.rate = rate;
        this.seconds = seconds;
        this.lossy = lossy;
    }

    /**
     * Runs the turn: {@code request} is called with each arrival's time (System.nanoTime) on this thread, and must
     * hand the request to the side under test without waiting for it; then waits for every answer.
     */
    void run(LongConsumer request) throws InterruptedException {
        fineTimerSlack();
        SplittableRandom random = new SplittableRandom(42); // the same arrivals for every side and turn
        double meanGapNs = 1e9 / rate;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        for (long at = start; ; sent++) {
            at += (long) (-Math.log(1 - random.nextDouble()) * meanGapNs);
            if (at >= end) {
                break;
            }
            for (long left; (left = at - System.nanoTime()) > 0; ) {
                if (left > 2 * SPIN_BEFORE_NS) {
                    LockSupport.parkNanos(left - SPIN_BEFORE_NS);
                } else {
                    Thread.onSpinWait();
                }
            }
            request.accept(at);
        }
        long deadline = System.nanoTime() + (lossy ? LOSSY_WAIT_NS : ANSWER_WAIT_NS);
        while (answers.get() < sent && failure.get() == null && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a request failed: " + failure.get(), failure.get());
        }
        if (answers.get() < sent && !lossy) {
            throw new IllegalStateException((sent - answers.get()) + " of " + sent + " requests unanswered 30 s after the turn");
        }
    }

    /** The answer to the request that arrived at {@code arrival} came now; any thread. */
    void answered(long arrival) {
        long t = Math.max(0, System.nanoTime() - arrival);
        synchronized (latency) {
            latency.recordValue(t);
        }
        answers.incrementAndGet();
    }

    /** A request failed: the turn ends with this cause; any thread. */
    void failed(Throwable cause) {
        failure.compareAndSet(null, cause);
        answers.incrementAndGet();
    }

    long sent() {
        return sent;
    }

    /** Requests not answered (lost, where the turn is lossy) by the end of the turn. */
    long lost() {
        return Math.max(0, sent - answers.get());
    }

    /** Requests per second offered (the arrivals over the turn). */
    double offered() {
        return sent / seconds;
    }

    long p50() {
        synchronized (latency) {
            return latency.getValueAtPercentile(50);
        }
    }

    long p99() {
        synchronized (latency) {
            return latency.getValueAtPercentile(99);
        }
    }

    /**
     * Asks Linux for a timer slack of 1 ns on this thread (prctl PR_SET_TIMERSLACK; the default is 50 us), so its parks
     * end when asked: otherwise the harness hands requests over tens of microseconds after their arrival, and that
     * lateness, the same for every side, counts in every latency. Where the call is missing nothing changes.
     */
    private static void fineTimerSlack() {
        try {
            Linker linker = Linker.nativeLinker();
            MethodHandle prctl = linker.downcallHandle(linker.defaultLookup().find("prctl").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG),
                    Linker.Option.firstVariadicArg(1));
            int rc = (int) prctl.invokeExact(PR_SET_TIMERSLACK, 1L);
            if (rc != 0) {
                System.err.println("nupa: prctl(PR_SET_TIMERSLACK) failed; arrivals may be handed over late");
            }
        } catch (Throwable t) {
            System.err.println("nupa: no prctl here (" + t + "); arrivals may be handed over late");
        }
    }

    private static final int PR_SET_TIMERSLACK = 29; // linux/prctl.h
}
