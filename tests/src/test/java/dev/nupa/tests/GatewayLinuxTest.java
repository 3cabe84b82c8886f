package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.nupa.node.Main;

/**
 * The gateway with Linux as its peer: `nupa node --tap` on fabric node 0 bridges the fabric to a TAP
 * device that the test moves into a network namespace of its own, where Linux's ping, curl and nc talk
 * to fabric node 1 (the example Vert.x services, over the Vert.x transport) through it. The namespace,
 * the TAP device and the fabric file are removed afterwards.
 */
class GatewayLinuxTest {
    private static final String GATEWAY = "192.168.77.2";
    private static final String LINUX = "192.168.77.1";
    private static final String SERVER = "10.0.0.2";

    private static final List<ChildJvm> children = new ArrayList<>();
    private static Path fabric;
    private static String tap;
    private static String ns;

    @BeforeAll
    static void start() throws Exception {
        String missing = Linux.missing("ip", "ping", "curl", "nc");
        Assumptions.assumeTrue(missing == null, () -> "skipping the gateway tests: " + missing
                + " is absent (apt-get install iproute2 iputils-ping curl netcat-openbsd)");
        Assumptions.assumeTrue(Files.isWritable(Path.of("/dev/net/tun")),
                "skipping the gateway tests: /dev/net/tun is not writable here (no TAP devices without it and CAP_NET_ADMIN)");
        String id = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
        tap = "nupagw" + id;
        ns = "nupa-gw-" + id;
        Linux.Result made = Linux.run(10, "ip", "netns", "add", ns);
        Assumptions.assumeTrue(made.status() == 0, () -> "skipping the gateway tests: cannot create a network namespace: "
                + made.output());
        fabric = ChildJvm.newFabricPath();
        ChildJvm gateway = child("gateway", Main.class, "node", "--fabric", fabric, "--address", "0", "--tap", tap,
                "--tap-addr", GATEWAY + "/24");
        gateway.awaitLine("nupa node:", 60_000);
        ChildJvm server = child("server", FabricServerMain.class, fabric, 1, "192.168.77.0/24 via 10.0.0.1");
        server.awaitLine("READY", 60_000);
        // Linux's side of the wire: the TAP device in the namespace, with an address and a route to the fabric.
        Linux.ok("ip", "link", "set", tap, "netns", ns);
        Linux.ok("ip", "-n", ns, "link", "set", "lo", "up");
        Linux.ok("ip", "-n", ns, "link", "set", tap, "up");
        Linux.ok("ip", "-n", ns, "addr", "add", LINUX + "/24", "dev", tap);
        Linux.ok("ip", "-n", ns, "route", "add", "10.0.0.0/24", "via", GATEWAY);
    }

    private static ChildJvm child(String name, Class<?> main, Object... args) {
        ChildJvm c = ChildJvm.start(name, main, args);
        children.add(c);
        return c;
    }

    @AfterAll
    static void stop() throws IOException, InterruptedException {
        for (ChildJvm c : children) {
            c.close();
        }
        if (ns != null) {
            Linux.run(10, "ip", "netns", "del", ns); // takes the TAP device with it if the gateway left it there
        }
        if (fabric != null) {
            Files.deleteIfExists(fabric);
        }
    }

    /** A command run inside the namespace, as Linux's own tools run there. */
    private static Linux.Result inNs(long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        all.addAll(List.of(cmd));
        return Linux.run(timeoutSeconds, all.toArray(String[]::new));
    }

