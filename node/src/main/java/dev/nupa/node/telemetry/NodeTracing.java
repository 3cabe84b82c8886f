package dev.nupa.node.telemetry;

import dev.nupa.perf.TraceExport;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.samplers.Sampler;

/**
 * The OpenTelemetry of a traced node ({@code nupa node --trace-export}): spans of its HTTP and gRPC calls and verbs
 * work requests, sampled by trace id (a trace whose caller sampled it is kept whatever the rate), W3C trace context
 * carried in the calls' headers, exported in batches off the node's threads. Closing it exports what is left.
 */
public final class NodeTracing {
    private NodeTracing() {
    }

    /** Exports as {@code spec} says ({@link TraceExport}), keeping {@code sample} (0..1) of the traces this node starts. */
    public static OpenTelemetrySdk start(String spec, double sample) {
        if (!(sample >= 0 && sample <= 1)) {
            throw new IllegalArgumentException("--trace-sample " + sample + " is a share of the traces: 0 to 1");
        }
        Resource resource = Resource.getDefault().merge(Resource.create(Attributes.of(AttributeKey.stringKey("service.name"),
                "nupa-node")));
        SdkTracerProvider provider = SdkTracerProvider.builder().setResource(resource)
                .setSampler(Sampler.parentBased(Sampler.traceIdRatioBased(sample)))
                .addSpanProcessor(BatchSpanProcessor.builder(TraceExport.exporter(spec)).build()).build();
        return OpenTelemetrySdk.builder().setTracerProvider(provider)
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance())).build();
    }
}
