package dev.nupa.perf;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import io.opentelemetry.exporter.internal.marshal.Marshaler;
import io.opentelemetry.sdk.common.CompletableResultCode;

/**
 * What the file exporters of spans and metrics share: the file, and one line per export in the OTLP file exporter's
 * format (OTLP/JSON, one export request a line), written by the OpenTelemetry SDK's own OTLP marshalers (those of
 * opentelemetry-exporter-otlp, as its logging-otlp exporter writes them), so that {@code otelcol}'s file receiver
 * and other OTLP/JSON tools read them back.
 */
public abstract class OtlpJsonFile {
    private final Path path;
    private final OutputStream out;

    protected OtlpJsonFile(Path path, String what) {
        this.path = path;
        try {
            this.out = new BufferedOutputStream(Files.newOutputStream(path, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write " + what + " to " + path + ": " + e.getMessage());
        }
    }

    /** Appends one export request as a line of OTLP/JSON and flushes it. */
    protected final synchronized CompletableResultCode writeLine(Marshaler request) {
        try {
            request.writeJsonTo(out);
            out.write('\n');
            out.flush();
            return CompletableResultCode.ofSuccess();
        } catch (IOException e) {
            return CompletableResultCode.ofFailure();
        }
    }

    public final synchronized CompletableResultCode flush() {
        try {
            out.flush();
            return CompletableResultCode.ofSuccess();
        } catch (IOException e) {
            return CompletableResultCode.ofFailure();
        }
    }

    public final synchronized CompletableResultCode shutdown() {
        try {
            out.close();
            return CompletableResultCode.ofSuccess();
        } catch (IOException e) {
            return CompletableResultCode.ofFailure();
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + path + "}";
    }
}
