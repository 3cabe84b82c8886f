package dev.nupa.perf;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.sdk.resources.Resource;

/**
 * The pieces of OTLP/JSON (the OTLP file exporter's format) that the file exporters of spans and metrics share:
 * strings, attributes, a resource, and the file they append lines to.
 */
public final class OtlpJson {
    private OtlpJson() {
    }

    /** The file, opened to append; a clear error if it cannot be. */
    static Writer append(Path path, String what) {
        try {
            return Files.newBufferedWriter(path, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write " + what + " to " + path + ": " + e.getMessage());
        }
    }

    /** {@code "resource":{"attributes":[...]}}. */
    public static void resource(StringBuilder b, Resource r) {
        b.append("\"resource\":{\"attributes\":[");
        attributes(b, r.getAttributes());
        b.append("]}");
    }

    /** The attributes as OTLP key-value objects, comma-separated. */
    public static void attributes(StringBuilder b, Attributes attributes) {
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

    /** A JSON string. */
    public static void string(StringBuilder b, String s) {
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
}
