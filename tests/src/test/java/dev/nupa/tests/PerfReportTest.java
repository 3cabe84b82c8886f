package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code nupa perf ... --report DIR} as a user runs it: the files it writes read back (the HdrHistogram interval log
 * adds up to the iterations), and the HTML page opened in headless Chromium (Debian's {@code chromium}): its plots
 * are in the rendered page, the screenshot shows them, and the browser logs no console message. A run stopped
 * early still leaves a report, marked partial.
 */
@Tag("linux")
class PerfReportTest {
    private final Path dir = tempDir();

    private static Path tempDir() {
        try {
            return Files.createTempDirectory("nupa-report-");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @AfterEach
    void remove() throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static List<String> nupa(String... args) {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), "dev.nupa.node.cli.Main"));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private static String chromium() {
        for (String c : new String[] {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"}) {
            if (Files.isExecutable(Path.of(c))) {
                return c;
            }
        }
        return null;
    }

    /** Runs headless Chromium on the page; returns its standard output and error. */
    private static String[] browse(String chromium, Path page, String... what) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                "--v=0", "--user-data-dir=" + page.getParent().resolve("chromium-profile")));
        cmd.addAll(List.of(what));
        cmd.add(page.toUri().toString());
        Path out = page.resolveSibling("chromium.out");
        Path err = page.resolveSibling("chromium.err");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "chromium finished");
        return new String[] {Files.readString(out), Files.readString(err)};
    }

    @Test
    void aTracedLatencyRunWritesAReportThatChromiumRenders() throws Exception {
        Process run = new ProcessBuilder(nupa("perf", "fabric-lat", "-n", "20000", "--report", dir.toString(), "--trace", "0.01",
                "--trace-export", "file=" + dir.resolve("spans.jsonl"), "--progress")).redirectErrorStream(false).start();
        String out = new String(run.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(run.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(run.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, run.exitValue(), out + err);
        assertTrue(err.contains("fabric-lat [") && err.contains("100%") && err.contains("ETA"), "a progress line: " + err);

        for (String f : List.of("ours.hgrm", "floor.hgrm", "ours.hlog", "timeline.csv", "breakdown.csv", "traces.json", "summary.json",
                "report.html", "spans.jsonl")) {
            assertTrue(Files.size(dir.resolve(f)) > 0, f + " written");
        }
        // The interval log holds every measured round trip, a histogram per turn.
        long total = 0;
        int intervals = 0;
        HistogramLogReader log = new HistogramLogReader(dir.resolve("ours.hlog").toFile());
        for (Histogram h; (h = (Histogram) log.nextIntervalHistogram()) != null; intervals++) {
            total += h.getTotalCount();
        }
        assertEquals(20_000, total, "round trips in ours.hlog");
        assertEquals(4, intervals, "one histogram per turn of 5,000");
        String summary = Files.readString(dir.resolve("summary.json"));
        assertTrue(summary.contains("\"partial\":false") && summary.contains("\"name\":\"floor\""), summary);
        // 1% of 20,000 traced; each trace went down to the ring and back up through the device.
        String traces = Files.readString(dir.resolve("traces.json"));
        Matcher m = Pattern.compile("\\{\"points\":\\[").matcher(traces);
        int traced = 0;
        while (m.find()) {
            traced++;
        }
        assertEquals(200, traced, "traces kept");
        assertTrue(traces.contains("\"point\":\"device_out\"") && traces.contains("\"point\":\"device_in\""), traces.substring(0, 400));
        String breakdown = Files.readString(dir.resolve("breakdown.csv"));
        assertTrue(breakdown.startsWith("layer,median_ns,mean_ns,share_of_mean\n") && breakdown.contains("\npeer and fabric,"), breakdown);
        assertEquals(200, Files.readString(dir.resolve("spans.jsonl")).split("\"spanId\"", -1).length - 1, "spans exported");

        String chromium = chromium();
        Assumptions.assumeTrue(chromium != null, "SKIPPED the browser half: no chromium on this machine (apt-get install chromium)");
        Path page = dir.resolve("report.html");
        String[] dom = browse(chromium, page, "--dump-dom");
        assertEquals(4, count(dom[0], "<svg class=\"plot\""), "the three plots and the breakdown bar in the rendered page");
        for (String id : List.of("percentiles", "latency-over-time", "throughput")) {
            Matcher plot = Pattern.compile("<svg class=\"plot\" id=\"" + id + "\".*?</svg>", Pattern.DOTALL).matcher(dom[0]);
            assertTrue(plot.find(), id);
            Matcher line = Pattern.compile("<polyline [^>]*points=\"([^\"]*)\"").matcher(plot.group());
            assertTrue(line.find(), id + " has lines");
            assertTrue(line.group(1).split(" ").length >= 3, id + " has points: " + line.group(1));
        }
        assertTrue(dom[0].contains("id=\"layers\"") && dom[0].contains("peer and fabric"), "the breakdown table");
        assertFalse(dom[1].contains(":CONSOLE"), "no console messages: " + dom[1]);

        Path png = dir.resolve("report.png");
        String[] shot = browse(chromium, page, "--window-size=900,1400", "--screenshot=" + png);
        assertFalse(shot[1].contains(":CONSOLE"), "no console messages: " + shot[1]);
        BufferedImage image = ImageIO.read(new File(png.toString()));
        assertEquals(900, image.getWidth());
        Set<Integer> colors = new HashSet<>();
        int seriesBlue = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int rgb = image.getRGB(x, y) & 0xFFFFFF;
                colors.add(rgb);
                if (rgb == 0x1f77b4) {
                    seriesBlue++;
                }
            }
        }
        assertTrue(colors.size() > 20, "a page with text and plots, not a blank: " + colors.size() + " colours");
        assertTrue(seriesBlue > 200, "the first series' lines drawn in its colour: " + seriesBlue + " pixels");
    }

    @Test
    void aRateToolsReportHasItsRatesOverTime() throws Exception {
        Process run = new ProcessBuilder(nupa("perf", "fabric-bw", "-n", "20000", "--report", dir.toString()))
                .redirectErrorStream(true).start();
        String out = new String(run.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(run.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, run.exitValue(), out);
        String summary = Files.readString(dir.resolve("summary.json"));
        Matcher rounds = Pattern.compile("\\{\"name\":\"ours\",\"rounds\":(\\d+),\"median\":[0-9.e+]+").matcher(summary);
        assertTrue(summary.contains("\"unit\":\"Gbit/s\"") && rounds.find(), summary);
        assertTrue(summary.contains("\"name\":\"copy-floor\"") && summary.contains("\"name\":\"cross-core-floor\""), summary);
        List<String> timeline = Files.readAllLines(dir.resolve("timeline.csv"));
        assertEquals(1 + 3 * Integer.parseInt(rounds.group(1)), timeline.size(), "a line per series and round: " + timeline);
        String html = Files.readString(dir.resolve("report.html"));
        Matcher plot = Pattern.compile("<svg class=\"plot\" id=\"throughput\".*?</svg>", Pattern.DOTALL).matcher(html);
        assertTrue(plot.find(), html);
        assertEquals(3, count(plot.group(), "<polyline "), "a line per series");
        Process refused = new ProcessBuilder(nupa("perf", "fabric-bw", "--trace", "0.01")).redirectErrorStream(true).start();
        String why = new String(refused.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(refused.waitFor(60, TimeUnit.SECONDS));
        assertEquals(2, refused.exitValue(), why);
        assertTrue(why.contains("--trace goes with the latency tools"), why);
    }

    @Test
    void aRunStoppedEarlyLeavesAPartialReport() throws Exception {
        Process run = new ProcessBuilder(nupa("perf", "fabric-lat", "-n", "500000000", "--report", dir.toString()))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(dir.resolve("err.txt").toFile()).start();
        Path hlog = dir.resolve("ours.hlog");
        long deadline = System.nanoTime() + 60_000_000_000L;
        while ((!Files.exists(hlog) || Files.readString(hlog).split("\n").length < 8) && System.nanoTime() < deadline) {
            Thread.sleep(100); // a few turns measured (the log's header is 4 lines, then a line per turn)
        }
        run.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the shutdown hooks run
        assertTrue(run.waitFor(60, TimeUnit.SECONDS));
        String summary = Files.readString(dir.resolve("summary.json"));
        assertTrue(summary.contains("\"partial\":true"), summary);
        Matcher turns = Pattern.compile("\"turns\":(\\d+)").matcher(summary);
        assertTrue(turns.find() && Integer.parseInt(turns.group(1)) >= 4, summary);
        assertTrue(Files.readString(dir.resolve("report.html")).contains("a partial report"));
        assertTrue(Files.readString(dir.resolve("err.txt")).contains("the report of what was measured so far is in " + dir),
                Files.readString(dir.resolve("err.txt")));
    }

    private static int count(String s, String what) {
        return s.split(Pattern.quote(what), -1).length - 1;
    }
}
