package dev.nupa.perf;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.nupa.device.Trace;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;

/**
 * The sampled operations of a run, as {@link Trace} recorded them: kept in preallocated arrays by {@link #record}
 * (on the datapath, no allocation), turned into a per-layer breakdown, a JSON file and OpenTelemetry spans later,
 * off the fast path.
 */
public final class TraceLog {
    /** What share of the time of the operations traced each layer took. */
    public record Breakdown(String operation, int traces, List<Row> rows, double medianTotalNs) {
        String csv() {
            StringBuilder b = new StringBuilder("layer,median_ns,mean_ns,share_of_mean\n");
            for (Row r : rows) {
                b.append(String.format(Locale.ROOT, "%s,%.1f,%.1f,%.4f%n", r.layer(), r.medianNs(), r.meanNs(), r.share()));
            }
            return b.toString();
        }
    }

    /** One layer: the median and mean over the traces of the time it took in each. */
    public record Row(String layer, double medianNs, double meanNs, double share) {
    }

    static final AttributeKey<Long> POINTS = AttributeKey.longKey("nupa.trace.points");
    static final AttributeKey<Long> DROPPED = AttributeKey.longKey("nupa.trace.dropped_points");

    private final String operation;
    private final int capacity;
    private final long[] at;
    private final byte[] points;
    private final int[] lengths;
    private final int[] dropped;
    private int count;
    private long overflow;

    public TraceLog(String operation, int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a trace log keeps at least one trace, not " + capacity);
        }
        this.operation = operation;
        this.capacity = capacity;
        this.at = new long[capacity * Trace.MAX_MARKS];
        this.points = new byte[capacity * Trace.MAX_MARKS];
        this.lengths = new int[capacity];
        this.dropped = new int[capacity];
    }

    /** Ends the operation traced on this thread and keeps its points; past the capacity it is counted, not kept. */
    public void record() {
        int n = Trace.end();
        if (count == capacity) {
            overflow++;
            return;
        }
        Trace.copy(at, count * Trace.MAX_MARKS, points, count * Trace.MAX_MARKS);
        lengths[count] = n;
        dropped[count] = Trace.dropped();
        count++;
    }

    public int count() {
        return count;
    }

    /** Traces that came after the log was full. */
    public long overflow() {
        return overflow;
    }

    public String operation() {
        return operation;
    }

    /** Time per layer: between two points, the layer of the first; medians and means over the traces. */
    public Breakdown breakdown() {
        Map<String, double[]> perLayer = new LinkedHashMap<>();
        double[] totals = new double[count];
        for (int t = 0; t < count; t++) {
            int base = t * Trace.MAX_MARKS;
            for (int i = 0; i + 1 < lengths[t]; i++) {
                String layer = Trace.layer(points[base + i]);
                perLayer.computeIfAbsent(layer, k -> new double[count])[t] += at[base + i + 1] - at[base + i];
            }
            totals[t] = lengths[t] > 0 ? at[base + lengths[t] - 1] - at[base] : 0;
        }
        double meanTotal = Arrays.stream(totals).average().orElse(0);
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, double[]> e : perLayer.entrySet()) {
            double mean = Arrays.stream(e.getValue()).average().orElse(0);
            rows.add(new Row(e.getKey(), Turns.median(e.getValue()), mean, meanTotal > 0 ? mean / meanTotal : 0));
        }
        return new Breakdown(operation, count, rows, Turns.median(totals));
    }

    /** The traces: each a list of points with their time from the trace's start, in nanoseconds. */
    public String json() {
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "{\"operation\":\"%s\",\"traces\":[", operation));
        for (int t = 0; t < count; t++) {
            int base = t * Trace.MAX_MARKS;
            b.append(t > 0 ? ",\n" : "\n").append("{\"points\":[");
            for (int i = 0; i < lengths[t]; i++) {
                b.append(i > 0 ? "," : "").append(String.format(Locale.ROOT, "{\"point\":\"%s\",\"t_ns\":%d}",
                        Trace.name(points[base + i]), at[base + i] - at[base]));
            }
            b.append("],\"dropped_points\":").append(dropped[t]).append('}');
        }
        return b.append(String.format(Locale.ROOT, "],\"not_kept\":%d}%n", overflow)).toString();
    }

    /** The points of trace {@code t} as offsets from its start (for the report's table). */
    long[] offsets(int t) {
        long[] r = new long[lengths[t]];
        int base = t * Trace.MAX_MARKS;
        for (int i = 0; i < r.length; i++) {
            r[i] = at[base + i] - at[base];
        }
        return r;
    }

    /** The names of the points of trace {@code t}. */
    String[] names(int t) {
        String[] r = new String[lengths[t]];
        for (int i = 0; i < r.length; i++) {
            r[i] = Trace.name(points[t * Trace.MAX_MARKS + i]);
        }
        return r;
    }

    /**
     * One span per trace: it starts at the first point and ends at the last, with an event per point. Times are
     * {@link System#nanoTime} turned into wall-clock time with {@code epochMinusNano} (the difference of the two
     * clocks, taken once).
     */
    public void emit(Tracer tracer, long epochMinusNano) {
        for (int t = 0; t < count; t++) {
            int base = t * Trace.MAX_MARKS;
            int n = lengths[t];
            if (n == 0) {
                continue;
            }
            Span span = tracer.spanBuilder(operation).setNoParent()
                    .setStartTimestamp(at[base] + epochMinusNano, TimeUnit.NANOSECONDS).startSpan();
            span.setAttribute(POINTS, (long) n);
            if (dropped[t] > 0) {
                span.setAttribute(DROPPED, (long) dropped[t]);
            }
            for (int i = 0; i < n; i++) {
                span.addEvent(Trace.name(points[base + i]), at[base + i] + epochMinusNano, TimeUnit.NANOSECONDS);
            }
            span.end(at[base + n - 1] + epochMinusNano, TimeUnit.NANOSECONDS);
        }
    }

    /** The wall-clock time minus {@link System#nanoTime}, in nanoseconds. */
    public static long epochMinusNano() {
        java.time.Instant now = java.time.Instant.now();
        long nano = System.nanoTime();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano() - nano;
    }
}
