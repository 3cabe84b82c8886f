package dev.nupa.tests;

import static dev.nupa.tests.NupaCli.assertOneLineError;
import static dev.nupa.tests.NupaCli.builder;
import static dev.nupa.tests.NupaCli.nupa;
import static dev.nupa.tests.NupaCli.here;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tests.NupaCli.Run;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * `nupa perf` and `nupa demo` as a user meets them: the perf contract (each tool's report and last JSON line, its
 * floor or peer and ratio), one-line refusals, and the fresh fabric files each run makes and removes.
 */
@Tag("process")
class PerfCommandLineTest {
    private final Path fabric = ChildJvm.newFabricPath();
    private final Path fabrics = Files.createTempDirectory(Path.of("/dev/shm"), "nupa-perf-test-");

    PerfCommandLineTest() throws IOException {
    }

    /** `nupa ARGS` in a JVM of its own, making its fresh fabric files in this test's own directory (NUPA_FABRIC_DIR). */
    private Run ownFabrics(String... args) throws IOException, InterruptedException {
        return NupaCli.nupa(java.util.Map.of("NUPA_FABRIC_DIR", fabrics.toString()), args);
    }

    /** What the runs of {@link #ownFabrics} left in this test's directory: nothing, if each removed its fabric files. */
    private List<Path> leftFabrics() throws IOException {
        try (Stream<Path> s = Files.list(fabrics)) {
            return s.toList();
        }
    }

    @AfterEach
    void removeFabrics() throws IOException {
        Files.deleteIfExists(fabric);
        for (Path p : leftFabrics()) {
            Files.delete(p);
        }
        Files.delete(fabrics);
    }

    @Test
    void perfFabricLatKeepsThePerfContract() throws Exception {
        Path none = fabrics.resolve("none");
        assertOneLineError(nupa(java.util.Map.of("NUPA_FABRIC_DIR", none.toString()), "perf", "fabric-lat"), 2,
                "NUPA_FABRIC_DIR=" + none + " is not a directory"); // the tools make their fabric files there
        Run r = ownFabrics("perf", "fabric-lat", "-n", "5000", "--warmup", "1000", "--json");
        assertEquals(0, r.status(), r.err());
        String json = r.lastLine();
        for (String field : List.of("\"min_ns\":", "\"p50_ns\":", "\"p99_ns\":", "\"p999_ns\":", "\"max_ns\":", "\"floor\":{",
                "\"ratio\":")) {
            assertTrue(json.contains(field), field + " in " + json);
        }
        assertTrue(Pattern.compile("\"iterations\":5000.*\"floor\":\\{\"bytes\":8,\"iterations\":5000").matcher(json).find(), json);
        assertTrue(Pattern.compile("\"message_floor\":\\{\"bytes\":64,\"iterations\":5000,.*\"message_ratio\":[0-9.]+,")
                .matcher(json).find(), "the two-line message floor of a 64-byte frame: " + json);
        assertTrue(Pattern.compile("\"ring_floor\":\\{\"bytes\":64,\"iterations\":5000,.*\"ring_floor_ratio\":[0-9.]+,"
                + "\"ring_ratio\":[0-9.]+\\}$").matcher(json).find(), "the ring floor of a 64-byte frame: " + json);
        assertTrue(Pattern.compile("\"ratio\":[0-9.]+,\"pooled_ratio\":[0-9.]+,\"turns\":1,").matcher(json).find(),
                "5000 iterations make one turn of 5000: " + json);
        assertEquals(List.of(), leftFabrics(), "the fresh fabric file is removed afterwards");
    }

    @Test
    void perfFabricBwKeepsThePerfContract() throws Exception {
        Run r = ownFabrics("perf", "fabric-bw", "-s", "4096", "-n", "3000", "--json");
        assertEquals(0, r.status(), r.err());
        String json = r.lastLine();
        assertTrue(Pattern.compile("^\\{\"test\":\"fabric-bw\",\"bytes\":4096,\"iterations\":3000,.*\"gbit_s\":[0-9.]+,\"msgs_s\":[0-9.]+,"
                + "\"floor\":\\{\"gbit_s\":[0-9.]+,\"msgs_s\":[0-9.]+\\},\"ratio\":[0-9.]+,"
                + "\"cross_floor\":\\{\"gbit_s\":[0-9.]+\\},\"cross_ratio\":[0-9.]+\\}$").matcher(json).find(), json);
    }