    @Test
    void linuxPingsTheGatewayAndAFabricNodeThroughItFragmentedAndNot() throws Exception {
        Linux.Result g = inNs(30, "ping", "-c", "3", "-i", "0.2", "-W", "5", GATEWAY);
        assertTrue(g.output().contains("3 packets transmitted, 3 received"), g.output());
        Linux.Result f = inNs(30, "ping", "-c", "3", "-i", "0.2", "-W", "5", SERVER);
        assertTrue(f.output().contains("3 packets transmitted, 3 received"), f.output());
        assertTrue(Pattern.compile("from 10\\.0\\.0\\.2: icmp_seq=1 ttl=63").matcher(f.output()).find(),
                "one hop: the gateway lowered the TTL\n" + f.output());
        // 8,028 bytes: Linux fragments to its 1500-byte MTU, the server reassembles and answers in one 9000-MTU frame,
        // which the gateway fragments again for the TAP side.
        Linux.Result big = inNs(30, "ping", "-c", "2", "-i", "0.3", "-W", "5", "-s", "8000", SERVER);
        assertTrue(big.output().contains("2 packets transmitted, 2 received"), big.output());
        assertTrue(big.output().contains("8008 bytes from 10.0.0.2"), big.output());
        // The largest ping: 65,028 bytes, 45 fragments each way.
        Linux.Result huge = inNs(30, "ping", "-c", "2", "-i", "0.5", "-W", "5", "-s", "65000", SERVER);
        assertTrue(huge.output().contains("2 packets transmitted, 2 received"), huge.output());
    }

    @Test
    void curlFetchesFromAVertxHttpServerOnTheFabricAndPostsEightMegabytesIntact() throws Exception {
        Linux.Result hello = inNs(30, "curl", "-sS", "--max-time", "20", "http://" + SERVER + ":8080/hello");
        assertEquals(0, hello.status(), hello.output());
        assertEquals("hello over the fabric\n", hello.output());
        byte[] body = new byte[8 << 20];
        new Random(5).nextBytes(body);
        Path file = Files.createTempFile("nupa-gw-body-", ".bin");
        try {
            Files.write(file, body);
            Linux.Result sum = inNs(60, "curl", "-sS", "--max-time", "50", "--data-binary", "@" + file,
                    "http://" + SERVER + ":8080/sha256");
            assertEquals(0, sum.status(), sum.output());
            assertEquals(sha256(body) + " " + body.length, sum.output().strip(), "the server's digest of what it received");
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void ncEchoesUdpAndSixteenMegabytesOfTcpThroughTheGateway() throws Exception {
        Linux.Result udp = Linux.run(20, "sh", "-c", "printf 'hello, fabric' | ip netns exec " + ns + " nc -u -w 2 " + SERVER + " 9");
        assertEquals("hello, fabric", udp.output(), "the UDP echo on the fabric node answered through the gateway");
        byte[] data = new byte[16 << 20];
        new Random(6).nextBytes(data);
        Path in = Files.createTempFile("nupa-gw-in-", ".bin");
        Path out = Files.createTempFile("nupa-gw-out-", ".bin");
        try {
            Files.write(in, data);
            // -N: shut the write side down at the end of the input; the echo server then ends too.
            Linux.Result tcp = Linux.run(120, "sh", "-c", "ip netns exec " + ns + " nc -N -w 30 " + SERVER + " 7 < " + in + " > " + out);
            assertEquals(0, tcp.status(), tcp.output());
            assertEquals(sha256(data), sha256(Files.readAllBytes(out)), "16 MiB echoed through the gateway, byte for byte");
        } finally {
            Files.deleteIfExists(in);
            Files.deleteIfExists(out);
        }
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }

    /** Linux's tools, run to their end. */
    static final class Linux {
        record Result(int status, String output) {
        }

        static Result run(long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getOutputStream().close();
            byte[] out = p.getInputStream().readAllBytes(); // ends when the process (and what it started) closes its output
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(String.join(" ", cmd) + " did not finish in " + timeoutSeconds + " s");
            }
            return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
        }

        static void ok(String... cmd) throws IOException, InterruptedException {
            Result r = run(10, cmd);
            assertEquals(0, r.status(), String.join(" ", cmd) + ": " + r.output());
        }

        /** The first of {@code tools} that is not on the PATH, or null. */
        static String missing(String... tools) throws IOException, InterruptedException {
            for (String t : tools) {
                if (run(5, "sh", "-c", "command -v " + t).status() != 0) {
                    return t;
                }
            }
            return null;
        }
    }
}
