package dev.nupa.perf;

import dev.nupa.device.FabricGeometry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * Options every `nupa perf` command shares, and the perf contract: with no role, run both sides as
 * two processes on a fresh fabric file and clean up; with --server / --client, run one side.
 */
final class PerfOptions {
    @Option(names = "--server", description = "Run only the server side (on --fabric, creating it if missing).")
    boolean server;

    @Option(names = "--client", description = "Run only the client side against a server on the same --fabric.")
    boolean client;

    @Option(names = "--fabric", paramLabel = "PATH",
            description = "Fabric file for --server/--client (default: ${DEFAULT-VALUE}); with no role a fresh one is made and removed.",
            defaultValue = "/dev/shm/nupa-fabric")
    Path fabric;

    @Option(names = "--server-address", paramLabel = "N", defaultValue = "0", description = "Server node address (default: ${DEFAULT-VALUE}).")
    int serverAddress;

    @Option(names = "--client-address", paramLabel = "N", defaultValue = "1", description = "Client node address (default: ${DEFAULT-VALUE}).")
    int clientAddress;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", description = "Frame size in bytes.")
    Integer size;

    @Option(names = {"-n", "--iterations"}, paramLabel = "N", description = "Measured iterations.")
    Long iterations;

    @Option(names = "--gc-log", description = "With no role: each process prints its garbage collections and their pauses"
            + " (-Xlog:gc) on stderr.")
    boolean gcLog;

    @Option(names = "--slots", paramLabel = "N", description = "Ring slots of a fresh fabric (power of two).")
    Integer slots;

    @Option(names = "--cpu", paramLabel = "CPU", defaultValue = "-1",
            description = "Pin this side's polling thread to CPU (default: with no role, server on 0 and client on 1).")
    int cpu;

    @Option(names = "--no-pin", description = "With no role, do not pin the two sides to separate CPUs.")
    boolean noPin;

    @Option(names = "--json", description = "Print one JSON object with the results on the last line.")
    boolean json;

    @Option(names = "--report", paramLabel = "DIR",
            description = "Write a report of the run into DIR: report.html with its plots, a timeline, and for the latency"
                    + " tools HdrHistogram files and, with --trace, the per-layer breakdown and traces.")
    Path report;

    @Option(names = "--trace", paramLabel = "RATE", defaultValue = "0",
            description = "Trace this share of the measured operations through the layers (e.g. 0.01; default: off).")
    double trace;

    @Option(names = "--trace-export", paramLabel = "EXPORTER",
            description = "Export the traced operations as OpenTelemetry spans: logging, otlp, otlp=URL or file=PATH.")
    String traceExport;

    @Option(names = "--progress", description = "Show a progress line on standard error (the default on a terminal).")
    boolean progress;

    void validate(int minSize, int maxSize) {
        if (server && client) {
            throw new IllegalArgumentException("--server and --client are exclusive; give one, or neither to run both sides");
        }
        if (size != null && (size < minSize || size > maxSize)) {
            throw new IllegalArgumentException("--size " + size + " is outside " + minSize + ".." + maxSize);
        }
        if (iterations != null && iterations < 1) {
            throw new IllegalArgumentException("--iterations must be at least 1");
        }
        if (serverAddress == clientAddress) {
            throw new IllegalArgumentException("--server-address and --client-address must differ");
        }
        if (!(trace >= 0 && trace <= 1)) {
            throw new IllegalArgumentException("--trace " + trace + " is a share of the operations: 0 (off) to 1 (all)");
        }
        if (traceExport != null) {
            if (trace == 0) {
                throw new IllegalArgumentException("--trace-export exports traced operations; give --trace RATE too");
            }
            TraceExport.check(traceExport);
        }
    }

    /** For the rate tools, which time rounds, not operations: refuses --trace with what takes it. */
    void tracesNothing(String test) {
        if (trace > 0) {
            throw new IllegalArgumentException("--trace goes with the latency tools (fabric-lat, udp-lat, icmp-lat, tcp-lat,"
                    + " write-lat, send-lat, read-lat, atomic-lat); " + test + " times rounds, not operations");
        }
    }

    /** The report asked for (null: none), for a test named {@code title}. */
    PerfReport report(String title) {
        return report == null ? null : PerfReport.open(report, title);
    }

    /** The progress line, if asked for (null: none). */
    Progress progress(String what, long iterations) {
        return progress ? new Progress(what, iterations, System.err) : null;
    }

    /** Tracing of the measured operations as asked (off without --trace). */
    PerfTrace tracing(String operation) {
        return PerfTrace.of(trace, operation, traceExport);
    }

    /** JVM options the two children need: tracing compiled in when asked for. */
    List<String> childJvmOptions() {
        return trace > 0 ? List.of("-Dnupa.trace=true") : List.of();
    }

    /** Geometry of the fresh fabric made with no role: room for the frame size asked for. */
    FabricGeometry freshGeometry(int frameSize, int defaultSlots) {
        FabricGeometry d = FabricGeometry.defaults();
        int frame = Math.max(frameSize, d.maxFrame());
        return d.withMaxNodes(Math.max(4, Math.max(serverAddress, clientAddress) + 1))
                .withRing(slots != null ? slots : defaultSlots, frame).withWindows(16, 1L << 20);
    }

    /** The arguments that give a child the same test with one role. */
    List<String> childArgs(String command, String role, Path path, int childCpu, List<String> extra) {
        List<String> a = new ArrayList<>(List.of("perf", command, role, "--fabric", path.toString(),
                "--server-address", Integer.toString(serverAddress), "--client-address", Integer.toString(clientAddress)));
        if (size != null) {
            a.addAll(List.of("--size", size.toString()));
        }
        if (iterations != null) {
            a.addAll(List.of("--iterations", iterations.toString()));
        }
        if (childCpu >= 0) {
            a.addAll(List.of("--cpu", Integer.toString(childCpu)));
        }
        if (json) {
            a.add("--json");
        }
        if (role.equals("--client")) { // the measuring side writes the report and traces
            if (report != null) {
                a.addAll(List.of("--report", report.toString()));
            }
            if (trace > 0) {
                a.addAll(List.of("--trace", Double.toString(trace)));
            }
            if (traceExport != null) {
                a.addAll(List.of("--trace-export", traceExport));
            }
            if (progress || (System.console() != null && System.console().isTerminal())) {
                a.add("--progress");
            }
        }
        a.addAll(extra);
        return a;
    }
}
