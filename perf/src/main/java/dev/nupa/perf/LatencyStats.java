package dev.nupa.perf;

import org.HdrHistogram.Histogram;

/**
 * Percentiles of one-way latencies (half round trips), in nanoseconds, in perftest's spirit; with the stalls: how many
 * round trips took over {@link #STALL_NS} (whatever held them: a GC pause, a safepoint, a descheduled thread), and the
 * seconds the round trips add up to, the time over which they were counted. In JSON also the tail's ratio to the middle,
 * p99 / p50 ({@code tail_ratio}).
 */
public record LatencyStats(long iterations, double min, double p50, double p99, double p999, double max, double avg,
                    double stdev, long stalls, double seconds) {
    /** A round trip longer than this is a stall: a millisecond, a thousand times a round trip's p50 on the fabric. */
    public static final long STALL_NS = 1_000_000;

    /** From a histogram of round trips: every figure is halved, as perftest reports latency; the stalls are round trips. */
    public static LatencyStats ofRoundTrips(Histogram rtt) {
        return new LatencyStats(rtt.getTotalCount(), rtt.getMinValue() / 2.0, rtt.getValueAtPercentile(50) / 2.0,
                rtt.getValueAtPercentile(99) / 2.0, rtt.getValueAtPercentile(99.9) / 2.0, rtt.getMaxValue() / 2.0,
                rtt.getMean() / 2.0, rtt.getStdDeviation() / 2.0, stalls(rtt), seconds(rtt));
    }

    /** From a histogram of whole round trips, reported as they are. */
    public static LatencyStats of(Histogram rtt) {
        return new LatencyStats(rtt.getTotalCount(), rtt.getMinValue(), rtt.getValueAtPercentile(50),
                rtt.getValueAtPercentile(99), rtt.getValueAtPercentile(99.9), rtt.getMaxValue(), rtt.getMean(),
                rtt.getStdDeviation(), stalls(rtt), seconds(rtt));
    }

    /** Round trips over {@link #STALL_NS}, to the histogram's three digits (its bucket holding 1 ms is not counted). */
    private static long stalls(Histogram rtt) {
        long above = rtt.nextNonEquivalentValue(STALL_NS);
        return rtt.getMaxValue() >= above ? rtt.getCountBetweenValues(above, rtt.getMaxValue()) : 0;
    }

    private static double seconds(Histogram rtt) {
        return rtt.getMean() * rtt.getTotalCount() / 1e9;
    }

    static Histogram newHistogram() {
        return new Histogram(60_000_000_000L, 3);
    }

    public static String header() {
        return String.format("%8s %12s %11s %11s %11s %11s %11s %11s %11s %11s",
                "#bytes", "#iterations", "t_min[ns]", "t_p50[ns]", "t_p99[ns]", "t_p99.9[ns]", "t_max[ns]",
                "t_avg[ns]", "t_stdev[ns]", "stalls>1ms");
    }

    public String row(int bytes) {
        return String.format("%8d %12d %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f %11d",
                bytes, iterations, min, p50, p99, p999, max, avg, stdev, stalls);
    }

    /** perftest's ib_*_lat columns (t_typical is the median), in microseconds. */
    public static String perftestHeader() {
        return String.format("%8s %12s %13s %13s %17s %13s %15s %11s %13s", "#bytes", "#iterations", "t_min[usec]",
                "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99%[usec]", "99.9%[usec]");
    }

    public String perftestRow(int bytes) {
        return String.format(java.util.Locale.ROOT, "%8d %12d %13.3f %13.3f %17.3f %13.3f %15.3f %11.3f %13.3f", bytes, iterations,
                min / 1000, max / 1000, p50 / 1000, avg / 1000, stdev / 1000, p99 / 1000, p999 / 1000);
    }

    /** The tail over the middle: p99 / p50 (NaN with no round trips). */
    public double tailRatio() {
        return p99 / p50;
    }

    public String json() {
        return String.format(java.util.Locale.ROOT,
                "\"iterations\":%d,\"min_ns\":%s,\"p50_ns\":%s,\"p99_ns\":%s,\"p999_ns\":%s,\"max_ns\":%s,"
                        + "\"avg_ns\":%s,\"stdev_ns\":%s,\"tail_ratio\":%s,\"stalls_over_1ms\":%d,\"seconds\":%s",
                iterations, JsonNumber.of(min, 1), JsonNumber.of(p50, 1), JsonNumber.of(p99, 1), JsonNumber.of(p999, 1),
                JsonNumber.of(max, 1), JsonNumber.of(avg, 1), JsonNumber.of(stdev, 1), JsonNumber.of(tailRatio(), 3), stalls,
                JsonNumber.of(seconds, 3));
    }
}
