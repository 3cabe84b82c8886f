package dev.nupa.perf;

import java.util.Locale;

/**
 * A measured number as the tools print it. JSON has no NaN or Infinity, and a measurement can give one (a ratio
 * whose peer measured nothing in a short turn, a rate over no time): in a JSON line it is null, in a report "n/a".
 * Numbers are written with a dot whatever the default locale.
 */
public final class JsonNumber {
    private static final String[] FORMATS = {"%.0f", "%.1f", "%.2f", "%.3f", "%.4f", "%.5f", "%.6f"};

    private JsonNumber() {
    }

    /** {@code v} with {@code decimals} decimals, or null where it is not finite. */
    public static String of(double v, int decimals) {
        return Double.isFinite(v) ? format(v, decimals) : "null";
    }

    /** {@code v} with {@code decimals} decimals for a report line, or "n/a" where it is not finite. */
    public static String orNa(double v, int decimals) {
        return Double.isFinite(v) ? format(v, decimals) : "n/a";
    }

    /** {@code v} for a Vert.x JsonObject, which would write NaN as the string "NaN": null where it is not finite. */
    public static Double orNull(double v) {
        return Double.isFinite(v) ? v : null;
    }

    private static String format(double v, int decimals) {
        return String.format(Locale.ROOT, decimals < FORMATS.length ? FORMATS[decimals] : "%." + decimals + "f", v);
    }
}
