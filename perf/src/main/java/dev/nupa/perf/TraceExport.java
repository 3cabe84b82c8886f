package dev.nupa.perf;

import java.nio.file.Path;

import io.opentelemetry.exporter.logging.LoggingSpanExporter;
import io.opentelemetry.exporter.otlp.http.trace.OtlpHttpSpanExporter;
import io.opentelemetry.sdk.trace.export.SpanExporter;

/** Span exporters by name, as {@code --trace-export} takes them. */
public final class TraceExport {
    static final String CHOICES = "logging, otlp, otlp=URL, file=PATH";

    private TraceExport() {
    }

    /**
     * {@code logging} (java.util.logging, a line per span), {@code otlp} (OTLP over HTTP to a collector at
     * http://localhost:4318/v1/traces), {@code otlp=URL}, or {@code file=PATH} (OTLP/JSON lines appended to PATH).
     */
    public static SpanExporter exporter(String spec) {
        if (!valid(spec)) {
            throw new IllegalArgumentException("trace exporter \"" + spec + "\" is not one of " + CHOICES);
        }
        if (spec.equals("logging")) {
            return LoggingSpanExporter.create();
        } else if (spec.equals("otlp")) {
            return OtlpHttpSpanExporter.builder().build();
        } else if (spec.startsWith("otlp=")) {
            return OtlpHttpSpanExporter.builder().setEndpoint(spec.substring(5)).build();
        }
        return new FileSpanExporter(Path.of(spec.substring(5)));
    }

    /** Checks {@code spec} without opening anything (for the command line, before a run starts). */
    public static void check(String spec) {
        if (!valid(spec)) {
            throw new IllegalArgumentException("--trace-export \"" + spec + "\" is not one of " + CHOICES);
        }
    }

    private static boolean valid(String spec) {
        return spec.equals("logging") || spec.equals("otlp") || (spec.startsWith("otlp=") && spec.length() > 5)
                || (spec.startsWith("file=") && spec.length() > 5);
    }
}
