package dev.nupa.node;

import dev.nupa.perf.OtlpJson;
import dev.nupa.perf.OtlpJsonFile;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.data.PointData;
import io.opentelemetry.sdk.metrics.export.MetricExporter;

/**
 * Metrics to a file in the OTLP file exporter's format: one line per export, an OTLP/JSON
 * {@code ExportMetricsServiceRequest} with the node's sums (the layers' counters) and histograms (latencies),
 * cumulative, as a collector's file receiver reads them.
 */
final class FileMetricExporter extends OtlpJsonFile implements MetricExporter {
    FileMetricExporter(Path path) {
        super(path, "metrics");
    }

    @Override
    public AggregationTemporality getAggregationTemporality(InstrumentType instrumentType) {
        return AggregationTemporality.CUMULATIVE;
    }

    @Override
    public CompletableResultCode export(Collection<MetricData> metrics) {
        if (metrics.isEmpty()) {
            return CompletableResultCode.ofSuccess();
        }
        Map<String, List<MetricData>> byScope = new LinkedHashMap<>();
        for (MetricData m : metrics) {
            byScope.computeIfAbsent(m.getInstrumentationScopeInfo().getName(), k -> new java.util.ArrayList<>()).add(m);
        }
        StringBuilder b = new StringBuilder("{\"resourceMetrics\":[{");
        OtlpJson.resource(b, metrics.iterator().next().getResource());
        b.append(",\"scopeMetrics\":[");
        boolean firstScope = true;
        for (Map.Entry<String, List<MetricData>> e : byScope.entrySet()) {
            b.append(firstScope ? "" : ",").append("{\"scope\":{\"name\":");
            firstScope = false;
            OtlpJson.string(b, e.getKey());
            b.append("},\"metrics\":[");
            boolean firstMetric = true;
            for (MetricData m : e.getValue()) {
                b.append(firstMetric ? "" : ",");
                firstMetric = false;
                metric(b, m);
            }
            b.append("]}");
        }
        b.append("]}]}\n");
        return writeLine(b.toString());
    }

    private static void metric(StringBuilder b, MetricData m) {
        b.append("{\"name\":");
        OtlpJson.string(b, m.getName());
        b.append(",\"description\":");
        OtlpJson.string(b, m.getDescription());
        b.append(",\"unit\":");
        OtlpJson.string(b, m.getUnit());
        switch (m.getType()) {
            case LONG_SUM -> {
                b.append(",\"sum\":{\"aggregationTemporality\":2,\"isMonotonic\":").append(m.getLongSumData().isMonotonic())
                        .append(",\"dataPoints\":[");
                boolean first = true;
                for (LongPointData p : m.getLongSumData().getPoints()) {
                    b.append(first ? "" : ",");
                    first = false;
                    point(b, p);
                    b.append(",\"asInt\":\"").append(p.getValue()).append("\"}");
                }
                b.append("]}");
            }
            case HISTOGRAM -> {
                b.append(",\"histogram\":{\"aggregationTemporality\":2,\"dataPoints\":[");
                boolean first = true;
                for (HistogramPointData p : m.getHistogramData().getPoints()) {
                    b.append(first ? "" : ",");
                    first = false;
                    point(b, p);
                    b.append(",\"count\":\"").append(p.getCount()).append("\",\"sum\":").append(p.getSum());
                    if (p.hasMin()) {
                        b.append(",\"min\":").append(p.getMin()).append(",\"max\":").append(p.getMax());
                    }
                    b.append(",\"bucketCounts\":[");
                    List<Long> counts = p.getCounts();
                    for (int i = 0; i < counts.size(); i++) {
                        b.append(i > 0 ? "," : "").append('"').append(counts.get(i)).append('"');
                    }
                    b.append("],\"explicitBounds\":[");
                    List<Double> bounds = p.getBoundaries();
                    for (int i = 0; i < bounds.size(); i++) {
                        b.append(i > 0 ? "," : "").append(bounds.get(i));
                    }
                    b.append("]}");
                }
                b.append("]}");
            }
            default -> b.append(",\"unsupported\":\"").append(m.getType()).append('"'); // the node makes no other kind
        }
        b.append('}');
    }

    /** A data point's opening: its attributes and times, left open for the values. */
    private static void point(StringBuilder b, PointData p) {
        b.append("{\"attributes\":[");
        OtlpJson.attributes(b, p.getAttributes());
        b.append("],\"startTimeUnixNano\":\"").append(p.getStartEpochNanos()).append("\",\"timeUnixNano\":\"")
                .append(p.getEpochNanos()).append('"');
    }
}