    @Test
    void perfRolesRunSeparately() throws Exception {
        Process server = builder("perf", "fabric-lat", "--server", "--fabric", fabric.toString()).redirectErrorStream(true).start();
        try {
            var serverOut = new java.io.BufferedReader(new java.io.InputStreamReader(server.getInputStream()));
            assertEquals("ready", serverOut.readLine(), "the server says when it is ready");
            Run client = ownFabrics("perf", "fabric-lat", "--client", "--fabric", fabric.toString(), "-n", "3000", "--warmup", "1000", "--json");
            assertEquals(0, client.status(), client.err());
            assertTrue(client.lastLine().startsWith("{\"test\":\"fabric-lat\""), client.out());
            assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server ends when its client says goodbye");
            assertEquals(0, server.exitValue());
        } finally {
            server.destroyForcibly();
        }
    }

    @Test
    void perfUdpLatKeepsThePerfContractWithLinuxUdpAsThePeer() throws Exception {
        Run r = ownFabrics("perf", "udp-lat", "-n", "3000", "--warmup", "1000", "-s", "100", "--json");
        assertEquals(0, r.status(), r.err());
        String json = r.lastLine();
        assertTrue(Pattern.compile("^\\{\"test\":\"udp-lat\",\"bytes\":100,\"round_trip\":true,\"checksums\":\"on\",\"iterations\":3000,\"min_ns\":[0-9.]+,"
                + "\"p50_ns\":[0-9.]+,.*\"peer\":\\{\"bytes\":100,\"iterations\":3000,.*\"ratio\":[0-9.]+,\"pooled_ratio\":[0-9.]+,"
                + "\"floor\":\\{\"bytes\":8,\"iterations\":3000,.*\"floor_ratio\":[0-9.]+,\"turns\":3\\}$").matcher(json).find(), json);
        assertTrue(r.out().contains("peer: Linux UDP over loopback"), r.out());
        assertEquals(List.of(), leftFabrics(), "the fresh fabric file is removed afterwards");
    }

    @Test
    void perfQosReportsThePingPongBesideBulkOnOneSharedRingAndOnSeparateRings() throws Exception {
        Run r = ownFabrics("perf", "qos", "-n", "2000", "--warmup", "500", "--json");
        assertEquals(0, r.status(), r.out() + r.err());
        String phase = "\\{\"iterations\":2000,.*?\"p50_ratio_to_idle\":[0-9.]+,\"bulk_million_datagrams_per_s\":[0-9.]+\\}";
        assertTrue(Pattern.compile("^\\{\"test\":\"qos\",\"bytes\":64,\"bulk_bytes\":1472,\"transport\":\"udp\",\"dscp\":46,"
                + "\"bulk_dscp\":0,\"idle\":" + phase + ",\"shared\":" + phase + ",\"separate\":" + phase + ",\"turns\":[0-9]+,"
                + "\"separate_ratio\":[0-9.]+,\"shared_ratio\":[0-9.]+\\}$").matcher(r.lastLine()).find(), r.out());
        assertEquals(List.of(), leftFabrics(), "the fresh fabric file is removed afterwards");
    }

