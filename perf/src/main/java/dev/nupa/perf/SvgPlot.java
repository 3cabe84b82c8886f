package dev.nupa.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** A line plot drawn as inline SVG: axes with ticks, one polyline per series, a legend. No script, no fonts to fetch. */
final class SvgPlot {
    /** One series: points ({@code x[i]}, {@code y[i]}). */
    record Line(String name, String color, double[] x, double[] y, boolean dashed) {
    }

    static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
    private static final int W = 760;
    private static final int H = 330;
    private static final int LEFT = 72;
    private static final int RIGHT = 30;
    private static final int TOP = 34;
    private static final int BOTTOM = 48;

    private final String id;
    private final String title;
    private final String xLabel;
    private final String yLabel;
    private final List<Line> lines = new ArrayList<>();
    private double[] xTicks;
    private String[] xTickLabels;
    private boolean logY;

    SvgPlot(String id, String title, String xLabel, String yLabel) {
        this.id = id;
        this.title = title;
        this.xLabel = xLabel;
        this.yLabel = yLabel;
    }

    SvgPlot line(String name, String color, double[] x, double[] y, boolean dashed) {
        lines.add(new Line(name, color, x, y, dashed));
        return this;
    }

    /** Fixed x ticks with their labels (e.g. percentiles on a log scale). */
    SvgPlot xTicks(double[] at, String[] labels) {
        this.xTicks = at;
        this.xTickLabels = labels;
        return this;
    }

    /** A logarithmic y axis, a tick per power of ten (for values that span several, as a latency tail does). */
    SvgPlot logY() {
        this.logY = true;
        return this;
    }

    String svg() {
        double x0 = Double.MAX_VALUE;
        double x1 = -Double.MAX_VALUE;
        double y0 = 0;
        double y1 = 0;
        double yMin = Double.MAX_VALUE;
        for (Line l : lines) {
            for (int i = 0; i < l.x().length; i++) {
                x0 = Math.min(x0, l.x()[i]);
                x1 = Math.max(x1, l.x()[i]);
                y1 = Math.max(y1, l.y()[i]);
                if (l.y()[i] > 0) {
                    yMin = Math.min(yMin, l.y()[i]);
                }
            }
        }
        if (xTicks != null) {
            x0 = Math.min(x0, xTicks[0]);
            x1 = Math.max(x1, xTicks[xTicks.length - 1]);
        }
        if (x0 == Double.MAX_VALUE) {
            x0 = 0;
            x1 = 1;
        }
        if (x1 <= x0) {
            x1 = x0 + 1;
        }
        double yStep;
        if (logY) { // plotted as log10 of the value
            y0 = yMin == Double.MAX_VALUE ? 0 : Math.floor(Math.log10(yMin));
            y1 = Math.max(y0 + 1, Math.ceil(Math.log10(Math.max(y1, 1e-300))));
            yStep = 1;
        } else {
            yStep = niceStep(y1 > 0 ? y1 / 5 : 1);
            y1 = Math.max(yStep, Math.ceil(y1 * 1.05 / yStep) * yStep);
        }
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "<svg class=\"plot\" id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">%n", id, W, H, W, H, esc(title)));
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"20\" class=\"title\">%s</text>%n", LEFT, esc(title)));
        int pw = W - LEFT - RIGHT;
        int ph = H - TOP - BOTTOM;
        b.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>%n", LEFT, TOP, pw, ph));
        for (double y = y0; y <= y1 + yStep / 2; y += yStep) {
            double py = TOP + ph - (y - y0) / (y1 - y0) * ph;
            b.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>%n", LEFT, LEFT + pw, py, py, LEFT - 6, py + 4,
                    number(logY ? Math.pow(10, y) : y)));
        }
        double[] ticks = xTicks;
        String[] labels = xTickLabels;
        if (ticks == null) {
            double step = niceStep((x1 - x0) / 6);
            int n = (int) Math.floor((x1 - x0) / step) + 1;
            ticks = new double[n];
            labels = new String[n];
            for (int i = 0; i < n; i++) {
                ticks[i] = Math.ceil(x0 / step) * step + i * step;
                labels[i] = number(ticks[i]);
            }
        }
        for (int i = 0; i < ticks.length; i++) {
            if (ticks[i] < x0 || ticks[i] > x1) {
                continue;
            }
            double px = LEFT + (ticks[i] - x0) / (x1 - x0) * pw;
            b.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>"
                    + "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">%s</text>%n", px, px, TOP, TOP + ph, px, TOP + ph + 16,
                    esc(labels[i])));
        }
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" class=\"label\" text-anchor=\"middle\">%s</text>%n",
                LEFT + pw / 2, H - 8, esc(xLabel)));
        b.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" class=\"label\" text-anchor=\"middle\" transform=\"rotate(-90 14 %d)\">%s</text>%n",
                TOP + ph / 2, TOP + ph / 2, esc(yLabel)));
        int legendY = TOP + 14;
        for (Line l : lines) {
            StringBuilder pts = new StringBuilder();
            for (int i = 0; i < l.x().length; i++) {
                double y = logY ? Math.log10(Math.max(l.y()[i], Math.pow(10, y0))) : Math.min(l.y()[i], y1);
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", LEFT + (l.x()[i] - x0) / (x1 - x0) * pw,
                        TOP + ph - (y - y0) / (y1 - y0) * ph));
            }
            b.append(String.format(Locale.ROOT, "<polyline class=\"series\" data-series=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s"
                    + " points=\"%s\"/>%n", esc(l.name()), l.color(), l.dashed() ? " stroke-dasharray=\"5 3\"" : "", pts.toString().strip()));
            b.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>"
                    + "<text x=\"%d\" y=\"%d\" class=\"legend\">%s</text>%n", W - RIGHT - 190, W - RIGHT - 168, legendY - 4, legendY - 4,
                    l.color(), l.dashed() ? " stroke-dasharray=\"5 3\"" : "", W - RIGHT - 162, legendY, esc(l.name())));
            legendY += 16;
        }
        return b.append("</svg>\n").toString();
    }

    /** 1, 2 or 5 times a power of ten, at least {@code raw}. */
    static double niceStep(double raw) {
        double p = Math.pow(10, Math.floor(Math.log10(raw)));
        for (double m : new double[] {1, 2, 5, 10}) {
            if (m * p >= raw) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private static String number(double v) {
        if (Math.abs(v - Math.rint(v)) < 1e-9 && Math.abs(v) < 1e15) {
            return String.format(Locale.ROOT, "%,d", Math.round(v));
        }
        return String.format(Locale.ROOT, Math.abs(v) >= 10 ? "%.1f" : Math.abs(v) >= 0.01 ? "%.2f" : "%.1g", v);
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
