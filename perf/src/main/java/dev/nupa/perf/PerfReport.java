package dev.nupa.perf;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

/**
 * What {@code nupa perf ... --report DIR} writes for a latency run: per series (ours, the floor, a peer) the
 * HdrHistogram percentile distribution ({@code NAME.hgrm}, microseconds) and interval log ({@code NAME.hlog}, one
 * histogram per turn), the timeline of turns ({@code timeline.csv}), the per-layer breakdown and the sampled
 * traces when the run was traced ({@code breakdown.csv}, {@code traces.json}), {@code summary.json}, and
 * {@code report.html}: one page with its plots drawn as inline SVG, so it opens with no network connection.
 *
 * <p>Turns feed it as each turn ends (off the measured loop); a run stopped early (Ctrl-C) is written with the turns
 * it finished, marked partial.
 */
public final class PerfReport {
    /** One finished turn of one series. */
    record Point(double seconds, long count, long p50, long p99, long max, double mean) {
    }

    private final Path dir;
    private final String title;
    private final long startNs = System.nanoTime();
    private String[] names;
    private List<List<Point>> timeline;
    private HistogramLogWriter[] logs;
    private PrintStream[] logStreams;
    private Turns turns;
    private TraceLog traces;
    private boolean written;
    /** Rate mode (bandwidth and rate tools): the unit, and per series its (seconds, value) per round. */
    private String unit;
    private List<List<double[]>> rates;

    private PerfReport(Path dir, String title) {
        this.dir = dir;
        this.title = title;
    }