    @Test
    void perfQosRdmaReportsAnSl7PingPongBesideSl0Writes() throws Exception {
        Run r = ownFabrics("perf", "qos", "--rdma", "-n", "2000", "--warmup", "500", "--json");
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("qos: RC SEND round trip, 64 bytes at SL 7 (ring 1), beside RDMA WRITEs of 65536 bytes at SL 0 (ring 0)"),
                r.out());
        String phase = "\\{\"iterations\":2000,.*?\"p50_ratio_to_idle\":[0-9.]+,\"bulk_million_writes_per_s\":[0-9.]+\\}";
        assertTrue(Pattern.compile("^\\{\"test\":\"qos\",\"bytes\":64,\"bulk_bytes\":65536,\"transport\":\"rdma\",\"sl\":7,"
                + "\"bulk_sl\":0,\"idle\":" + phase + ",\"shared\":" + phase + ",\"separate\":" + phase + ",\"turns\":[0-9]+,"
                + "\"separate_ratio\":[0-9.]+,\"shared_ratio\":[0-9.]+\\}$").matcher(r.lastLine()).find(), r.out());
        assertEquals(List.of(), leftFabrics(), "the fresh fabric file is removed afterwards");
    }

    @Test
    void perfVertxScalingReportsEachSidesRatesAndEfficiency() throws Exception {
        Run r = ownFabrics("perf", "vertx-scaling", "-c", "4", "--loops", "1,2", "-t", "0.2", "--turns", "1", "--peers", "epoll", "--json");
        assertEquals(0, r.status(), r.out() + r.err());
        String side = "\\{\"rates\":\\[[0-9.]+,[0-9.]+\\],\"p50_ns\":\\[[1-9][0-9]*,[1-9][0-9]*\\],\"efficiency\":[0-9.E-]+\\}";
        String count = "\\{\"loops\":%d,\"best_peer\":\"epoll\",\"best_ratio\":[0-9.E-]+,\"best_latency_peer\":\"epoll\","
                + "\"best_latency_ratio\":[0-9.E-]+\\}";
        assertTrue(Pattern.compile("^\\{\"test\":\"vertx-scaling\",\"workload\":\"http\",\"connections\":4,\"loops\":\\[1,2\\],\"sides\":\\{\"ours\":" + side
                + ",\"epoll\":" + side + "\\},\"best_peer\":\"epoll\",\"best_ratio_at_most_loops\":[0-9.E-]+,\"efficiency_ratio\":[0-9.E-]+,"
                + "\"at_each_count\":\\[" + count.formatted(1) + "," + count.formatted(2) + "\\],\"least_best_ratio\":[0-9.E-]+,"
                + "\"most_best_latency_ratio\":[0-9.E-]+\\}$")
                .matcher(r.lastLine()).find(), r.out());
        Run bad = ownFabrics("perf", "vertx-scaling", "--loops", "2,1");
        assertEquals(2, bad.status(), bad.out() + bad.err());
        assertTrue(bad.err().contains("--loops must ascend: [2, 1]"), bad.err());
    }

    @Test
    void perfVertxEchoStreamsOverSeveralConnectionsAndLoops() throws Exception {
        // vertx-scaling runs vertx-echo -c 2 at 1 and at 2 loops a side
        Run r = ownFabrics("perf", "vertx-scaling", "--workload", "echo", "-c", "2", "--loops", "1,2", "-t", "0.2", "--turns", "1",
                "--peers", "epoll", "--json");
        assertEquals(0, r.status(), r.out() + r.err());
        String side = "\\{\"rates\":\\[[0-9.]*[1-9][0-9.]*,[0-9.]*[1-9][0-9.]*\\],\"p50_ns\":\\[0,0\\],\"efficiency\":[0-9.E-]+\\}";
        assertTrue(Pattern.compile("^\\{\"test\":\"vertx-scaling\",\"workload\":\"echo\",\"connections\":2,\"loops\":\\[1,2\\],"
                + "\"sides\":\\{\"ours\":" + side + ",\"epoll\":" + side + "\\},\"best_peer\":\"epoll\",").matcher(r.lastLine()).find(), r.out());
        Run echo = ownFabrics("perf", "vertx-echo", "-c", "3", "--loops", "2", "-t", "0.2", "--turns", "1", "--peers", "epoll", "--json");
        assertEquals(0, echo.status(), echo.out() + echo.err());
        assertTrue(echo.out().contains("vertx-echo: 65536 B, 3 connection(s) over 2 event loops a side"), echo.out());
        assertTrue(Pattern.compile("^\\{\"test\":\"vertx-echo\",\"size\":65536,\"connections\":3,\"loops\":2,\"turns\":1,"
                + "\"ours\":\\{\"gbit_s\":[0-9.]*[1-9]").matcher(echo.lastLine()).find(), echo.out());
        Run bad = ownFabrics("perf", "vertx-scaling", "--workload", "udp");
        assertEquals(2, bad.status(), bad.out() + bad.err());
        assertTrue(bad.err().contains("--workload takes http or echo, not udp"), bad.err());
        Run loops = ownFabrics("perf", "vertx-udp", "--loops", "2", "-c", "2");
        assertEquals(2, loops.status(), loops.out() + loops.err());
        assertTrue(loops.err().contains("more than 1 for vertx-http and vertx-echo only"), loops.err());
    }

    @Test
    void perfIcmpLatReportsTheFloorRatio() throws Exception {
        Run r = ownFabrics("perf", "icmp-lat", "-n", "2000", "--warmup", "1000", "--json");
        assertEquals(0, r.status(), r.err());
        assertTrue(Pattern.compile("^\\{\"test\":\"icmp-lat\",\"bytes\":64,.*\"p50_ns\":[0-9.]+,.*\"floor\":\\{\"bytes\":8,.*"
                + "\"floor_ratio\":[0-9.]+,\"turns\":[0-9]+\\}$").matcher(r.lastLine()).find(), r.out());
    }

    @Test
    void perfVertxToolsKeepThePerfContractWithEachLinuxPeerAndTheBest() throws Exception {
        String peer = "\\{\"msgs_s\":[0-9.]+,\"p50_ns\":[0-9]+,\"p99_ns\":[0-9]+,\"alloc_b\":[0-9]+,\"cpu\":[0-9.]+,\"ratio\":[0-9.]+,"
                + "\"latency_ratio\":[0-9.]+,\"p99_ratio\":[0-9.]+,\"cpu_ratio\":[0-9.]+\\}";
        for (String tool : List.of("vertx-http", "vertx-grpc")) {
            Run r = ownFabrics("perf", tool, "-t", "0.2", "--turns", "1", "--warmup-time", "0.1", "--peers", "epoll,uds", "--json");
            assertEquals(0, r.status(), r.out() + r.err());
            assertTrue(Pattern.compile("^\\{\"test\":\"" + tool + "\",\"size\":16,\"connections\":1,\"loops\":1,\"turns\":1,"
                    + "\"ours\":\\{\"msgs_s\":[0-9.]+,\"p50_ns\":[0-9]+,\"p99_ns\":[0-9]+,\"alloc_b\":[0-9]+,\"cpu\":[0-9.]+\\},"
                    + "\"peers\":\\{\"epoll\":" + peer + ",\"uds\":" + peer + "\\},"
                    + "\"best_peer\":\"(epoll|uds)\",\"best_ratio\":[0-9.]+,\"best_latency_peer\":\"(epoll|uds)\","
                    + "\"best_latency_ratio\":[0-9.]+\\}$").matcher(r.lastLine()).find(), r.out());
            assertTrue(r.out().contains("peers: Vert.x epoll over loopback; Vert.x epoll over a Unix domain socket"), r.out());
        }
        // io_uring where the kernel lets it run, else one line that says why and the others go on.
        Run udp = ownFabrics("perf", "vertx-udp", "-t", "0.2", "--turns", "1", "--warmup-time", "0.1", "--peers", "io_uring,epoll", "--json");
        assertEquals(0, udp.status(), udp.out() + udp.err());
        assertTrue(Pattern.compile("^\\{\"test\":\"vertx-udp\",.*\"ours\":\\{\"msgs_s\":[0-9.]+,.*\"peers\":\\{(\"io_uring\":\\{.*\\},)?"
                + "\"epoll\":\\{.*\\}\\},\"best_peer\":\"(io_uring|epoll)\",\"best_ratio\":[0-9.]+,\"best_latency_peer\":null,"
                + "\"best_latency_ratio\":null\\}$").matcher(udp.lastLine()).find(), udp.out());
        assertTrue(udp.out().contains("\"io_uring\":{") != udp.out().contains("peer io_uring skipped: "), udp.out());
        Run bad = ownFabrics("perf", "vertx-udp", "--peers", "kqueue");
        assertEquals(2, bad.status(), bad.out() + bad.err());
        assertTrue(bad.err().contains("--peers takes epoll, io_uring and uds, not kqueue"), bad.err());
        // Open loop: requests at a mean rate, timed from their arrival, with the CPU each side's loops used.
        Run open = ownFabrics("perf", "vertx-http", "--rate", "500", "-t", "0.5", "--turns", "1", "--warmup-time", "0.1",
                "--peers", "epoll", "--json");
        assertEquals(0, open.status(), open.out() + open.err());
        assertTrue(Pattern.compile("^\\{\"test\":\"vertx-http\",.*\"ours\":\\{\"msgs_s\":[0-9.]+,.*\"cpu\":[0-9.]+\\},"
                + "\"peers\":\\{\"epoll\":" + peer + "\\},").matcher(open.lastLine()).find(), open.out());
        Run zero = ownFabrics("perf", "vertx-echo", "--rate", "100");
        assertEquals(2, zero.status(), zero.out() + zero.err());
        assertTrue(zero.err().contains("--rate takes requests per second above 0, for vertx-http and vertx-grpc only"), zero.err());
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
    }

    @Test
    void perfTcpToolsKeepThePerfContractWithLinuxTcpAsThePeer() throws Exception {
        Run lat = ownFabrics("perf", "tcp-lat", "-n", "2000", "--json");
        assertEquals(0, lat.status(), lat.err());
        assertTrue(Pattern.compile("^\\{\"test\":\"tcp-lat\",\"bytes\":1,\"round_trip\":true,\"iterations\":2000,.*\"p50_ns\":[0-9.]+,"
                + ".*\"peer\":\\{\"bytes\":1,\"iterations\":2000,.*\"ratio\":[0-9.]+,\"pooled_ratio\":[0-9.]+,\"turns\":2\\}$")
                .matcher(lat.lastLine()).find(), lat.out());
        Run crr = ownFabrics("perf", "tcp-crr", "-n", "60", "--json");
        assertEquals(0, crr.status(), crr.err());
        assertTrue(Pattern.compile("^\\{\"test\":\"tcp-crr\",\"iterations\":60,\"msgs_s\":[0-9.]+,\"peer\":\\{\"msgs_s\":[0-9.]+\\},"
                + "\"ratio\":[0-9.]+,\"ratio_min\":[0-9.]+,\"ratio_max\":[0-9.]+,\"turns\":1,\"alloc_b\":[0-9.]+,"
                + "\"server_alloc_b\":[0-9.]+,\"gc\":\\{\"client\":\\d+,\"client_longest_ms\":\\d+,\"server\":\\d+,"
                + "\"server_longest_ms\":\\d+\\},\"gc_all\":\\{\"client\":\\d+,\"client_longest_ms\":\\d+,\"server\":\\d+,"
                + "\"server_longest_ms\":\\d+\\}\\}$").matcher(crr.lastLine()).find(), crr.out());
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
    }

    @Test
    void perfUdpAndTcpLatencyInAnOpenLoopReportP50P99AndEachSidesCpu() throws Exception {
        String side = "\\{\"msgs_s\":[0-9.]+,\"p50_ns\":[1-9][0-9]*,\"p99_ns\":[1-9][0-9]*,\"cpu\":[0-9.]+,\"cpu_client\":[0-9.]+,"
                + "\"cpu_server\":[0-9.]+,\"lost\":\\d+\\}";
        for (String tool : List.of("udp-lat", "tcp-lat")) {
            Run open = ownFabrics("perf", tool, "--rate", "500", "-t", "0.5", "--turns", "1", "--idle", "5,10", "--json");
            assertEquals(0, open.status(), open.out() + open.err());
            assertTrue(open.out().contains("idle fixed, spin 5 us, yield to 10 us"), open.out());
            assertTrue(Pattern.compile("^\\{\"test\":\"" + tool + "\",\"open_loop\":true,\"rate\":500.0,\"bytes\":(64|8),\"turns\":1,"
                    + "\"ours\":" + side + ",\"peer\":" + side + ",\"latency_ratio\":[0-9.]+,\"p99_ratio\":[0-9.]+,"
                    + "\"cpu_ratio\":([0-9.]+|Infinity|NaN)\\}$").matcher(open.lastLine()).find(), open.out());
        }
        assertOneLineError(here("perf", "icmp-lat", "--rate", "100"), 2, "--rate (and --idle with it) goes with udp-lat only");
        assertOneLineError(here("perf", "tcp-bw", "--rate", "100"), 2, "--rate (and --idle with it) goes with tcp-lat only");
        assertOneLineError(here("perf", "udp-lat", "--idle", "5,10"), 2, "--idle with --rate");
        assertOneLineError(here("perf", "udp-lat", "--rate", "100", "--server"), 2, "--rate runs both sides in one process");
        assertOneLineError(here("perf", "tcp-lat", "--rate", "100", "--idle", "10,5"), 2, "--idle takes SPIN_US,YIELD_US");
        assertOneLineError(here("perf", "udp-lat", "--rate", "0"), 2, "--rate takes requests per second above 0");
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
    }

    @Test
    void perfFirstRequestTimesTheFirstRequestsOfFreshProcessesAgainstTheirLast() throws Exception {
        Run r = ownFabrics("perf", "first-request", "--runs", "1", "-n", "5", "--gap-ms", "0", "--pause-ms", "10", "--warmup", "20",
                "--json");
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("  udp run 1: first ") && r.out().contains("  http run 1: first "), r.out());
        assertTrue(r.out().contains(", warm first "), r.out());
        String kind = "\\{\"first_ns\":[1-9][0-9]*,\"last_ns\":[1-9][0-9]*,\"ratio\":[0-9.]+,\"ratio_min\":[0-9.]+,"
                + "\"ratio_max\":[0-9.]+,\"steady_ns\":[1-9][0-9]*,\"ratio_steady\":[0-9.]+,\"again_ns\":[1-9][0-9]*,"
                + "\"ratio_again\":[0-9.]+\\}";
        assertTrue(Pattern.compile("^\\{\"test\":\"first-request\",\"runs\":1,\"requests\":5,\"warmup\":20,\"udp\":" + kind + ",\"http\":"
                + kind + "\\}$").matcher(r.lastLine()).find(), r.out());
        assertOneLineError(here("perf", "first-request", "-n", "1"), 2, "need --runs >= 1, -n >= 2");
        assertOneLineError(here("perf", "first-request", "--pause-ms", "-1"), 2, "--pause-ms takes 0..");
        assertOneLineError(here("perf", "first-request", "--warmup", "-1"), 2, "--warmup takes 0..");
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
    }

    @Test
    void perfTcpLoopbackToolsRunInOneProcessBesideLinuxTcpOver127001() throws Exception {
        Run lat = ownFabrics("perf", "tcp-lat", "--loopback", "-n", "2000", "--json");
        assertEquals(0, lat.status(), lat.err());
        assertTrue(lat.out().contains("over the loopback interface of one node (127.0.0.1)"), lat.out());
        Matcher l = Pattern.compile("^\\{\"test\":\"tcp-lat\",\"loopback\":true,\"bytes\":1,\"round_trip\":true,\"iterations\":2000,"
                + ".*?\"p50_ns\":([0-9.]+),.*\"peer\":\\{\"bytes\":1,\"iterations\":2000,.*?\"p50_ns\":([0-9.]+),.*\\},"
                + "\"alloc_b\":[0-9.]+,\"ratio\":([0-9.]+),\"pooled_ratio\":[0-9.]+,\"turns\":2\\}$").matcher(lat.lastLine());
        assertTrue(l.find(), lat.out());
        for (int g = 1; g <= 3; g++) {
            assertTrue(Double.parseDouble(l.group(g)) > 0, lat.lastLine());
        }
        Run bw = ownFabrics("perf", "tcp-bw", "--loopback", "-t", "0.1", "--json");
        assertEquals(0, bw.status(), bw.err());
        Matcher b = Pattern.compile("^\\{\"test\":\"tcp-bw\",\"loopback\":true,\"bytes\":65536,\"gbit_s\":([0-9.]+),"
                + "\"peer\":\\{\"gbit_s\":([0-9.]+)\\},\"ratio\":([0-9.]+)\\}$").matcher(bw.lastLine());
        assertTrue(b.find(), bw.out());
        for (int g = 1; g <= 3; g++) {
            assertTrue(Double.parseDouble(b.group(g)) > 0, bw.lastLine());
        }
        assertOneLineError(here("perf", "tcp-crr", "--loopback"), 2, "--loopback goes with tcp-lat and tcp-bw");
        assertOneLineError(here("perf", "tcp-lat", "--loopback", "--server"), 2, "one process");
        assertEquals(List.of(), leftFabrics(), "the fresh fabric file is removed afterwards");
    }

    /** tcp-bw between two node processes with 64 KiB frames: the fresh fabric's slots are made to hold them. */
    @Test
    void perfTcpBwTakesAnMtuUpToIpv4sLargestPacket() throws Exception {
        Run bw = ownFabrics("perf", "tcp-bw", "--mtu", "65535", "--checksums", "off", "-t", "0.1", "--json");
        assertEquals(0, bw.status(), bw.out() + bw.err());
        assertTrue(bw.out().contains("checksums off, MTU 65535, fabric "), bw.out());
        Matcher b = Pattern.compile("^\\{\"test\":\"tcp-bw\",\"mtu\":65535,\"bytes\":65536,\"gbit_s\":([0-9.]+),"
                + "\"peer\":\\{\"gbit_s\":([0-9.]+)\\},\"ratio\":([0-9.]+)\\}$").matcher(bw.lastLine());
        assertTrue(b.find(), bw.out());
        assertTrue(Double.parseDouble(b.group(1)) > 0, bw.lastLine());
        assertOneLineError(here("perf", "tcp-bw", "--mtu", "65536"), 2, "above the largest IPv4 packet of 65535 bytes");
        assertOneLineError(here("perf", "tcp-lat", "--mtu", "500"), 2, "below the IPv4 minimum of 576 bytes");
        assertEquals(List.of(), leftFabrics(), "the fresh fabric file is removed afterwards");
    }

    @Test
    void perfRdmaLatencyToolsKeepThePerfContract() throws Exception {
        // Both modes and every operation between them: the demo runs write-lat direct and send-lat too.
        String[][] runs = {{"write-lat", "packet", "false"}, {"read-lat", "direct", "true"}, {"atomic-lat", "packet", "true"}};
        for (String[] t : runs) {
            Run r = ownFabrics("perf", t[0], "--mode", t[1], "-n", "2000", "--warmup", "500", "--json");
            assertEquals(0, r.status(), t[0] + " " + t[1] + ": " + r.err());
            int bytes = t[0].equals("atomic-lat") ? 8 : 2;
            assertTrue(Pattern.compile("^\\{\"test\":\"" + t[0] + "\",\"mode\":\"" + t[1] + "\",\"bytes\":" + bytes
                    + ",\"round_trip\":" + t[2] + ",\"iterations\":2000,\"min_ns\":[0-9.]+,\"p50_ns\":[0-9.]+,.*\"stdev_ns\":[0-9.]+,"
                    + "\"tail_ratio\":[0-9.]+,\"stalls_over_1ms\":[0-9]+,\"seconds\":[0-9.]+,\"floor\":\\{\"bytes\":8,\"iterations\":2000,\"min_ns\":[0-9.]+,\"p50_ns\":[0-9.]+,.*\\},\"ratio\":[0-9.]+,"
                    + "\"pooled_ratio\":[0-9.]+,\"turns\":1\\}$")
                    .matcher(r.lastLine()).find(), r.out());
            assertTrue(r.out().contains("#bytes  #iterations   t_min[usec]   t_max[usec]   t_typical[usec]"), r.out());
            assertTrue(Pattern.compile("floor p50 [0-9.]+ us, ratio [0-9.]+").matcher(r.out()).find(), r.out());
        }
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
        assertOneLineError(here("perf", "write-lat", "--mode", "fast"), 2, "--mode must be packet or direct");
        assertOneLineError(here("perf", "atomic-lat", "-s", "64"), 2, "-s must be 8");
        assertOneLineError(here("perf", "send-bw", "--tx-depth", "0"), 2, "--tx-depth");
        assertOneLineError(here("perf", "read-lat", "--server", "--client"), 2, "exclusive");
    }

    @Test
    void perfRdmaBandwidthToolsKeepThePerfContract() throws Exception {
        // The demo runs write-bw direct.
        String[][] runs = {{"write-bw", "packet"}, {"send-bw", "direct"}, {"read-bw", "direct"}};
        for (String[] t : runs) {
            Run r = ownFabrics("perf", t[0], "--mode", t[1], "-s", "4096", "-n", "300", "--json");
            assertEquals(0, r.status(), t[0] + " " + t[1] + ": " + r.err());
            assertTrue(Pattern.compile("^\\{\"test\":\"" + t[0] + "\",\"mode\":\"" + t[1] + "\",\"tx_depth\":128,\"bytes\":4096,"
                    + "\"iterations\":300,\"peak_mb_s\":[0-9.]+,\"avg_mb_s\":[0-9.]+,\"gbit_s\":[0-9.]+,\"msgs_s\":[0-9.]+,"
                    + "\"floor\":\\{\"mb_s\":[0-9.]+,\"gbit_s\":[0-9.]+,\"msgs_s\":[0-9.]+\\},\"ratio\":[0-9.]+\\}$")
                    .matcher(r.lastLine()).find(), r.out());
            assertTrue(r.out().contains("#bytes  #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"), r.out());
            assertTrue(r.out().contains("floor: single-thread MemorySegment.copy of 4096 bytes"), r.out());
        }
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
    }

    @Test
    void perfSuiteWritesEachFiguresMedianAndRangeAsJsonAndATable() throws Exception {
        Path dir = Files.createTempDirectory("nupa-suite");
        try {
            Run r = ownFabrics("perf", "suite", "--runs", "2", "--only", "udp-lat,tcp-crr", "--quick", "--out", dir.toString());
            assertEquals(0, r.status(), r.err());
            String json = Files.readString(dir.resolve("suite.json"));
            assertTrue(json.contains("\"runs\" : 2") && json.contains("\"quick\" : true"), json);
            for (String command : List.of("./nupa perf udp-lat -n 2000 --warmup 1000", "./nupa perf tcp-crr -n 200")) {
                assertTrue(json.contains("\"command\" : \"" + command + "\""), command + " in " + json);
            }
            // Two runs of udp-lat, not one per figure, whose JSON both of its figures (the p50 ratio, the tail) hold.
            assertEquals(2, Pattern.compile("run [12]/2: nupa perf udp-lat ").matcher(r.out()).results().count(), r.out());
            assertEquals(4, Pattern.compile("\"test\" : \"udp-lat\"").matcher(json).results().count(), "two runs of udp-lat, twice");
            String md = Files.readString(dir.resolve("suite.md"));
            assertTrue(Pattern.compile("\\| TCP connect, 1-byte exchange, close \\| `./nupa perf tcp-crr -n 200` \\| >= 1.0x Linux \\| "
                    + "[0-9.]+x \\([0-9.]+-[0-9.]+x, 2 runs\\)").matcher(md).find(), md);
            // The tail row comes from the same udp-lat runs as its p50 row, read from our series' tail_ratio.
            assertTrue(Pattern.compile("\\| the same, tail: p99 over our p50 \\| `./nupa perf udp-lat -n 2000 --warmup 1000` \\(`tail_ratio`\\) \\| "
                    + "p99 <= 2x p50 \\| [0-9.]+x \\([0-9.]+-[0-9.]+x, 2 runs\\)").matcher(md).find(), md);
            assertTrue(md.startsWith("Machine: ") && md.contains("CPUs"), md);
        } finally {
            try (Stream<Path> files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(dir);
        }
        assertOneLineError(here("perf", "suite", "--only", "nope"), 2, "--only names nope");
        assertEquals(List.of(), leftFabrics(), "the fresh fabric files are removed afterwards");
    }

    @Test
    void perfGrpcEndpointMeasuresBothWays() throws Exception {
        for (String call : List.of("info", "udp")) {
            Run r = ownFabrics("perf", "grpc-endpoint", "--call", call, "-n", "300", "--warmup", "100", "--json");
            assertEquals(0, r.status(), r.err());
            assertTrue(Pattern.compile("^\\{\"test\":\"grpc-endpoint\",\"call\":\"" + call + "\",\"iterations\":300,.*"
                    + "\"peer\":\\{\"iterations\":300,.*\"ratio\":[0-9.]+,\"turns\":1}$").matcher(r.lastLine()).find(), r.lastLine());
        }
        assertOneLineError(here("perf", "grpc-endpoint", "--call", "bogus"), 2, "--call is info or udp");
    }

    @Test
    void demoRunsAndCleansUp() throws Exception {
        Path report = Files.createTempDirectory("nupa-demo-report-");
        Run r = ownFabrics("demo", "--frames", "3000", "--datagrams", "200", "--bulk-bytes", "4000000", "--rdma-iterations", "2000",
                "--report", report.toString());
        assertEquals(0, r.status(), r.err());
        assertTrue(r.out().contains("is reported in " + report.resolve("report.html")), r.out());
        assertTrue(Files.readString(report.resolve("report.html")).contains("Where the time went"), "a traced report");
        try (Stream<Path> files = Files.list(report)) {
            for (Path f : files.toList()) {
                Files.delete(f);
            }
        }
        Files.delete(report);
        assertTrue(r.out().contains("received 3000 in order, 0 bad"), r.out());
        assertTrue(r.out().contains("3 packets transmitted, 3 received, 0% packet loss"), r.out());
        assertTrue(r.out().contains("200 echoed intact, 0 missing"), r.out());
        assertTrue(r.out().contains("100 echoed intact, 0 failed, 100 closed, 0 left open"), r.out());
        assertTrue(r.out().contains("1 echoed intact, 0 failed, 1 closed, 0 left open"), r.out());
        assertTrue(r.out().contains("write-lat: RDMA WRITE ping-pong, mode direct"), r.out());
        assertTrue(r.out().contains("send-lat: SEND ping-pong"), r.out());
        assertTrue(r.out().contains("write-bw: RDMA WRITE stream, mode direct"), r.out());
        assertEquals(4, r.out().split(", ratio ", -1).length - 1, "a floor and a ratio for each RDMA run: " + r.out());
        assertTrue(r.out().contains("demo ok"), r.out());
        assertEquals(List.of(), leftFabrics(), "the demo removes its fabric file");
    }
}
