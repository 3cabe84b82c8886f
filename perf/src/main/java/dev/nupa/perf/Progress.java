package dev.nupa.perf;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A progress line for long perf runs, on standard error: a bar, the time so far, the rate and the time left,
 * redrawn in place at most five times a second and ended with a newline when the run is done.
 */
public final class Progress {
    private static final int WIDTH = 30;
    private static final long EVERY_NS = 200_000_000L;

    private final String what;
    private final PrintStream out;
    private final long total;
    private final long startNs = System.nanoTime();
    private long lastNs;

    public Progress(String what, long totalIterations, PrintStream out) {
        this.what = what;
        this.total = totalIterations;
        this.out = out;
    }

    /** {@code turns} of {@code of} done, {@code iterations} measured so far. */
    void update(int turns, int of, long iterations) {
        long now = System.nanoTime();
        boolean last = turns >= of;
        if (!last && now - lastNs < EVERY_NS) {
            return;
        }
        lastNs = now;
        out.print(line(turns, of, Math.min(iterations, total), (now - startNs) / 1e9));
        out.print(last ? "\n" : "");
        out.flush();
    }

    /** The line for {@code turns} of {@code of} done, {@code iterations} measured in {@code seconds}. */
    String line(int turns, int of, long iterations, double seconds) {
        double done = of == 0 ? 1 : (double) turns / of;
        int filled = (int) Math.round(done * WIDTH);
        double rate = seconds > 0 ? iterations / seconds : 0;
        double left = done > 0 ? seconds * (1 - done) / done : Double.NaN;
        return String.format(Locale.ROOT, "\r%s [%s%s] %3.0f%%  %.1f s  %,.0f iterations/s  ETA %s ", what, "#".repeat(filled),
                "-".repeat(WIDTH - filled), done * 100, seconds, rate, Double.isNaN(left) ? "?" : String.format(Locale.ROOT, "%.1f s", left));
    }
}
