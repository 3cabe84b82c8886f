package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.node.cli.Main;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * libnupa (native/, C) against the Java nodes on one fabric file: nupa-cnode, built on the library alone, joins
 * as a node, publishes its IPv4 address in the neighbor directory and exchanges hand-built IPv4 with a Java node
 * both ways: its ICMP echo requests and a UDP datagram of every size from 0 to 8,972 bytes (link frames of 36 to
 * 9,008 bytes, up to the 9,000-byte MTU) against `nupa node --udp-echo 7`, each echo checked; then `nupa ping` and
 * `nupa udp-check` against it. Afterwards its address is FREE again: it left as docs/fabric-layout.md says. And it
 * reclaims a Java node that died.
 */
@Tag("process")
class CNodeConformanceTest {
    private static final Path NATIVE = Path.of(System.getProperty("user.dir")).getParent().resolve("native");
    static final Path CNODE = NATIVE.resolve("build/nupa-cnode");

    @BeforeAll
    static void build() throws Exception {
        String missing = Linux.missing("make", "cc");
        Assumptions.assumeTrue(missing == null, () -> "skipping the test: no " + missing + " to build libnupa (apt-get install build-essential)");
        Linux.Result made = Linux.run(120, "make", "-C", NATIVE.toString());
        assertEquals(0, made.status(), "make -C native: " + made.output());
    }

