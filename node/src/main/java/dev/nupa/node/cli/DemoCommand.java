package dev.nupa.node.cli;

import dev.nupa.perf.Children;
import dev.nupa.perf.PerfRunner;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Show the fabric and the IP stack on a fresh fabric file, then clean up:",
                "1. two node processes stream checked frames both ways through the rings;",
                "2. a node process serves ping, UDP echo and TCP echo; `nupa ping`, `nupa udp-check` and `nupa tcp-check`",
                "   (more processes) use it: 100 TCP connections at once, then one bulk transfer;",
                "3. RDMA between two processes: WRITE ping-pong by direct placement and by packets, SEND ping-pong,",
                "   and a WRITE stream, each beside the floor measured in the same run (the perftest-style tools);",
                "   the packet-mode run is traced and reported (--report DIR: HTML with plots and the per-layer breakdown)."})
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--frames", defaultValue = "100000", description = "Frames each node sends (default: ${DEFAULT-VALUE}).")
    long frames;

    @Option(names = "--datagrams", defaultValue = "2000", description = "UDP datagrams (12..60000 bytes) echoed (default: ${DEFAULT-VALUE}).")
    int datagrams;

    @Option(names = "--rdma-iterations", defaultValue = "20000", description = "Iterations of each RDMA run (default: ${DEFAULT-VALUE}).")
    long rdmaIterations;

    @Option(names = "--bulk-bytes", defaultValue = "32000000", description = "Bytes of the TCP bulk echo (default: ${DEFAULT-VALUE}).")
    long bulkBytes;

    @Option(names = "--report", paramLabel = "DIR", description = "Where the report of the traced RDMA run goes"
            + " (default: nupa-demo-report in the temporary directory).")
    Path report = Path.of(System.getProperty("java.io.tmpdir"), "nupa-demo-report");

    /** Part 2: a node serving ping and UDP echo, and two client processes using it. */
    private int ip(Path path) throws Exception {
        System.out.println("nupa demo, part 2: IPv4, ICMP, UDP and TCP between node processes (10.0.0.1 serves, others ask)");
        Process server = Children.start(List.of("node", "--fabric", path.toString(), "--address", "0", "--udp-echo", "7",
                "--tcp-echo", "7", "--tcp-time-wait", "2"));
        try {
            var out = Children.stdout(server);
            String first = out.readLine();
            if (first == null || !first.startsWith("nupa node:")) {
                System.out.println("  the serving node did not start (status " + Children.waitFor(server, 5) + ")");
                return 1;
            }
            System.out.println("  " + first);
            int rc = relay(List.of("ping", "-c", "3", "-i", "0.2", "--fabric", path.toString(), "--address", "1", "10.0.0.1"));
            if (rc == 0) {
                rc = relay(List.of("udp-check", "--fabric", path.toString(), "--address", "2", "--count",
                        Integer.toString(datagrams), "10.0.0.1"));
            }
            if (rc == 0) {
                rc = relay(List.of("tcp-check", "--fabric", path.toString(), "--address", "2", "--connections", "100",
                        "--bytes", "100000", "--tcp-time-wait", "2", "10.0.0.1"));
            }
            if (rc == 0) {
                rc = relay(List.of("tcp-check", "--fabric", path.toString(), "--address", "2", "--connections", "1",
                        "--bytes", Long.toString(bulkBytes), "--tcp-time-wait", "2", "10.0.0.1"));
            }
            server.toHandle().destroy(); // SIGTERM, streams left open: the node prints its counters and leaves
            String line;
            while ((line = out.readLine()) != null) {
                System.out.println("  " + line);
            }
            Children.waitFor(server, 30);
            return rc;
        } finally {
            Children.kill(server);
        }
    }

    /** Part 3: RDMA over one RC queue pair between two processes (each tool makes and removes its own fabric). */
    private int rdma() throws Exception {
        System.out.println("nupa demo, part 3: RDMA between two processes (perftest-style: half round trips, then a stream;");
        System.out.println("  short runs for a demo: JIT warm-up shows in them; docs/rdma.md and the README give longer runs)");
        String n = Long.toString(rdmaIterations);
        for (List<String> run : List.of(List.of("perf", "write-lat", "-s", "8", "-n", n, "--mode", "direct"),
                List.of("perf", "write-lat", "-s", "8", "-n", n, "--mode", "packet", "--report", report.toString(), "--trace", "0.01"),
                List.of("perf", "send-lat", "-s", "8", "-n", n),
                List.of("perf", "write-bw", "-s", "65536", "-n", n, "--mode", "direct"))) {
            int rc = relay(run);
            if (rc != 0) {
                return rc;
            }
        }
        System.out.println("nupa demo: the packet-mode write-lat run, 1% of its WRITEs traced through the layers, is reported in "
                + report.resolve("report.html") + " (plots, where the time went, the traces; files beside it)");
        return 0;
    }

    private static int relay(List<String> args) throws Exception {
        Process p = Children.start(args);
        var out = Children.stdout(p);
        String line;
        while ((line = out.readLine()) != null) {
            System.out.println("  " + line);
        }
        return Children.waitFor(p, 300);
    }

    @Override
    public Integer call() throws Exception {
        if (frames < 1 || datagrams < 1 || rdmaIterations < 1) {
            throw new IllegalArgumentException("--frames, --datagrams and --rdma-iterations must be at least 1");
        }
        Path path = PerfRunner.freshFabricPath("demo");
        FabricGeometry g = FabricGeometry.defaults().withMaxNodes(4);
        System.out.println("nupa demo: two node processes on a fresh fabric " + path);
        ShmFabric.create(path, g).close();
        Process a = null;
        Process b = null;
        try {
            a = Children.start(List.of("demo-node", "--fabric", path.toString(), "--address", "0", "--peer", "1",
                    "--frames", Long.toString(frames)));
            b = Children.start(List.of("demo-node", "--fabric", path.toString(), "--address", "1", "--peer", "0",
                    "--frames", Long.toString(frames)));
            Process[] both = {a, b};
            int status = 0;
            for (Process p : both) {
                String line;
                var out = Children.stdout(p);
                while ((line = out.readLine()) != null) {
                    System.out.println("  " + line);
                }
                int rc = Children.waitFor(p, 300);
                status = status != 0 ? status : rc;
            }
            try (Fabric f = ShmFabric.inspect(path)) {
                FabricCommand.print(f);
            }
            System.out.println(status == 0 ? "part 1 ok: every frame arrived complete, in order and checksum-equal"
                    : "part 1 FAILED (status " + status + ")");
            if (status != 0) {
                return status;
            }
            status = ip(path);
            if (status == 0) {
                status = rdma();
            }
            System.out.println(status == 0 ? "demo ok: frames, ping, UDP echo, TCP echo and RDMA all checked"
                    : "demo FAILED (status " + status + ")");
            return status;
        } finally {
            Children.kill(a);
            Children.kill(b);
            PerfRunner.deleteQuietly(path);
            System.out.println("cleaned up: removed " + path);
        }
    }
}
