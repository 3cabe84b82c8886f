package dev.nupa.node.telemetry;

import java.nio.file.Path;
import java.util.Collection;

import dev.nupa.perf.OtlpJsonFile;
import io.opentelemetry.exporter.internal.otlp.metrics.MetricsRequestMarshaler;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.InstrumentType;
import io.opentelemetry.sdk.metrics.data.AggregationTemporality;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.metrics.export.MetricExporter;

/**
 * Metrics to a file, one OTLP/JSON {@code ExportMetricsServiceRequest} a line ({@link OtlpJsonFile}): the node's sums
 * (the layers' counters) and histograms (latencies), cumulative, as a collector's file receiver reads them.
 */
public final class FileMetricExporter extends OtlpJsonFile implements MetricExporter {
    public FileMetricExporter(Path path) {
        super(path, "metrics");
    }

    @Override
    public AggregationTemporality getAggregationTemporality(InstrumentType instrumentType) {
        return AggregationTemporality.CUMULATIVE;
    }

    @Override
    public CompletableResultCode export(Collection<MetricData> metrics) {
        return metrics.isEmpty() ? CompletableResultCode.ofSuccess() : writeLine(MetricsRequestMarshaler.create(metrics));
    }
}
