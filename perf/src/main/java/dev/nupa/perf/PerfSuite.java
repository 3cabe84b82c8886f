package dev.nupa.perf;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf suite`: every perf tool with a figure in docs/figures.md, run {@code --runs} times in rounds (each
 * round runs each tool once, so the tools alternate and a slow spell of the host falls on all of them), each
 * as a child process with {@code --json}. Writes the raw results and each figure's median and range to
 * {@code suite.json} and the table rows of docs/figures.md to {@code suite.md}, with where the processes ran.
 */
@Command(name = "suite", mixinStandardHelpOptions = true,
        description = {"Runs every perf tool --runs times, alternating them, and writes suite.json and suite.md",
                "(one table row per figure: command, goal, median and range of the ratio over the runs, date)."})
final class PerfSuite implements Callable<Integer> {

    /** How a figure's goal reads its ratio. */
    enum Goal {
        AT_MOST, AT_LEAST, NONE
    }

    /**
     * One figure: a row of the table. {@code field} is the JSON field holding the ratio; several figures may
     * come from one tool run ({@code tool} and {@code args} equal).
     */
    record Figure(String what, String tool, List<String> args, String field, Goal goal, double bound, String goalText,
                  List<String> quickArgs) {
        /** The command a run of this figure is: its own arguments, or with --quick the short ones. */
        String command(boolean quick) {
            return ("./nupa perf " + tool + " " + String.join(" ", quick ? quickArgs : args)).trim();
        }

        String runKey() {
            return tool + " " + String.join(" ", args);
        }

        /** Another figure of the same runs. */
        Figure same(String what, String field, Goal goal, double bound, String goalText) {
            return new Figure(what, tool, args, field, goal, bound, goalText, quickArgs);
        }

        /** The tail of a latency figure: our series' p99 over its p50, from the same runs. */
        Figure tail() {
            return same("the same, tail: p99 over our p50", "tail_ratio", Goal.AT_MOST, 2.0, "p99 <= 2x p50");
        }

        /** Of a vertx-scaling figure: the rate against the best peer at the loop count where it is least. */
        Figure leastRate(String unit) {
            return same("the same, " + unit + " at the loop count where it is least against the best Linux peer", "least_best_ratio",
                    Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer");
        }

        /** Of a vertx-scaling figure: the p50 against the lowest peer's at the loop count where it is highest. */
        Figure highestP50() {
            return same("the same, p50 latency at the loop count where it is highest against the best Linux peer",
                    "most_best_latency_ratio", Goal.AT_MOST, 0.4, "<= 0.4x the best Linux peer");
        }
    }

    private static final Figure FABRIC_LAT = new Figure("ring one-way latency, 64 B frames, busy-poll", "fabric-lat",
            List.of("-n", "200000", "--warmup", "100000"), "ratio", Goal.AT_MOST, 1.5, "p50 <= 1.5x floor",
            List.of("-n", "2000", "--warmup", "1000"));
    private static final Figure UDP_LAT = new Figure("UDP echo round trip, 64 B, two node processes", "udp-lat",
            List.of("-n", "200000", "--warmup", "100000"), "ratio", Goal.AT_MOST, 0.1, "p50 <= 0.1x Linux",
            List.of("-n", "2000", "--warmup", "1000"));
    private static final Figure TCP_LAT = new Figure("TCP 1-byte request/response", "tcp-lat", List.of(), "ratio", Goal.AT_MOST,
            0.2, "p50 <= 0.2x Linux", List.of("-n", "2000"));

    private static Figure scaling(String what, List<String> args, List<String> quickArgs) {
        return new Figure(what + ", scaling efficiency from 1 to 8 event loops a side, over the best Linux peer's", "vertx-scaling",
                args, "efficiency_ratio", Goal.AT_LEAST, 1.0, ">= 1x the best Linux peer's", quickArgs);
    }

    private static final Figure HTTP_SCALING_64 = scaling("Vert.x HTTP/1.1, 64 connections", List.of("-c", "64", "-t", "2", "--turns", "3"),
            List.of("-c", "8", "--loops", "1,2", "-t", "0.2", "--turns", "1"));
    private static final Figure HTTP_SCALING_256 = scaling("Vert.x HTTP/1.1, 256 connections", List.of("-c", "256", "-t", "2", "--turns", "3"),
            List.of("-c", "16", "--loops", "1,2", "-t", "0.2", "--turns", "1"));
    private static final Figure ECHO_SCALING = scaling("Vert.x NetSocket bulk echo, 8 connections",
            List.of("--workload", "echo", "-c", "8", "-t", "2", "--turns", "3"),
            List.of("--workload", "echo", "-c", "2", "--loops", "1,2", "-t", "0.2", "--turns", "1"));

    static final List<Figure> FIGURES = List.of(
            FABRIC_LAT,
            FABRIC_LAT.tail(),
            new Figure("ring throughput, 64 KiB frames, against the cross-core floor", "fabric-bw", List.of(), "cross_ratio",
                    Goal.AT_LEAST, 0.8, ">= 0.8x cross-core floor", List.of("-n", "2000")),
            new Figure("the same, against the in-cache copy", "fabric-bw", List.of(), "ratio", Goal.NONE, 0, "-",
                    List.of("-n", "2000")),
            UDP_LAT,
            UDP_LAT.tail(),
            TCP_LAT,
            TCP_LAT.tail(),
            new Figure("TCP bulk, one connection, no TCP checksums", "tcp-bw", List.of("--checksums", "off"), "ratio",
                    Goal.AT_LEAST, 1.0, ">= 1.0x Linux", List.of("-t", "0.2")),
            new Figure("TCP bulk, every checksum", "tcp-bw", List.of(), "ratio", Goal.AT_LEAST, 1.0, ">= 1.0x Linux",
                    List.of("-t", "0.2")),
            new Figure("TCP 1-byte request/response over one node's loopback, one process", "tcp-lat", List.of("--loopback"),
                    "ratio", Goal.AT_MOST, 0.2, "p50 <= 0.2x Linux", List.of("--loopback", "-n", "2000")),
            new Figure("TCP bulk, one connection over one node's loopback, one process", "tcp-bw", List.of("--loopback"), "ratio",
                    Goal.AT_LEAST, 2.0, ">= 2x Linux", List.of("--loopback", "-t", "0.2")),
            new Figure("TCP connect, 1-byte exchange, close", "tcp-crr", List.of(), "ratio", Goal.AT_LEAST, 1.0,
                    ">= 1.0x Linux", List.of("-n", "200")),
            new Figure("Vert.x HTTP/1.1 keep-alive, 1 connection, requests/s", "vertx-http", List.of("-t", "2", "--turns", "5"),
                    "best_ratio", Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer", List.of("-t", "0.2", "--turns", "1")),
            new Figure("the same, p50 latency", "vertx-http", List.of("-t", "2", "--turns", "5"), "best_latency_ratio", Goal.AT_MOST,
                    0.3, "<= 0.3x the best Linux peer", List.of("-t", "0.2", "--turns", "1")),
            new Figure("Vert.x HTTP/1.1 keep-alive, 64 connections, requests/s", "vertx-http",
                    List.of("-c", "64", "-t", "2", "--turns", "5"), "best_ratio", Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer",
                    List.of("-c", "64", "-t", "0.2", "--turns", "1")),
            new Figure("the same, p50 latency", "vertx-http", List.of("-c", "64", "-t", "2", "--turns", "5"), "best_latency_ratio",
                    Goal.AT_MOST, 0.3, "<= 0.3x the best Linux peer", List.of("-c", "64", "-t", "0.2", "--turns", "1")),
            new Figure("Vert.x HTTP/1.1 keep-alive, 64 connections over 2 event loops a side, requests/s", "vertx-http",
                    List.of("-c", "64", "--loops", "2", "-t", "2", "--turns", "5"), "best_ratio", Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer",
                    List.of("-c", "64", "--loops", "2", "-t", "0.2", "--turns", "1")),
            new Figure("the same, p50 latency", "vertx-http", List.of("-c", "64", "--loops", "2", "-t", "2", "--turns", "5"),
                    "best_latency_ratio", Goal.AT_MOST, 0.3, "<= 0.3x the best Linux peer",
                    List.of("-c", "64", "--loops", "2", "-t", "0.2", "--turns", "1")),
            HTTP_SCALING_64,
            HTTP_SCALING_64.same("the same, requests/s at 8 event loops a side", "best_ratio_at_most_loops", Goal.AT_LEAST, 2.0,
                    ">= 2x the best Linux peer"),
            HTTP_SCALING_64.leastRate("requests/s"),
            HTTP_SCALING_64.highestP50(),
            HTTP_SCALING_256,
            HTTP_SCALING_256.leastRate("requests/s"),
            HTTP_SCALING_256.highestP50(),
            new Figure("Vert.x NetSocket bulk echo (pipeTo), 64 KiB buffers", "vertx-echo", List.of("-t", "2", "--turns", "5"),
                    "best_ratio", Goal.AT_LEAST, 1.5, ">= 1.5x the best Linux peer", List.of("-t", "0.2", "--turns", "1")),
            ECHO_SCALING,
            ECHO_SCALING.leastRate("Gbit/s"),
            new Figure("Vert.x DatagramSocket echo, 64 B, 16 in flight", "vertx-udp", List.of("-t", "2", "--turns", "5"), "best_ratio",
                    Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer", List.of("-t", "0.2", "--turns", "1")),
            new Figure("Vert.x gRPC unary call, p50", "vertx-grpc", List.of("-t", "2", "--turns", "5"), "best_latency_ratio",
                    Goal.AT_MOST, 0.5, "<= 0.5x the best Linux peer", List.of("-t", "0.2", "--turns", "1")),
            new Figure("Vert.x clustered event bus, request-reply, 1 outstanding, requests/s", "vertx-eventbus",
                    List.of("-t", "2", "--turns", "3"), "best_ratio", Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer",
                    List.of("-t", "0.2", "--turns", "1", "--warmup-time", "0.2")),
            new Figure("the same, p50 latency", "vertx-eventbus", List.of("-t", "2", "--turns", "3"), "best_latency_ratio",
                    Goal.AT_MOST, 0.3, "<= 0.3x the best Linux peer", List.of("-t", "0.2", "--turns", "1", "--warmup-time", "0.2")),
            new Figure("Vert.x clustered event bus, publish to 4 subscribers, messages/s", "vertx-eventbus",
                    List.of("-t", "2", "--turns", "3"), "best_publish_ratio", Goal.AT_LEAST, 2.0, ">= 2x the best Linux peer",
                    List.of("-t", "0.2", "--turns", "1", "--warmup-time", "0.2")),
            new Figure("UDP ping-pong at DSCP 46 beside a bulk stream at DSCP 0 into the same receiver, separate rings, p50 over idle",
                    "qos", List.of("-n", "20000", "--warmup", "5000"), "separate_ratio", Goal.AT_MOST, 2.0, "<= 2x idle",
                    List.of("-n", "2000", "--warmup", "500")),
            new Figure("the same on one shared ring", "qos", List.of("-n", "20000", "--warmup", "5000"), "shared_ratio", Goal.NONE, 0,
                    "-", List.of("-n", "2000", "--warmup", "500")),
            new Figure("RC SEND ping-pong at SL 7 beside RDMA WRITEs at SL 0 into the same receiver, separate rings, p50 over idle",
                    "qos", List.of("--rdma", "-n", "20000", "--warmup", "5000"), "separate_ratio", Goal.AT_MOST, 2.0, "<= 2x idle",
                    List.of("--rdma", "-n", "2000", "--warmup", "500")),
            new Figure("the same on one shared ring", "qos", List.of("--rdma", "-n", "20000", "--warmup", "5000"), "shared_ratio",
                    Goal.NONE, 0, "-", List.of("--rdma", "-n", "2000", "--warmup", "500")),
            new Figure("RDMA WRITE 8 B ping-pong, direct placement, half round trip", "write-lat",
                    List.of("-s", "8", "--mode", "direct"), "ratio", Goal.AT_MOST, 2.0, "p50 <= 2x floor",
                    List.of("-s", "8", "--mode", "direct", "-n", "2000")),
            new Figure("RDMA SEND 8 B ping-pong, direct", "send-lat", List.of("-s", "8", "-n", "200000"), "ratio", Goal.AT_MOST,
                    4.0, "p50 <= 4x floor", List.of("-s", "8", "-n", "2000")),
            new Figure("RDMA WRITE 64 KiB stream, direct placement", "write-bw",
                    List.of("-s", "65536", "-n", "100000", "--mode", "direct"), "ratio", Goal.AT_LEAST, 0.8, ">= 0.8x copy",
                    List.of("-s", "65536", "-n", "200", "--mode", "direct")));

    @Option(names = "--runs", paramLabel = "N", defaultValue = "5", description = "Rounds of every tool (default: ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--out", paramLabel = "DIR", defaultValue = "perf-suite",
            description = "Where suite.json and suite.md go (default: ${DEFAULT-VALUE}).")
    Path out;

    @Option(names = "--only", paramLabel = "TOOL", split = ",", description = "Only these tools (for example tcp-crr,udp-lat).")
    List<String> only;

    @Option(names = "--quick", description = "Short runs of each tool, to try the suite itself; the figures mean little.")
    boolean quick;

    @Option(names = "--figures", paramLabel = "FILE",
            description = "Also replace this machine kind's table in FILE (docs/figures.md), between its marker comments.")
    Path figuresFile;

    @Option(names = "--machine-kind", paramLabel = "NAME",
            description = "The machine kind whose table --figures writes (default: N-CPU VENDOR, e.g. 2-CPU AMD or 16-CPU Intel).")
    String machineKind;

    @Override
    public Integer call() throws IOException, InterruptedException {
        if (runs < 1) {
            throw new IllegalArgumentException("--runs must be at least 1, not " + runs);
        }
        if (figuresFile != null && quick) {
            throw new IllegalArgumentException("--quick runs are no figures to write; leave out --quick or --figures");
        }
        if (figuresFile != null && !Files.isRegularFile(figuresFile)) {
            throw new IllegalArgumentException("--figures " + figuresFile + " is no file; give docs/figures.md");
        }
        Set<String> known = FIGURES.stream().map(Figure::tool).collect(Collectors.toSet());
        if (only != null) {
            for (String t : only) {
                if (!known.contains(t)) {
                    throw new IllegalArgumentException("--only names " + t + ", which has no figure; known: "
                            + known.stream().sorted().collect(Collectors.joining(", ")));
                }
            }
        }
        List<Figure> figures = FIGURES.stream().filter(f -> only == null || only.contains(f.tool())).toList();
        // One child run per distinct command: figures of the same run share it.
        Map<String, Figure> commands = new LinkedHashMap<>();
        for (Figure f : figures) {
            commands.putIfAbsent(f.runKey(), f);
        }
        Map<String, List<JsonObject>> results = new LinkedHashMap<>();
        for (int r = 1; r <= runs; r++) {
            for (Figure f : commands.values()) {
                List<String> args = new ArrayList<>(List.of("perf", f.tool()));
                args.addAll(quick ? f.quickArgs() : f.args());
                args.add("--json");
                System.out.printf(Locale.ROOT, "run %d/%d: nupa %s%n", r, runs, String.join(" ", args));
                results.computeIfAbsent(f.runKey(), k -> new ArrayList<>()).add(runTool(args));
            }
        }
        Files.createDirectories(out);
        String machine = machine();
        String date = LocalDate.now().toString();
        JsonArray rows = new JsonArray();
        StringBuilder md = new StringBuilder();
        md.append("Machine: ").append(machine).append("; ").append(runs).append(" run(s)")
                .append(quick ? ", --quick (short runs: not figures to report)" : "").append("; ").append(date).append("\n\n");
        md.append("| what | command | goal | result (ratio: median (range, runs)); date |\n| --- | --- | --- | --- |\n");
        for (Figure f : figures) {
            double[] v = results.get(f.runKey()).stream().filter(j -> j.getValue(f.field()) instanceof Number)
                    .mapToDouble(j -> j.getDouble(f.field())).toArray();
            double median = Turns.median(v);
            double min = Arrays.stream(v).min().orElse(Double.NaN);
            double max = Arrays.stream(v).max().orElse(Double.NaN);
            String verdict = verdict(f, median, min, max);
            rows.add(new JsonObject().put("what", f.what()).put("command", f.command(quick)).put("field", f.field())
                    .put("goal", f.goalText()).put("median", JsonNumber.orNull(median))
                    .put("min", JsonNumber.orNull(min)).put("max", JsonNumber.orNull(max)).put("runs", v.length)
                    .put("verdict", verdict).put("results", new JsonArray(results.get(f.runKey()))));
            md.append(String.format(Locale.ROOT, "| %s | `%s`%s | %s | %sx (%s-%sx, %d %s)%s; %s |%n", f.what(),
                    f.command(quick), f.field().equals("ratio") ? "" : " (`" + f.field() + "`)", f.goalText(),
                    threeFigures(median), threeFigures(min), threeFigures(max),
                    v.length, v.length == 1 ? "run" : "runs", verdict.isEmpty() ? "" : ": " + verdict, date));
        }
        JsonObject suite = new JsonObject().put("date", date).put("machine", machine).put("runs", runs).put("quick", quick)
                .put("figures", rows);
        Files.writeString(out.resolve("suite.json"), suite.encodePrettily() + "\n");
        Files.writeString(out.resolve("suite.md"), md.toString());
        System.out.print(md);
        System.out.println("wrote " + out.resolve("suite.json") + " and " + out.resolve("suite.md"));
        if (figuresFile != null) {
            String kind = machineKind != null ? machineKind : machineKind();
            FiguresFile.write(figuresFile, kind, md.toString());
            System.out.println("replaced the " + kind + " table of " + figuresFile);
        }
        return 0;
    }

    /** Three significant figures, never in exponent form (a tail of 1,110x reads "1110", not "1.11e+03"). */
    static String threeFigures(double x) {
        if (!Double.isFinite(x)) {
            return String.valueOf(x);
        }
        return new BigDecimal(x).round(new MathContext(3)).toPlainString();
    }

    /** "" when the median meets the goal; "at the noise" when the goal lies inside the range; else "not met". */
    static String verdict(Figure f, double median, double min, double max) {
        if (f.goal() == Goal.NONE || Double.isNaN(median)) {
            return Double.isNaN(median) ? "no result" : "";
        }
        boolean met = f.goal() == Goal.AT_MOST ? median <= f.bound() : median >= f.bound();
        if (met) {
            return "";
        }
        return f.bound() >= min && f.bound() <= max ? "at the noise" : "not met";
    }

    /** Runs {@code nupa args} as a child JVM; its last line is the tool's JSON object. */
    private static JsonObject runTool(List<String> args) throws IOException, InterruptedException {
        return Children.runJson(args);
    }

    /** The CPU model, how many CPUs, and where the tools' two processes ran. */
    /**
     * The machine kind whose table --figures writes by default: the CPU count and the vendor, "2-CPU AMD" or
     * "16-CPU Intel", so runs on two kinds of VM of one size do not share a table.
     */
    static String machineKind() {
        String model = cpuModel();
        String vendor = model.startsWith("unknown") ? "" : " " + model.split("[\\s(]", 2)[0];
        return Runtime.getRuntime().availableProcessors() + "-CPU" + vendor;
    }

    private static String cpuModel() {
        try {
            return Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse("unknown CPU");
        } catch (IOException e) {
            return "unknown CPU"; // not Linux
        }
    }

    static String machine() {
        String model = cpuModel();
        int cpus = Runtime.getRuntime().availableProcessors();
        String placement = cpus > 2
                ? "the two processes of each tool pinned to CPUs 0 and 1 (the Vert.x tools run in one process, unpinned)"
                : "2 CPUs: the two processes pinned to CPUs 0 and 1, whose place on the host is the host's";
        return model + ", " + cpus + " CPUs; " + placement;
    }
}
