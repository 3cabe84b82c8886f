package dev.nupa.node;

import dev.nupa.node.telemetry.FileMetricExporter;
import dev.nupa.node.telemetry.RdmaTelemetry;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.nupa.ip.wire.Ipv4Address;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.ObservableLongMeasurement;
import io.opentelemetry.exporter.logging.LoggingMetricExporter;
import io.opentelemetry.exporter.otlp.http.metrics.OtlpHttpMetricExporter;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.export.MetricExporter;
import io.opentelemetry.sdk.metrics.export.MetricReader;
import io.opentelemetry.sdk.metrics.export.PeriodicMetricReader;
import io.opentelemetry.sdk.resources.Resource;

/**
 * The node's counters as OpenTelemetry metrics: one asynchronous counter per layer ({@code nupa.link},
 * {@code nupa.ip}, {@code nupa.tcp}, {@code nupa.rdma}) with a point per counter (attribute
 * {@code nupa.counter}), the same counters as the gRPC Admin service gives. They are read on the node's event
 * loop once per collection, so the datapath pays nothing beyond the counters it keeps anyway. Off unless
 * started; {@code nupa node --metrics} starts it with an exporter.
 */
public final class NodeMetrics implements AutoCloseable {
    /** The attribute that names the counter within its layer's metric. */
    public static final AttributeKey<String> COUNTER = AttributeKey.stringKey("nupa.counter");
    /** Default time between exports. */
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(60);

    private final SdkMeterProvider provider;

    private NodeMetrics(SdkMeterProvider provider) {
        this.provider = provider;
    }

    /** Publishes {@code node}'s counters to {@code reader} (an exporting reader, or one a test collects from). */
    public static NodeMetrics start(NupaNode node, MetricReader reader) {
        Resource resource = Resource.getDefault().merge(Resource.create(Attributes.builder()
                .put("service.name", "nupa-node")
                .put("nupa.fabric_address", node.link().address())
                .put("nupa.ipv4", Ipv4Address.toString(node.ip().address()))
                .build()));
        SdkMeterProvider provider = SdkMeterProvider.builder().setResource(resource).registerMetricReader(reader).build();
        Meter meter = provider.get("dev.nupa.node");
        Map<String, ObservableLongMeasurement> layers = new HashMap<>();
        for (String layer : NodeCounters.LAYERS) {
            layers.put(layer, meter.counterBuilder("nupa." + layer)
                    .setDescription("the " + layer + " layer's counters of the node, one point per counter (nupa.counter)")
                    .buildObserver());
        }
        // Latency histograms: TCP round trips and handshakes, in seconds, 1 us to 10 s in 1-2-5 steps.
        List<Double> bounds = new java.util.ArrayList<>();
        for (double decade = 1e-6; decade < 10; decade *= 10) {
            bounds.addAll(List.of(decade, 2 * decade, 5 * decade));
        }
        node.tcpTelemetry().histograms(
                meter.histogramBuilder("nupa.tcp.rtt").setUnit("s").setExplicitBucketBoundariesAdvice(bounds)
                        .setDescription("round-trip times the node's TCP measured (RFC 6298: one timed segment per round trip)").build(),
                meter.histogramBuilder("nupa.tcp.handshake.duration").setUnit("s").setExplicitBucketBoundariesAdvice(bounds)
                        .setDescription("from a connection's first SYN to ESTABLISHED, either side").build());
        node.rdmaTelemetry().histogram(meter.histogramBuilder("nupa.rdma.work_request.duration").setUnit("s")
                .setExplicitBucketBoundariesAdvice(bounds)
                .setDescription("signaled send requests from post to completion, one in " + RdmaTelemetry.SAMPLE_EVERY).build());
        meter.batchCallback(() -> {
            List<NodeCounters.Value> values;
            try {
                values = node.link().call(() -> NodeCounters.snapshot(node, ""));
            } catch (RuntimeException e) {
                return; // the node is closing: nothing to report this time
            }
            for (NodeCounters.Value v : values) {
                layers.get(v.layer()).record(v.value(), Attributes.of(COUNTER, v.name()));
            }
        }, layers.get("link"), layers.get("ip"), layers.get("tcp"), layers.get("rdma"));
        return new NodeMetrics(provider);
    }

    /**
     * A reader that exports every {@code interval} as {@code spec} says: {@code logging} (java.util.logging, one
     * line per metric), {@code otlp} (OTLP over HTTP to http://localhost:4318/v1/metrics, a collector's
     * default), {@code otlp=URL} or {@code file=PATH} (OTLP/JSON lines appended to PATH). Throws
     * IllegalArgumentException naming the choices for anything else.
     */
    public static MetricReader exportingReader(String spec, Duration interval) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("the metrics interval must be positive, not " + interval);
        }
        MetricExporter exporter;
        if (spec.equals("logging")) {
            exporter = LoggingMetricExporter.create();
        } else if (spec.equals("otlp")) {
            exporter = OtlpHttpMetricExporter.getDefault();
        } else if (spec.startsWith("otlp=")) {
            String url = spec.substring("otlp=".length());
            if (!url.startsWith("http://") && !url.startsWith("https://")) {
                throw new IllegalArgumentException("OTLP metrics go to an http:// or https:// URL (e.g. "
                        + "http://collector:4318/v1/metrics), not " + url);
            }
            exporter = OtlpHttpMetricExporter.builder().setEndpoint(url).build();
        } else if (spec.startsWith("file=") && spec.length() > 5) {
            exporter = new FileMetricExporter(java.nio.file.Path.of(spec.substring(5)));
        } else {
            throw new IllegalArgumentException("metrics exporter \"" + spec + "\" is not one of logging, otlp, otlp=URL, file=PATH");
        }
        return PeriodicMetricReader.builder(exporter).setInterval(interval).build();
    }

    /** Exports what is left and stops. */
    @Override
    public void close() {
        provider.close();
    }
}
