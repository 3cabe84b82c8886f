package dev.nupa.perf;

import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * The report's page: a summary table, three plots (the percentile curve, latency over time, throughput over time),
 * the per-layer breakdown and sampled traces when the run was traced. Everything inline (CSS and SVG, no script),
 * so it opens anywhere, with no network connection.
 */
final class ReportPage {
    private static final int TRACES_SHOWN = 20;

    private final String title;
    private final String[] names;
    private final Histogram[] pooled;
    private final List<List<PerfReport.Point>> timeline;
    private final Turns turns;
    private final TraceLog.Breakdown breakdown;
    private final TraceLog traces;
    private final boolean partial;

    ReportPage(String title, String[] names, Histogram[] pooled, List<List<PerfReport.Point>> timeline, Turns turns,
               TraceLog.Breakdown breakdown, TraceLog traces, boolean partial) {
        this.title = title;
        this.names = names;
        this.pooled = pooled;
        this.timeline = timeline;
        this.turns = turns;
        this.breakdown = breakdown;
        this.traces = traces;
        this.partial = partial;
    }

    /** The page's head and first lines, up to the paragraph that says what was measured (left open). */
    private static StringBuilder head(String title) {
        StringBuilder b = new StringBuilder();
        b.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>nupa perf ").append(SvgPlot.esc(title))
                .append("</title>\n<style>\n")
                .append("body{font-family:sans-serif;margin:24px;color:#222;max-width:820px}\n")
                .append("table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\n")
                .append("th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\n")
                .append(".title{font-size:14px;font-weight:bold}.tick{font-size:11px;fill:#444}.label{font-size:12px}\n")
                .append(".legend{font-size:12px}.grid{stroke:#e4e4e4}.frame{fill:none;stroke:#888}.partial{color:#b00}\n")
                .append("</style></head><body>\n");
        b.append("<h1>nupa perf ").append(SvgPlot.esc(title)).append("</h1>\n<p>")
                .append(ZonedDateTime.now().format(DateTimeFormatter.RFC_1123_DATE_TIME)).append(", host ")
                .append(SvgPlot.esc(host())).append(", the measuring process on ").append(Runtime.getRuntime().availableProcessors())
                .append(" CPU(s); ");
        return b;
    }

    private static String stopped(boolean partial) {
        return partial ? " <b class=\"partial\">(stopped early: a partial report)</b>" : "";
    }

    /** The page of a rate tool: each series' rate per round, a table and the throughput over time. */
    static String rates(String title, String unit, String[] names, List<List<double[]>> rates, boolean partial) {
        StringBuilder b = head(title).append(rates.getFirst().size()).append(" rounds").append(stopped(partial)).append(".</p>\n");
        b.append("<table id=\"summary\"><tr><th>series</th><th>rounds</th><th>median</th><th>min</th><th>max</th>"
                + "<th>ours / this (median over rounds)</th></tr>\n");
        SvgPlot plot = new SvgPlot("throughput", "Throughput over time", "seconds", unit);
        for (int s = 0; s < names.length; s++) {
            List<double[]> r = rates.get(s);
            double[] v = r.stream().mapToDouble(p -> p[1]).toArray();
            double[] ratio = new double[Math.min(v.length, rates.getFirst().size())];
            for (int i = 0; i < ratio.length; i++) {
                ratio[i] = rates.getFirst().get(i)[1] / v[i];
            }
            b.append(String.format(Locale.ROOT, "<tr><td>%s</td><td>%d</td><td>%,.3f</td><td>%,.3f</td><td>%,.3f</td><td>%s</td></tr>%n",
                    SvgPlot.esc(names[s]), v.length, Turns.median(v), java.util.Arrays.stream(v).min().orElse(Double.NaN),
                    java.util.Arrays.stream(v).max().orElse(Double.NaN),
                    s == 0 ? "" : String.format(Locale.ROOT, "%.3f", Turns.median(ratio))));
            plot.line(names[s], SvgPlot.COLORS[s % SvgPlot.COLORS.length], r.stream().mapToDouble(p -> p[0]).toArray(), v, false);
        }
        b.append("</table>\n<p>").append(SvgPlot.esc(unit)).append(", each series measured in every round, one after the other.</p>\n");
        b.append(plot.svg());
        b.append("<p>The data: timeline.csv (every round), summary.json. A latency tool's report adds the percentile curve,"
                + " latency over time and, with --trace, where the time went.</p>\n");
        return b.append("</body></html>\n").toString();
    }

    String html() {
        StringBuilder b = head(title).append(turns.done()).append(" of ").append(turns.count()).append(" turns")
                .append(stopped(partial)).append(".</p>\n");
        summary(b);
        b.append(percentiles().svg());
        b.append(overTime(false).svg());
        b.append(overTime(true).svg());
        b.append("<p>Latencies are round trips as measured (microseconds). Throughput is one over the mean round trip of each turn:"
                + " the rate of one operation outstanding. The files beside this page hold the data: NAME.hgrm (percentiles),"
                + " NAME.hlog (a histogram per turn), timeline.csv, summary.json.</p>\n");
        if (breakdown != null) {
            breakdown(b);
            traces(b);
        } else {
            b.append("<p>Not traced: run with <code>--trace RATE</code> for the per-layer breakdown and sampled traces.</p>\n");
        }
        return b.append("</body></html>\n").toString();
    }