    @Test
    void aCNodePingsAndUdpEchoesAJavaNodeWithFramesOfEverySize() throws Exception {
        Path fabric = ChildJvm.newFabricPath();
        try (ChildJvm java = ChildJvm.start("java-node", Main.class, "node", "--fabric", fabric, "--address", "1", "--udp-echo", "7")) {
            java.awaitLine("nupa node:", 60_000);
            Linux.Result ping = Linux.run(60, CNODE.toString(), fabric.toString(), "5", "10.0.0.6/24", "ping", "10.0.0.2", "5");
            assertEquals(0, ping.status(), ping.output());
            assertTrue(ping.output().contains("nupa-cnode: ping 10.0.0.2: 5 of 5 echo replies"), ping.output());
            Linux.Result udp = Linux.run(120, CNODE.toString(), fabric.toString(), "5", "10.0.0.6/24", "udp", "10.0.0.2", "7", "0", "8972");
            assertEquals(0, udp.status(), udp.output());
            assertTrue(udp.output().contains("8973 of 8973 datagrams of 0..8972 bytes echoed intact"), udp.output());
            System.out.println("CNodeConformanceTest: " + ping.output().strip() + "; " + udp.output().strip());
            assertNodeFree(fabric, 5);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void javaNodesPingAndUdpEchoThroughACNode() throws Exception {
        Path fabric = createdFabric();
        Process c = serving(fabric);
        try {
            c.getOutputStream().close();
            var lines = new java.io.BufferedReader(new java.io.InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8));
            String first = lines.readLine();
            assertTrue(first != null && first.startsWith("nupa-cnode: node 5 serving"), "the C node serves: " + first);
            NupaCommandLineTest.Run ping = NupaCommandLineTest.nupa("ping", "--fabric", fabric.toString(), "-c", "3", "10.0.0.6");
            assertEquals(0, ping.status(), ping.out() + ping.err());
            assertTrue(ping.out().contains("3 packets transmitted, 3 received"), ping.out());
            NupaCommandLineTest.Run udp = NupaCommandLineTest.nupa("udp-check", "--fabric", fabric.toString(), "--count", "200", "--max-size",
                    "8000", "10.0.0.6");
            assertEquals(0, udp.status(), udp.out() + udp.err());
            assertTrue(udp.out().contains("200 echoed intact"), udp.out());
            Linux.ok("kill", "-TERM", Long.toString(c.pid())); // it leaves the fabric and reports (destroy would close its output)
            StringBuilder rest = new StringBuilder();
            for (String line; (line = lines.readLine()) != null; ) {
                rest.append(line).append('\n');
            }
            assertTrue(c.waitFor(30, TimeUnit.SECONDS), "the C node stopped");
            assertTrue(rest.toString().contains("nupa-cnode: served 3 echo requests and 200 UDP datagrams"), rest.toString());
            assertEquals(0, c.exitValue(), rest.toString());
            System.out.println("CNodeConformanceTest: " + ping.out().strip().lines().reduce((a, b) -> b).orElse("") + "; " + udp.lastLine()
                    + "; " + rest.toString().strip());
            assertNodeFree(fabric, 5);
        } finally {
            c.destroyForcibly();
            Files.deleteIfExists(fabric);
        }
    }

    /**
     * The C node watches its peers as section 8 of docs/fabric-layout.md says: a Java node killed with SIGKILL
     * (its process gone from this host, its heartbeat still) is reclaimed by the C node, the only other node
     * (`nupa fabric info` only looks).
     */
    @Test
    void aCNodeReclaimsAJavaNodeThatDied() throws Exception {
        Path fabric = createdFabric();
        Process c = null;
        try (ChildJvm java = ChildJvm.start("java-node", Main.class, "node", "--fabric", fabric, "--address", "1")) {
            java.awaitLine("nupa node:", 60_000);
            c = serving(fabric); // its two lines of output wait in the pipe
            ChildJvm.waitUntil("the C node to be up", 30_000, () -> nodeState(fabric, 5).equals("UP"));
            java.kill();
            ChildJvm.waitUntil("the C node to reclaim node 1", 30_000, () -> nodeState(fabric, 1).equals("FREE"));
        } finally {
            if (c != null) {
                c.destroyForcibly();
            }
            Files.deleteIfExists(fabric);
        }
    }

    /**
     * The work rings' C header (nupa_wqe.h) and the Java flyweight (WorkRingLayout) describe the same bytes: every
     * field's offset, the sizes and the constants.
     */
    @Test
    void theCHeaderAndTheJavaFlyweightAgreeOnEveryOffset() throws Exception {
        Linux.Result layout = Linux.run(30, NATIVE.resolve("build/nupa-wr").toString(), "--layout");
        assertEquals(0, layout.status(), layout.output());
        int checked = 0;
        for (String line : layout.output().strip().split("\n")) {
            String[] kv = line.split("=");
            String name = kv[0].toUpperCase();
            long c = Long.parseLong(kv[1]);
            long java = ((Number) dev.nupa.roce.ring.WorkRingLayout.class.getField(name).get(null)).longValue() & 0xFFFFFFFFL;
            assertEquals(c, java, name + " in nupa_wqe.h and WorkRingLayout");
            checked++;
        }
        assertTrue(checked >= 55, "checked " + checked + " names");
    }

    private static Path createdFabric() throws IOException, InterruptedException {
        Path fabric = ChildJvm.newFabricPath();
        NupaCommandLineTest.Run made = NupaCommandLineTest.here("fabric", "create", "--fabric", fabric.toString());
        assertEquals(0, made.status(), made.err());
        return fabric;
    }

    /** nupa-cnode serving ICMP and UDP echo as node 5, 10.0.0.6, for at most 120 s; its output on the process's stream. */
    private static Process serving(Path fabric) throws IOException {
        return new ProcessBuilder(CNODE.toString(), fabric.toString(), "5", "10.0.0.6/24", "serve", "120").redirectErrorStream(true).start();
    }

    /** Address a's state as `nupa fabric info` prints it ("FREE" when it lists no such line). */
    private static String nodeState(Path fabric, int address) {
        var m = java.util.regex.Pattern.compile("(?m)^\\s+" + address + " (\\w+) ")
                .matcher(NupaCommandLineTest.here("fabric", "info", "--fabric", fabric.toString()).out());
        return m.find() ? m.group(1) : "FREE";
    }

    /** `nupa fabric info` shows the address FREE again (the C node's leave reclaimed it) or not at all. */
    private static void assertNodeFree(Path fabric, int address) throws IOException, InterruptedException {
        NupaCommandLineTest.Run info = NupaCommandLineTest.here("fabric", "info", "--fabric", fabric.toString());
        assertEquals(0, info.status(), info.err());
        assertTrue(!java.util.regex.Pattern.compile("(?m)^\\s+" + address + " (UP|JOINING|RECLAIMING) ").matcher(info.out()).find(),
                "node " + address + " left: " + info.out());
    }
}
