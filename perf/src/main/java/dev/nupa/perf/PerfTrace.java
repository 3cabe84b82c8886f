package dev.nupa.perf;

import dev.nupa.device.Trace;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;

/**
 * Sampling of a perf tool's measured operations ({@code --trace RATE}): every 1/RATE-th operation is traced through
 * the layers ({@link Trace}) into a {@link TraceLog}; after the run the traces become the report's breakdown and,
 * with {@code --trace-export}, OpenTelemetry spans. Off (rate 0 or tracing not compiled in), {@link #begin} is one
 * branch on a constant.
 */
final class PerfTrace {
    /** Traces kept per run; later ones are counted only. */
    static final int CAPACITY = 10_000;

    private final int every;
    private final TraceLog log;
    private final String export;
    private int n;

    private PerfTrace(double rate, String operation, String export) {
        this.every = rate > 0 ? (int) Math.max(1, Math.round(1 / rate)) : 0;
        this.log = every > 0 ? new TraceLog(operation, CAPACITY) : null;
        this.export = export;
    }

    /** Tracing at {@code rate} (0: off) of operations named {@code operation}, exported as {@code export} says (null: not). */
    static PerfTrace of(double rate, String operation, String export) {
        if (rate > 0 && !Trace.ENABLED) {
            throw new IllegalArgumentException("--trace needs tracing compiled in: start the JVM with -Dnupa.trace=true"
                    + " (nupa perf without --server or --client does)");
        }
        return new PerfTrace(rate, operation, export);
    }

    /** Whether this operation is traced; if so, tracing has begun and {@link #end} must follow it. */
    boolean begin() {
        if (!Trace.ENABLED || every == 0 || ++n < every) {
            return false;
        }
        n = 0;
        Trace.begin();
        return true;
    }

    void end() {
        log.record();
    }

    /** The traces, or null when off. */
    TraceLog log() {
        return log;
    }

    /** Gives the report (may be null) the traces, which it reads when it is written. */
    PerfTrace attach(PerfReport report) {
        if (report != null && log != null) {
            report.traces(log);
        }
        return this;
    }

    /** After the run: exports the traces as spans, if asked. */
    void export() {
        if (log != null && export != null) {
            SpanExporter exporter = TraceExport.exporter(export);
            Resource resource = Resource.getDefault().merge(Resource.create(Attributes.of(AttributeKey.stringKey("service.name"),
                    "nupa-perf")));
            try (SdkTracerProvider provider = SdkTracerProvider.builder().setResource(resource)
                    .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()) {
                log.emit(provider.get("dev.nupa.perf"), TraceLog.epochMinusNano());
                provider.forceFlush().join(10, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
    }
}
