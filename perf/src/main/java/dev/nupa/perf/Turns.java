package dev.nupa.perf;

import java.util.Arrays;

import org.HdrHistogram.Histogram;

/**
 * A side-by-side latency measurement taken in short turns: each turn runs every series (ours, the
 * floor, a peer) for {@link #TURN} iterations, one after the other, and a ratio is the median over the
 * turns of each turn's own p50 ratio. The host moves the two vCPUs of a small VM between cores that
 * share a cache and cores that do not, within a run, so a ratio of pooled percentiles may compare one
 * placement with another; it is kept as the pooled ratio. Each series is also pooled over all turns for
 * its percentiles.
 */
public final class Turns {
    /** Iterations per turn: one to a few milliseconds, short beside the host's moves of the vCPUs. */
    public static final int TURN = 5000;
    /** Iterations per turn beside a Linux peer, whose round trips take several microseconds each. */
    public static final int PEER_TURN = 1000;

    /**
     * The lengths of a warm-up's turns: {@code total} iterations in turns of {@link #PEER_TURN}, as the measured run
     * goes, so that the switches between the paths are compiled before it. After one long warm-up of each path, our
     * first measured turns ran 2-5x slower, getting faster over about ten turns while the JIT compiled the switches,
     * and made most of the run's p99.
     */
    public static long[] warmUp(long total) {
        long[] turns = new long[(int) ((total + PEER_TURN - 1) / PEER_TURN)];
        for (int i = 0; i < turns.length; i++) {
            turns[i] = Math.min(PEER_TURN, total - (long) i * PEER_TURN);
        }
        return turns;
    }

    private final long iterations;
    private final int turnLength;
    private final Histogram[] turn;
    private final Histogram[] pooled;
    private final double[][] p50;
    private int done;
    private PerfReport report;
    private Progress progress;
    private double turnStart;

    public Turns(int series, long iterations) {
        this(series, iterations, TURN);
    }

    public Turns(int series, long iterations, int turnLength) {
        if (iterations < 1 || turnLength < 1) {
            throw new IllegalArgumentException("turns need at least one iteration, not " + iterations + " in turns of " + turnLength);
        }
        this.iterations = iterations;
        this.turnLength = turnLength;
        int count = (int) ((iterations + turnLength - 1) / turnLength);
        turn = new Histogram[series];
        pooled = new Histogram[series];
        p50 = new double[series][count];
        for (int s = 0; s < series; s++) {
            turn[s] = LatencyStats.newHistogram();
            pooled[s] = LatencyStats.newHistogram();
        }
    }

    /**
     * Feeds {@code report} (may be null) each series' turns, named {@code names}, and {@code progress} (may be null)
     * the turns done; a report is written when the last turn ends.
     */
    public Turns observe(PerfReport r, Progress p, String... names) {
        if (r != null) {
            if (names.length != turn.length) {
                throw new IllegalArgumentException(turn.length + " series need " + turn.length + " names, not " + names.length);
            }
            r.attach(this, names);
            turnStart = r.seconds();
        }
        this.report = r;
        this.progress = p;
        return this;
    }

    /** How many turns have ended. */
    int done() {
        return done;
    }

    /** How many turns the iterations make. */
    public int count() {
        return p50[0].length;
    }

    /** Iterations of turn {@code t} (the last may be shorter). */
    public long length(int t) {
        return Math.min(turnLength, iterations - (long) t * turnLength);
    }

    /** Where series {@code s} records the current turn. */
    public Histogram turn(int s) {
        return turn[s];
    }

    /** Closes the current turn: keeps each series' p50 and pools its samples. */
    public void endTurn() {
        PerfReport r = report;
        if (r != null) {
            synchronized (r) { // a report written on Ctrl-C reads the pooled series
                closeTurn(r);
            }
            if (done == count()) {
                r.write(false);
            }
        } else {
            closeTurn(null);
        }
        if (progress != null) {
            progress.update(done, count(), (long) done * turnLength);
        }
    }

    private void closeTurn(PerfReport r) {
        double end = r != null ? r.seconds() : 0;
        for (int s = 0; s < turn.length; s++) {
            p50[s][done] = turn[s].getTotalCount() == 0 ? Double.NaN : turn[s].getValueAtPercentile(50);
            if (r != null) {
                r.turn(s, turn[s], turnStart, end);
            }
            pooled[s].add(turn[s]);
            turn[s].reset();
        }
        turnStart = end;
        done++;
    }

    /** All samples of series {@code s}. */
    public Histogram pooled(int s) {
        return pooled[s];
    }

    /** The median over the finished turns of p50(a) / p50(b); turns where either recorded nothing are left out. */
    public double ratio(int a, int b) {
        double[] r = new double[done];
        for (int t = 0; t < done; t++) {
            r[t] = p50[a][t] / p50[b][t];
        }
        return median(r);
    }

    /** The median of those {@code values} that are finite numbers; NaN if none is. */
    static double median(double[] values) {
        double[] r = new double[values.length];
        int n = 0;
        for (double v : values) {
            if (!Double.isNaN(v) && !Double.isInfinite(v)) {
                r[n++] = v;
            }
        }
        if (n == 0) {
            return Double.NaN;
        }
        Arrays.sort(r, 0, n);
        return n % 2 == 1 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    }

    /** p50(a) / p50(b) of the pooled samples. */
    double pooledRatio(int a, int b) {
        return (double) pooled[a].getValueAtPercentile(50) / pooled[b].getValueAtPercentile(50);
    }
}
