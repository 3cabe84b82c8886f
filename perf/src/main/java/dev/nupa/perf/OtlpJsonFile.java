package dev.nupa.perf;

import java.io.IOException;
import java.io.Writer;
import java.nio.file.Path;

import io.opentelemetry.sdk.common.CompletableResultCode;

/** What the file exporters of spans and metrics share: the file, one OTLP/JSON line per export, flush and close. */
public abstract class OtlpJsonFile {
    private final Path path;
    private final Writer out;

    protected OtlpJsonFile(Path path, String what) {
        this.path = path;
        this.out = OtlpJson.append(path, what);
    }

    /** Appends one export's line (with its newline) and flushes it. */
    protected final synchronized CompletableResultCode writeLine(String line) {
        try {
            out.write(line);
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
