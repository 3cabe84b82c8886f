package dev.nupa.perf;

import java.nio.file.Path;
import java.util.Collection;

import io.opentelemetry.exporter.internal.otlp.traces.TraceRequestMarshaler;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;

/** Spans to a file, one OTLP/JSON {@code ExportTraceServiceRequest} a line ({@link OtlpJsonFile}). */
final class FileSpanExporter extends OtlpJsonFile implements SpanExporter {
    FileSpanExporter(Path path) {
        super(path, "spans");
    }

    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
        return spans.isEmpty() ? CompletableResultCode.ofSuccess() : writeLine(TraceRequestMarshaler.create(spans));
    }
}