    /**
     * A report into {@code dir} (created if missing); fails at once when it cannot be written, before any measurement.
     * If the process is stopped (Ctrl-C, SIGTERM) before the last turn, the turns done so far are written, marked partial.
     */
    public static PerfReport open(Path dir, String title) {
        try {
            Files.createDirectories(dir);
            Path probe = Files.createTempFile(dir, ".probe", "");
            Files.delete(probe);
        } catch (IOException e) {
            throw new IllegalArgumentException("--report " + dir + " cannot be written: " + e.getMessage());
        }
        PerfReport r = new PerfReport(dir, title);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (r.writePartial()) {
                System.err.println("\nnupa perf: stopped; the report of what was measured so far is in " + dir);
            }
        }, "nupa-perf-report"));
        return r;
    }

    /** On the way out: writes what the finished turns measured, unless the report was written. */
    private synchronized boolean writePartial() {
        boolean measured = turns != null ? turns.done() > 0 : rates != null && !rates.getFirst().isEmpty();
        if (written || !measured) {
            return false;
        }
        write(true);
        return true;
    }

    Path dir() {
        return dir;
    }

    /** The turns to report, with a name per series; a later call (another message size) replaces the earlier one. */
    synchronized void attach(Turns t, String... seriesNames) {
        closeLogs();
        this.turns = t;
        this.names = seriesNames.clone();
        this.timeline = new ArrayList<>();
        this.logs = new HistogramLogWriter[names.length];
        this.logStreams = new PrintStream[names.length];
        for (int s = 0; s < names.length; s++) {
            timeline.add(new ArrayList<>());
            try {
                logStreams[s] = new PrintStream(Files.newOutputStream(dir.resolve(names[s] + ".hlog")), false, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + dir.resolve(names[s] + ".hlog"), e);
            }
            logs[s] = new HistogramLogWriter(logStreams[s]);
            logs[s].outputComment("nupa perf " + title + ", series " + names[s] + ": round trips in nanoseconds, one histogram per turn");
            logs[s].outputLogFormatVersion();
            logs[s].outputStartTime(System.currentTimeMillis());
            logs[s].outputLegend();
        }
    }

    /** Rate mode, for a tool that measures rates in rounds: the series' names and the unit of their rates. */
    synchronized void rates(String rateUnit, String... seriesNames) {
        this.unit = rateUnit;
        this.names = seriesNames.clone();
        this.rates = new ArrayList<>();
        for (int s = 0; s < names.length; s++) {
            rates.add(new ArrayList<>());
        }
    }

    /** Series {@code s} measured {@code value} (in the unit) over the round that just ended. */
    synchronized void rate(int s, double value) {
        rates.get(s).add(new double[] {seconds(), value});
    }

    /** The sampled traces of the run, for the breakdown and the traces file. */
    synchronized void traces(TraceLog log) {
        this.traces = log;
    }

    /** Series {@code s} finished a turn with {@code h} (its samples of this turn only). */
    synchronized void turn(int s, Histogram h, double startSec, double endSec) {
        if (timeline == null || s >= names.length || h.getTotalCount() == 0) {
            return;
        }
        timeline.get(s).add(new Point(endSec, h.getTotalCount(), h.getValueAtPercentile(50), h.getValueAtPercentile(99),
                h.getMaxValue(), h.getMean()));
        logs[s].outputIntervalHistogram(startSec, endSec, h, 1.0);
    }

    /** Seconds since the report was opened. */
    double seconds() {
        return (System.nanoTime() - startNs) / 1e9;
    }

    /** Writes every file; {@code partial} when the run was stopped before its last turn. Once. */
    synchronized void write(boolean partial) {
        if (written || (turns == null && rates == null)) {
            return;
        }
        written = true;
        if (turns == null) {
            writeRates(partial);
            return;
        }
        closeLogs();
        try {
            Histogram[] pooled = new Histogram[names.length];
            for (int s = 0; s < names.length; s++) {
                pooled[s] = turns.pooled(s);
                if (pooled[s].getTotalCount() == 0) {
                    Files.deleteIfExists(dir.resolve(names[s] + ".hlog"));
                    continue;
                }
                try (PrintStream out = new PrintStream(Files.newOutputStream(dir.resolve(names[s] + ".hgrm")), false, StandardCharsets.UTF_8)) {
                    pooled[s].outputPercentileDistribution(out, 1000.0); // microseconds
                }
            }
            writeTimeline();
            TraceLog.Breakdown breakdown = traces != null ? traces.breakdown() : null;
            if (traces != null) {
                Files.writeString(dir.resolve("breakdown.csv"), breakdown.csv());
                Files.writeString(dir.resolve("traces.json"), traces.json());
            }
            Files.writeString(dir.resolve("summary.json"), summary(pooled, partial));
            Files.writeString(dir.resolve("report.html"), new ReportPage(title, names, pooled, timeline, turns, breakdown,
                    traces, partial).html());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the report in " + dir + ": " + e.getMessage(), e);
        }
    }

    private void writeRates(boolean partial) {
        try {
            StringBuilder csv = new StringBuilder("series,seconds," + unit.replace(',', ' ') + "\n");
            StringBuilder json = new StringBuilder(String.format(Locale.ROOT, "{\"test\":\"%s\",\"partial\":%b,\"unit\":\"%s\",\"series\":[",
                    title, partial, unit));
            for (int s = 0; s < names.length; s++) {
                double[] v = new double[rates.get(s).size()];
                for (int i = 0; i < v.length; i++) {
                    double[] p = rates.get(s).get(i);
                    v[i] = p[1];
                    csv.append(String.format(Locale.ROOT, "%s,%.4f,%.6g%n", names[s], p[0], p[1]));
                }
                json.append(s > 0 ? "," : "").append(String.format(Locale.ROOT, "{\"name\":\"%s\",\"rounds\":%d,\"median\":%s,"
                        + "\"min\":%s,\"max\":%s}", names[s], v.length,
                        JsonNumber.of(Turns.median(v), 3), JsonNumber.of(java.util.Arrays.stream(v).min().orElse(Double.NaN), 3),
                        JsonNumber.of(java.util.Arrays.stream(v).max().orElse(Double.NaN), 3)));
            }
            Files.writeString(dir.resolve("timeline.csv"), csv);
            Files.writeString(dir.resolve("summary.json"), json.append("]}\n"));
            Files.writeString(dir.resolve("report.html"), ReportPage.rates(title, unit, names, rates, partial));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the report in " + dir + ": " + e.getMessage(), e);
        }
    }

    private void writeTimeline() throws IOException {
        StringBuilder b = new StringBuilder("series,seconds,count,p50_ns,p99_ns,max_ns,mean_ns\n");
        for (int s = 0; s < names.length; s++) {
            for (Point p : timeline.get(s)) {
                b.append(String.format(Locale.ROOT, "%s,%.4f,%d,%d,%d,%d,%.1f%n", names[s], p.seconds(), p.count(), p.p50(), p.p99(),
                        p.max(), p.mean()));
            }
        }
        Files.writeString(dir.resolve("timeline.csv"), b);
    }

    private String summary(Histogram[] pooled, boolean partial) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "{\"test\":\"%s\",\"partial\":%b,\"turns\":%d,\"series\":[", title, partial, turns.done()));
        boolean first = true;
        for (int s = 0; s < names.length; s++) {
            if (pooled[s].getTotalCount() == 0) {
                continue;
            }
            b.append(first ? "" : ",");
            first = false;
            b.append(String.format(Locale.ROOT, "{\"name\":\"%s\",%s", names[s], LatencyStats.of(pooled[s]).json()));
            double ratio = turns.ratio(0, s);
            if (s > 0 && Double.isFinite(ratio)) {
                b.append(",\"ratio_of_ours\":").append(JsonNumber.of(ratio, 3));
            }
            b.append('}');
        }
        return b.append("]}\n").toString();
    }

    private void closeLogs() {
        if (logStreams != null) {
            for (PrintStream p : logStreams) {
                if (p != null) {
                    p.close();
                }
            }
            logStreams = null;
        }
    }
}
