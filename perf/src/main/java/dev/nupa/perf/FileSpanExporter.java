package dev.nupa.perf;

import java.nio.file.Path;
import java.util.Collection;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;

/**
 * Spans to a file in the OTLP file exporter's format: one line per export, each an OTLP/JSON
 * {@code ExportTraceServiceRequest} ({@code resourceSpans}, {@code scopeSpans}, {@code spans} with their events),
 * which {@code otelcol}'s file receiver and other OTLP/JSON tools read back.
 */
final class FileSpanExporter extends OtlpJsonFile implements SpanExporter {
    FileSpanExporter(Path path) {
        super(path, "spans");
    }

    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
        if (spans.isEmpty()) {
            return CompletableResultCode.ofSuccess();
        }
        StringBuilder b = new StringBuilder("{\"resourceSpans\":[{");
        SpanData first = spans.iterator().next();
        OtlpJson.resource(b, first.getResource());
        b.append(",\"scopeSpans\":[{\"scope\":{\"name\":");
        OtlpJson.string(b, first.getInstrumentationScopeInfo().getName());
        b.append("},\"spans\":[");
        boolean firstSpan = true;
        for (SpanData s : spans) {
            b.append(firstSpan ? "" : ",");
            firstSpan = false;
            b.append("{\"traceId\":\"").append(s.getTraceId()).append("\",\"spanId\":\"").append(s.getSpanId()).append('"');
            if (s.getParentSpanContext().isValid()) {
                b.append(",\"parentSpanId\":\"").append(s.getParentSpanId()).append('"');
            }
            b.append(",\"name\":");
            OtlpJson.string(b, s.getName());
            b.append(",\"kind\":").append(s.getKind().ordinal() + 1) // OTLP numbers kinds from 1 (INTERNAL)
                    .append(",\"startTimeUnixNano\":\"").append(s.getStartEpochNanos())
                    .append("\",\"endTimeUnixNano\":\"").append(s.getEndEpochNanos()).append("\",\"attributes\":[");
            OtlpJson.attributes(b, s.getAttributes());
            b.append("],\"events\":[");
            boolean firstEvent = true;
            for (EventData e : s.getEvents()) {
                b.append(firstEvent ? "" : ",").append("{\"timeUnixNano\":\"").append(e.getEpochNanos()).append("\",\"name\":");
                OtlpJson.string(b, e.getName());
                b.append('}');
                firstEvent = false;
            }
            b.append("]}");
        }
        b.append("]}]}]}\n");
        return writeLine(b.toString());
    }
}
