package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static dev.nupa.tests.NupaCli.assertOneLineError;
import static dev.nupa.tests.NupaCli.builder;
import static dev.nupa.tests.NupaCli.here;
import static dev.nupa.tests.NupaCli.nupa;

import dev.nupa.tests.NupaCli.Run;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The `nupa` command line as a user meets it: nodes, fabric files, checks, exit codes and one-line errors ({@link NupaCli}). */
@Tag("process")
class NupaCommandLineTest {
    private final Path fabric = ChildJvm.newFabricPath();

    @AfterEach
    void removeFabric() throws IOException {
        Files.deleteIfExists(fabric);
    }

    @Test
    void aNodeServesItsGrpcEndpointAndTakesItsTcpLimits() throws Exception {
        Run r = nupa("node", "--fabric", fabric.toString(), "--address", "0", "--tcp-time-wait-limit", "0", "--tcp-pool-limit", "0",
                "--grpc", "127.0.0.1:0", "--run-for", "0.5");
        assertEquals(0, r.status(), r.err());
        assertTrue(Pattern.compile("gRPC on 127\\.0\\.0\\.1:[1-9][0-9]*;").matcher(r.out()).find(), r.out());
    }

    @Test
    void fabricCreateInfoRemove() throws Exception {
        Run created = here("fabric", "create", "--fabric", fabric.toString(), "--nodes", "8", "--slots", "64", "--max-frame", "1024");
        assertEquals(0, created.status(), created.err());
        Run info = here("fabric", "info", "--fabric", fabric.toString());
        assertEquals(0, info.status(), info.err());
        assertTrue(info.out().contains("8 nodes, 1 ring(s)/node, 64 slots/ring, max frame 1024 B"), info.out());
        assertOneLineError(here("fabric", "create", "--fabric", fabric.toString()), 1, "already exists");
        assertEquals(0, here("fabric", "remove", "--fabric", fabric.toString()).status());
        assertFalse(Files.exists(fabric));
    }

