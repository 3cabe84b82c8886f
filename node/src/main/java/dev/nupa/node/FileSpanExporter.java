package dev.nupa.node;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collection;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;

/**
 * Spans to a file in the OTLP file exporter's format: one line per export, each an OTLP/JSON
 * {@code ExportTraceServiceRequest} ({@code resourceSpans}, {@code scopeSpans}, {@code spans} with their events),
 * which {@code otelcol}'s file receiver and other OTLP/JSON tools read back.
 */
final class FileSpanExporter implements SpanExporter {
    private final Path path;
    private final Writer out;

    FileSpanExporter(Path path) {
        this.path = path;
        try {
            this.out = Files.newBufferedWriter(path, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write spans to " + path + ": " + e.getMessage());
        }
    }

    @Override
    public synchronized CompletableResultCode export(Collection<SpanData> spans) {
        if (spans.isEmpty()) {
            return CompletableResultCode.ofSuccess();
        }
        StringBuilder b = new StringBuilder("{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
        SpanData first = spans.iterator().next();
        attributes(b, first.getResource().getAttributes());
        b.append("]},\"scopeSpans\":[{\"scope\":{\"name\":");
        string(b, first.getInstrumentationScopeInfo().getName());
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
            string(b, s.getName());
            b.append(",\"kind\":").append(s.getKind().ordinal() + 1) // OTLP numbers kinds from 1 (INTERNAL)
                    .append(",\"startTimeUnixNano\":\"").append(s.getStartEpochNanos())
                    .append("\",\"endTimeUnixNano\":\"").append(s.getEndEpochNanos()).append("\",\"attributes\":[");
            attributes(b, s.getAttributes());
            b.append("],\"events\":[");
            boolean firstEvent = true;
            for (EventData e : s.getEvents()) {
                b.append(firstEvent ? "" : ",").append("{\"timeUnixNano\":\"").append(e.getEpochNanos()).append("\",\"name\":");
                string(b, e.getName());
                b.append('}');
                firstEvent = false;
            }
            b.append("]}");
        }
        b.append("]}]}]}\n");
        try {
            out.write(b.toString());
            out.flush();
            return CompletableResultCode.ofSuccess();
        } catch (IOException e) {
            return CompletableResultCode.ofFailure();
        }
    }

    private static void attributes(StringBuilder b, Attributes attributes) {
        boolean[] first = {true};
        attributes.forEach((k, v) -> {
            b.append(first[0] ? "" : ",").append("{\"key\":");
            string(b, k.getKey());
            b.append(",\"value\":{");
            switch (k.getType()) {
                case LONG -> b.append("\"intValue\":\"").append(v).append('"');
                case DOUBLE -> b.append("\"doubleValue\":").append(v);
                case BOOLEAN -> b.append("\"boolValue\":").append(v);
                default -> {
                    b.append("\"stringValue\":");
                    string(b, String.valueOf(v));
                }
            }
            b.append("}}");
            first[0] = false;
        });
    }

    private static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    @Override
    public CompletableResultCode flush() {
        try {
            out.flush();
            return CompletableResultCode.ofSuccess();
        } catch (IOException e) {
            return CompletableResultCode.ofFailure();
        }
    }

    @Override
    public synchronized CompletableResultCode shutdown() {
        try {
            out.close();
            return CompletableResultCode.ofSuccess();
        } catch (IOException e) {
            return CompletableResultCode.ofFailure();
        }
    }

    @Override
    public String toString() {
        return "FileSpanExporter{" + path + "}";
    }
}