    private void summary(StringBuilder b) {
        b.append("<table id=\"summary\"><tr><th>series</th><th>iterations</th><th>min</th><th>p50</th><th>p99</th><th>p99.9</th>"
                + "<th>max</th><th>p50 ours / p50 this</th></tr>\n");
        for (int s = 0; s < names.length; s++) {
            Histogram h = pooled[s];
            if (h.getTotalCount() == 0) {
                continue; // a series this run did not measure (a peer that does not apply)
            }
            b.append(String.format(Locale.ROOT, "<tr><td>%s</td><td>%,d</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%s</td></tr>%n",
                    SvgPlot.esc(names[s]), h.getTotalCount(), h.getMinValue() / 1e3, h.getValueAtPercentile(50) / 1e3,
                    h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3,
                    s == 0 ? "" : String.format(Locale.ROOT, "%.3f (median over turns)", turns.ratio(0, s))));
        }
        b.append("</table>\n<p>Microseconds.</p>\n");
    }

    /** x: log10(1 / (1 - p)), so 90%, 99%, 99.9% ... are evenly spaced. */
    private SvgPlot percentiles() {
        SvgPlot p = new SvgPlot("percentiles", "Latency by percentile", "percentile", "round trip (us, log scale)").logY()
                .xTicks(new double[] {0, 1, 2, 3, 4, 5}, new String[] {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"});
        for (int s = 0; s < names.length; s++) {
            if (pooled[s].getTotalCount() == 0) {
                continue;
            }
            List<double[]> pts = new java.util.ArrayList<>();
            for (HistogramIterationValue v : pooled[s].percentiles(5)) {
                double q = v.getPercentileLevelIteratedTo() / 100;
                if (q >= 0.999999) {
                    break;
                }
                pts.add(new double[] {Math.log10(1 / (1 - q)), v.getValueIteratedTo() / 1e3});
            }
            p.line(names[s], SvgPlot.COLORS[s % SvgPlot.COLORS.length], pts.stream().mapToDouble(a -> a[0]).toArray(),
                    pts.stream().mapToDouble(a -> a[1]).toArray(), false);
        }
        return p;
    }

    private SvgPlot overTime(boolean throughput) {
        SvgPlot p = throughput
                ? new SvgPlot("throughput", "Throughput over time", "seconds", "operations/s")
                : new SvgPlot("latency-over-time", "Latency over time (p50 solid, p99 dashed)", "seconds", "round trip (us)");
        for (int s = 0; s < names.length; s++) {
            List<PerfReport.Point> pts = timeline.get(s);
            if (pts.isEmpty()) {
                continue;
            }
            double[] x = pts.stream().mapToDouble(PerfReport.Point::seconds).toArray();
            String color = SvgPlot.COLORS[s % SvgPlot.COLORS.length];
            if (throughput) {
                p.line(names[s], color, x, pts.stream().mapToDouble(q -> q.mean() > 0 ? 1e9 / q.mean() : 0).toArray(), false);
            } else {
                p.line(names[s] + " p50", color, x, pts.stream().mapToDouble(q -> q.p50() / 1e3).toArray(), false);
                p.line(names[s] + " p99", color, x, pts.stream().mapToDouble(q -> q.p99() / 1e3).toArray(), true);
            }
        }
        return p;
    }

    private void breakdown(StringBuilder b) {
        b.append(String.format(Locale.ROOT, "<h2>Where the time went</h2>%n<p>%,d sampled %s operations (median total %.3f us)."
                + " Each layer's time is the time from the point it was entered to the next point.</p>%n", breakdown.traces(),
                SvgPlot.esc(breakdown.operation()), breakdown.medianTotalNs() / 1e3));
        b.append("<svg class=\"plot\" id=\"breakdown\" xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"40\" viewBox=\"0 0 760 40\">\n");
        double x = 0;
        int i = 0;
        for (TraceLog.Row r : breakdown.rows()) {
            double w = r.share() * 760;
            b.append(String.format(Locale.ROOT, "<rect class=\"layer\" x=\"%.1f\" y=\"4\" width=\"%.1f\" height=\"32\" fill=\"%s\"><title>%s %.1f%%</title></rect>%n",
                    x, w, SvgPlot.COLORS[i++ % SvgPlot.COLORS.length], SvgPlot.esc(r.layer()), r.share() * 100));
            x += w;
        }
        b.append("</svg>\n<table id=\"layers\"><tr><th>layer</th><th>median (ns)</th><th>mean (ns)</th><th>share of the mean</th></tr>\n");
        i = 0;
        for (TraceLog.Row r : breakdown.rows()) {
            b.append(String.format(Locale.ROOT, "<tr><td><span style=\"color:%s\">&#9632;</span> %s</td><td>%,.0f</td><td>%,.0f</td>"
                    + "<td>%.1f%%</td></tr>%n", SvgPlot.COLORS[i++ % SvgPlot.COLORS.length], SvgPlot.esc(r.layer()), r.medianNs(),
                    r.meanNs(), r.share() * 100));
        }
        b.append("</table>\n");
    }

    private void traces(StringBuilder b) {
        int n = Math.min(TRACES_SHOWN, traces.count());
        b.append("<h2>Sampled traces</h2>\n<p>The first ").append(n).append(" (all of them in traces.json): each point and its time"
                + " from the start, in ns.</p>\n<table id=\"traces\">\n");
        for (int t = 0; t < n; t++) {
            String[] names = traces.names(t);
            long[] at = traces.offsets(t);
            b.append("<tr><td>").append(t + 1).append("</td><td style=\"text-align:left\">");
            for (int i = 0; i < names.length; i++) {
                b.append(i > 0 ? " &rarr; " : "").append(names[i]).append(' ').append(at[i]);
            }
            b.append("</td></tr>\n");
        }
        b.append("</table>\n");
    }

    private static String host() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            return "unknown";
        }
    }
}