    @Test
    void fabricFilesCapturesAndTokensAreTheOwnersAlone() throws Exception {
        Run created = here("fabric", "create", "--fabric", fabric.toString(), "--nodes", "8");
        assertEquals(0, created.status(), created.err());
        String owner = Files.getOwner(Path.of("/proc/self")).getName();
        Run info = here("fabric", "info", "--fabric", fabric.toString());
        assertTrue(info.out().contains("  file: owner " + owner + ", group ") && info.out().contains(", mode rw-------"), info.out());
        // Any user may write it: refused, one line saying how to override; joined with the override.
        Files.setPosixFilePermissions(fabric, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--run-for", "0.1"), 1, "--trust-fabric");
        Path capture = Files.createTempDirectory("nupa-perms").resolve("node.pcap");
        Path token = capture.resolveSibling("token");
        try {
            Run trusted = nupa("node", "--fabric", fabric.toString(), "--trust-fabric", "--capture", capture.toString(), "--run-for", "0.1");
            assertEquals(0, trusted.status(), trusted.err());
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(capture)));
            // A token any user may read is refused; 0600 passes that check (and fails on the missing --grpc instead).
            Files.writeString(token, "secret");
            Files.setPosixFilePermissions(token, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc-token-file", token.toString()), 2, "chmod 600");
            Files.setPosixFilePermissions(token, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc-token-file", token.toString()), 2, "--grpc HOST:PORT");
        } finally {
            Files.deleteIfExists(capture);
            Files.deleteIfExists(token);
            Files.deleteIfExists(capture.getParent());
        }
        Files.delete(fabric);
        String group = Files.readAttributes(Path.of("/proc/self"), java.nio.file.attribute.PosixFileAttributes.class).group().getName();
        assertEquals(0, here("fabric", "create", "--fabric", fabric.toString(), "--nodes", "8", "--fabric-group", group).status());
        assertTrue(here("fabric", "info", "--fabric", fabric.toString()).out().contains(", group " + group + ", mode rw-rw----"));
    }

    @Test
    void errorsAreOneLineWithAStatus() throws Exception {
        assertOneLineError(here("perf", "fabric-lat", "--bogus"), 2, "--bogus");
        assertOneLineError(here("fabric", "create", "--fabric", fabric.toString(), "--slots", "3"), 1, "power of two");
        assertOneLineError(here("fabric", "info", "--fabric", fabric.toString()), 1, "no fabric file");
        assertOneLineError(here("perf", "fabric-lat", "--server", "--client"), 2, "exclusive");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--tcp-buffer-memory", "0"), 2, "--tcp-buffer-memory");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--tcp-time-wait-limit", "-1"), 2, "--tcp-time-wait-limit");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc", "nonsense"), 2, "HOST:PORT");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--metrics", "bogus"), 2, "logging, otlp");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc-token-file", "/nonexistent/token"), 2, "token file");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc-fabric", "50051"), 2, "give both");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc", "127.0.0.1:0", "--grpc-verbs-memory", "0"), 2,
                "--grpc-verbs-memory MIB");
        assertOneLineError(here("capture", "--fabric", fabric.toString(), "--protocol", "udp", "-w", "/tmp/x.pcap"), 2,
                "go with --grpc HOST:PORT");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc", "127.0.0.1:0", "--grpc-tls-cert", "/etc/hostname"),
                2, "all of --grpc-tls-cert, --grpc-tls-key and --grpc-tls-client-ca");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--grpc", "127.0.0.1:0", "--grpc-tls-cert", "/nonexistent/c.pem",
                "--grpc-tls-key", "/nonexistent/k.pem", "--grpc-tls-client-ca", "/nonexistent/ca.pem"), 2, "cannot read /nonexistent/c.pem");
        assertFalse(Files.exists(fabric), "a refused configuration creates no fabric");
        byte[] junk = new byte[8192];
        new java.util.Random(7).nextBytes(junk);
        Files.write(fabric, junk);
        assertOneLineError(here("fabric", "remove", "--fabric", fabric.toString()), 1, "not a NUPA fabric");
        assertTrue(Files.exists(fabric), "a file that is not a fabric is never removed");
    }

    @Test
    void ipCommandsGiveOneLineErrors() throws Exception {
        assertOneLineError(here("ping", "--fabric", fabric.toString(), "10.0.0.x"), 2, "not an IPv4 address");
        assertOneLineError(here("ping", "--fabric", fabric.toString(), "-s", "65508", "10.0.0.1"), 2, "-s 65508 is out of range");
        // A fabric file that does not exist has no node to reach: refused, not created (no node would answer but itself).
        Path none = Path.of(fabric + "-none");
        for (String command : List.of("ping", "udp-check", "tcp-check")) {
            assertOneLineError(here(command, "--fabric", none.toString(), "10.0.0.1"), 2, "no fabric at " + none);
            assertFalse(Files.exists(none), command + " created no fabric");
        }
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--ip", "10.0.0.0/24", "--run-for", "1"), 2,
                "network or broadcast address");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--mtu", "100", "--run-for", "1"), 2,
                "below the IPv4 minimum");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--route", "10.9.0.0/16 via 192.168.1.1",
                "--run-for", "1"), 2, "is not on-link");
        Path pcap = Path.of("/tmp/nupa-cli-test-" + ProcessHandle.current().pid() + ".pcap");
        assertOneLineError(here("capture", "-w", pcap.toString(), "--fabric", fabric.toString()), 1, "no node is up");
        assertOneLineError(here("capture", "-w", pcap.toString(), "--fabric", fabric + "-none"), 1, "no fabric file");
        assertFalse(Files.exists(pcap), "a capture that cannot start leaves no file");
    }

    @Test
    void gatewayOptionsGiveOneLineErrors() throws Exception {
        String f = fabric.toString();
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--tap", "nupa-x", "--run-for", "1"), 2,
                "needs both --tap NAME and --tap-addr");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--tap", "nupa-x", "--tap-addr", "192.168.77.2",
                "--run-for", "1"), 2, "needs a prefix length");
        assertOneLineError(here("node", "--fabric", f, "--tap", "nupa-x", "--tap-addr", "192.168.77.2/24", "--run-for", "1"),
                2, "need --ip or --address");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--tap", "no/slash", "--tap-addr", "192.168.77.2/24",
                "--run-for", "1"), 2, "TAP name \"no/slash\" must be");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--tap", "nupa-x", "--tap-addr", "192.168.77.2/24",
                "--tap-ecn-threshold", "deep", "--run-for", "1"), 2, "--tap-ecn-threshold deep: give a number of frames");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--tap", "nupa-x", "--tap-addr", "192.168.77.2/24",
                "--tap-ecn-threshold", "0", "--run-for", "1"), 2, "--tap-ecn-threshold 0 frames: must be at least 1 (or off)");
    }

    @Test
    void linkFaultsGiveOneLineErrors() throws Exception {
        String f = fabric.toString();
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--link-faults", "lose=0.1", "--run-for", "1"), 2,
                "unknown fault \"lose\"; the faults are drop, duplicate, reorder and corrupt");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--link-faults", "drop=1.5", "--run-for", "1"), 2,
                "drop rate 1.5 is outside 0..1");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--link-faults", "drop=0.1,drop=0.2", "--run-for", "1"), 2,
                "give each of drop, duplicate, reorder, corrupt and seed at most once");
        assertOneLineError(here("node", "--fabric", f, "--address", "0", "--link-faults", "seed=x", "--run-for", "1"), 2,
                "seed takes a number, not \"x\"");
    }

    @Test
    void captureOverGrpcWritesTheNodesFramesLiveAsPcap() throws Exception {
        Process node = builder("node", "--fabric", fabric.toString(), "--address", "0", "--udp-echo", "9", "--grpc", "127.0.0.1:0")
                .redirectErrorStream(true).start();
        Path pcap = Files.createTempFile("nupa-live-", ".pcap");
        Process capture = null;
        try {
            String first = new java.io.BufferedReader(new java.io.InputStreamReader(node.getInputStream())).readLine();
            java.util.regex.Matcher m = Pattern.compile("gRPC on (127\\.0\\.0\\.1:\\d+)").matcher(String.valueOf(first));
            assertTrue(m.find(), first);
            capture = builder("capture", "--grpc", m.group(1), "--protocol", "udp", "--filter-port", "9", "-c", "2", "-w", pcap.toString())
                    .redirectErrorStream(true).start();
            var captureOut = new java.io.BufferedReader(new java.io.InputStreamReader(capture.getInputStream()));
            String started = captureOut.readLine();
            assertTrue(started != null && started.startsWith("nupa capture: live from"), started);
            Run r = nupa("udp-check", "--fabric", fabric.toString(), "--address", "1", "--count", "3", "--port", "9", "10.0.0.1");
            assertEquals(0, r.status(), r.out() + r.err());
            assertTrue(capture.waitFor(30, TimeUnit.SECONDS), "the capture ends after its 2 frames");
            String done = captureOut.readLine();
            assertEquals(0, capture.exitValue(), done);
            assertTrue(done.contains("2 frames captured, 0 dropped"), done);
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(Files.readAllBytes(pcap)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            assertEquals(0xa1b23c4d, b.getInt(0), "a pcap file, nanosecond timestamps");
            int at = 24;
            for (int i = 0; i < 2; i++) {
                int included = b.getInt(at + 8);
                assertEquals(17, b.get(at + 16 + 14 + 9), "UDP");
                int ports = b.order(java.nio.ByteOrder.BIG_ENDIAN).getInt(at + 16 + 14 + 20);
                b.order(java.nio.ByteOrder.LITTLE_ENDIAN);
                assertTrue((ports & 0xFFFF) == 9 || (ports >>> 16) == 9, "to or from port 9: " + Integer.toHexString(ports));
                at += 16 + included;
            }
            assertEquals(b.capacity(), at, "two records");
        } finally {
            if (capture != null) {
                capture.destroy();
            }
            node.destroy();
            node.waitFor(30, TimeUnit.SECONDS);
            Files.deleteIfExists(pcap);
        }
    }

    @Test
    void tcpWithoutChecksumsOnBothNodesMovesDataIntact() throws Exception {
        // The lossless-fabric policy: TCP segments leave with checksum 0 and are not verified (as Linux on lo).
        Process node = builder("node", "--fabric", fabric.toString(), "--address", "0", "--tcp-echo", "7", "--tcp-time-wait", "1", "--no-checksums")
                .redirectErrorStream(true).start();
        try {
            var nodeOut = new java.io.BufferedReader(new java.io.InputStreamReader(node.getInputStream()));
            String first = nodeOut.readLine();
            assertTrue(first != null && first.contains("TCP echo on port 7"), first);
            Run r = nupa("tcp-check", "--fabric", fabric.toString(), "--address", "1", "--no-checksums", "--tcp-time-wait", "1", "--connections", "5",
                    "--bytes", "1000000", "10.0.0.1");
            assertEquals(0, r.status(), r.out() + r.err());
            assertTrue(r.out().contains("5 echoed intact, 0 failed, 5 closed"), r.out());
        } finally {
            node.destroy();
            node.waitFor(30, TimeUnit.SECONDS);
            node.destroyForcibly();
        }
    }

    @Test
    void tcpCheckAndTcpEchoTakeSocketOptions() throws Exception {
        Process node = builder("node", "--fabric", fabric.toString(), "--address", "0", "--tcp-echo", "7", "--tcp-time-wait", "1",
                "--no-delay", "--congestion", "newreno", "--linger", "5").redirectErrorStream(true).start();
        try {
            var nodeOut = new java.io.BufferedReader(new java.io.InputStreamReader(node.getInputStream()));
            String first = nodeOut.readLine();
            assertTrue(first != null && first.contains("TCP echo on port 7 (no-delay, no keepalive, send buffer 262144, "
                    + "recv buffer 262144, linger 5, newreno)"), first);
            // linger 0: every client connection ends with a RST, so none waits in TIME-WAIT.
            Run reset = nupa("tcp-check", "--fabric", fabric.toString(), "--address", "1", "--connections", "20", "--bytes",
                    "100000", "--no-delay", "--keepalive-idle", "30", "--send-buffer", "65536", "--recv-buffer", "131072",
                    "--linger", "0", "--congestion", "newreno", "10.0.0.1");
            assertEquals(0, reset.status(), reset.out() + reset.err());
            assertTrue(reset.out().contains("socket options: no-delay, keepalive 30/75/9, send buffer 65536, "
                    + "recv buffer 131072, linger 0, newreno"), reset.out());
            assertTrue(reset.out().contains("20 echoed intact, 0 failed, 20 closed, 0 left open"), reset.out());
            // linger 5: each close completes once the server acknowledged the FIN.
            Run lingered = nupa("tcp-check", "--fabric", fabric.toString(), "--address", "1", "--connections", "5", "--bytes",
                    "1000000", "--delay", "--keepalive", "--linger", "5", "--congestion", "cubic", "--tcp-time-wait", "1",
                    "10.0.0.1");
            assertEquals(0, lingered.status(), lingered.out() + lingered.err());
            assertTrue(lingered.out().contains("socket options: nagle, keepalive 7200/75/9, send buffer 262144, "
                    + "recv buffer 262144, linger 5, cubic"), lingered.out());
            assertTrue(lingered.out().contains("5 echoed intact, 0 failed, 5 closed, 0 left open"), lingered.out());
        } finally {
            node.destroy();
            node.waitFor(30, TimeUnit.SECONDS);
            node.destroyForcibly();
        }
    }

    @Test
    void tcpSocketOptionsGiveOneLineErrors() throws Exception {
        assertOneLineError(here("tcp-check", "--fabric", fabric.toString(), "--linger", "65536", "10.0.0.1"), 2,
                "--linger 65536 is out of range: --linger takes 0..65535");
        assertOneLineError(here("tcp-check", "--fabric", fabric.toString(), "--congestion", "bbr", "10.0.0.1"), 2,
                "--congestion bbr is unknown; choose one of: newreno, cubic");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--tcp-echo", "7", "--recv-buffer", "100",
                "--run-for", "1"), 2, "--recv-buffer 100 is outside 8960..1073741824 bytes");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--keepalive", "--run-for", "1"), 2,
                "--keepalive sets the TCP echo server's connections; give --tcp-echo PORT too");
        assertFalse(Files.exists(fabric), "refused before any node started");
    }

    @Test
    void numericOptionsAreRangeCheckedBeforeAnythingStarts() throws Exception {
        Path none = ChildJvm.newFabricPath();
        assertOneLineError(here("rping", "-c", "-a", "10.0.0.1", "--fabric", none.toString()), 2, "no fabric at " + none);
        assertOneLineError(here("udp-check", "--fabric", fabric.toString(), "--port", "65536", "10.0.0.1"), 2, "--port 65536 is out of range");
        assertOneLineError(here("tcp-check", "--fabric", fabric.toString(), "--timeout", "0", "10.0.0.1"), 2, "--timeout 0 is out of range");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--udp-echo", "0"), 2, "--udp-echo 0 is out of range: --udp-echo takes 1..65535");
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--address", "-1"), 2, "--address -1 is out of range");
        assertOneLineError(here("ping", "--fabric", fabric.toString(), "-s", "65508", "10.0.0.1"), 2, "-s 65508 is out of range: -s takes 0..65507");
        assertFalse(Files.exists(fabric), "a refused command creates no fabric");
        assertEquals(0, here("fabric", "create", "--fabric", fabric.toString(), "--nodes", "8").status());
        assertOneLineError(here("node", "--fabric", fabric.toString(), "--nodes", "16", "--run-for", "0.1"), 2, "--nodes 16 sizes a new fabric");
    }

    @Test
    void pingTakesLinuxSizes() throws Exception {
        assertEquals(0, here("fabric", "create", "--fabric", fabric.toString(), "--nodes", "4").status());
        // iputils: fewer than 8 data bytes carry no send time, so the reply line has no time= and there is no rtt line.
        Run zero = nupa("ping", "--fabric", fabric.toString(), "--address", "0", "-c", "1", "-s", "0", "10.0.0.1");
        assertEquals(0, zero.status(), zero.out() + zero.err());
        assertTrue(zero.out().contains("PING 10.0.0.1 (10.0.0.1) 0(28) bytes of data."), zero.out());
        assertTrue(Pattern.compile("\n8 bytes from 10\\.0\\.0\\.1: icmp_seq=1 ttl=[0-9]+\n").matcher(zero.out()).find(), zero.out());
        assertFalse(zero.out().contains("rtt "), zero.out());
        Run most = nupa("ping", "--fabric", fabric.toString(), "--address", "0", "-c", "1", "-W", "2", "-s", "65507", "10.0.0.1");
        assertTrue(most.out().contains("PING 10.0.0.1 (10.0.0.1) 65507(65535) bytes of data."), most.out() + most.err());
    }

    @Test
    void fabricRemoveNeverRemovesAFileThatIsNotAFabric() throws Exception {
        Files.writeString(fabric, "notes that are not a fabric\n");
        assertOneLineError(here("fabric", "remove", "--force", "--fabric", fabric.toString()), 1, "not a NUPA fabric");
        assertTrue(Files.exists(fabric), "--force overrides live nodes only");
    }

    @Test
    void aNodeRefusesTheIpv4AddressOfALiveNode() throws Exception {
        Process first = builder("node", "--fabric", fabric.toString(), "--address", "0", "--ip", "10.0.0.5/24", "--run-for", "60")
                .redirectErrorStream(true).start();
        try {
            var out = new java.io.BufferedReader(new java.io.InputStreamReader(first.getInputStream()));
            String line = out.readLine();
            assertTrue(line != null && line.startsWith("nupa node:"), line);
            Run second = nupa("node", "--fabric", fabric.toString(), "--address", "1", "--ip", "10.0.0.5/24", "--run-for", "0.5");
            assertOneLineError(second, 1, "10.0.0.5/24 at node 0 is in use");
        } finally {
            first.destroy();
            first.waitFor(30, TimeUnit.SECONDS);
            first.destroyForcibly();
        }
    }

    @Test
    void fabricInfoShowsDropsByReasonAndInjectedFaults() throws Exception {
        assertEquals(0, here("fabric", "create", "--fabric", fabric.toString(), "--nodes", "4").status());
        Process node = builder("node", "--fabric", fabric.toString(), "--address", "0", "--link-faults", "drop=0.5,seed=3", "--run-for", "60")
                .redirectErrorStream(true).start();
        try {
            var out = new java.io.BufferedReader(new java.io.InputStreamReader(node.getInputStream()));
            String line = out.readLine();
            assertTrue(line != null && line.startsWith("nupa node:"), line);
            nupa("ping", "--fabric", fabric.toString(), "--address", "1", "-c", "20", "-i", "0.01", "-W", "1", "10.0.0.1");
            Pattern dropped = Pattern.compile("faults_dropped ([1-9][0-9]*)");
            Run[] last = {null};
            ChildJvm.waitUntil("node 0 published its dropped frames (every 100 ms)", 10_000, () -> {
                last[0] = here("fabric", "info", "--fabric", fabric.toString());
                return dropped.matcher(last[0].out()).find();
            });
            Run info = last[0];
            assertEquals(0, info.status(), info.err());
            assertTrue(info.out().contains("node 0 publishes link faults injected on receive:"), info.out());
            assertTrue(dropped.matcher(info.out()).find(), info.out());
            assertTrue(Pattern.compile("backprs +stalls +down +late +discard +corrupt +hdl-err").matcher(info.out()).find(), info.out());
        } finally {
            node.destroy();
            node.waitFor(30, TimeUnit.SECONDS);
            node.destroyForcibly();
        }
    }
}
