package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.node.cli.Main;

/**
 * IPv4, ICMP and UDP between node processes on one fabric file, as users run them: `nupa node`
 * serving, `nupa ping` and `nupa udp-check` asking, `nupa capture` writing a pcap that tshark (the
 * peer no one here wrote) decodes without a malformed packet or a bad checksum.
 */
@Tag("linux")
class IpMultiProcessTest {
    private final Path fabric = ChildJvm.newFabricPath();
    private final List<ChildJvm> children = new ArrayList<>();
    private Path pcap;

    @AfterEach
    void cleanUp() throws IOException {
        for (ChildJvm c : children) {
            c.close();
        }
        Files.deleteIfExists(fabric);
        if (pcap != null) {
            Files.deleteIfExists(pcap);
        }
    }

    private ChildJvm nupa(String name, String... args) {
        ChildJvm c = ChildJvm.start(name, Main.class, (Object[]) args);
        children.add(c);
        return c;
    }

    /** Runs a `nupa` command to its end; returns its output after checking the exit status. */
    private String run(String name, int expectedStatus, long timeoutSeconds, String... args) throws InterruptedException {
        ChildJvm c = nupa(name, args);
        if (!c.process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            throw new AssertionError(name + " did not finish in " + timeoutSeconds + " s:\n" + c.output());
        }
        assertEquals(expectedStatus, c.process.exitValue(), name + " output:\n" + c.output());
        return c.output();
    }

    private ChildJvm startServer() {
        ChildJvm server = nupa("node0", "node", "--fabric", fabric.toString(), "--address", "0", "--udp-echo", "7");
        server.awaitLine("nupa node:", 60_000);
        return server;
    }

    @Test
    void pingBetweenTwoNodeProcessesGetsEveryReplyAndUnreachableHostsAreReported() throws Exception {
        startServer();
        String out = run("ping", 0, 120, "ping", "-c", "5", "-i", "0.1", "--fabric", fabric.toString(), "--address", "1",
                "10.0.0.1");
        assertTrue(out.contains("PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data."), out);
        for (int seq = 1; seq <= 5; seq++) {
            assertTrue(Pattern.compile("64 bytes from 10\\.0\\.0\\.1: icmp_seq=" + seq + " ttl=64 time=[0-9.]+ ms")
                    .matcher(out).find(), "reply " + seq + " in:\n" + out);
        }
        assertTrue(out.contains("5 packets transmitted, 5 received, 0% packet loss"), out);
        assertTrue(Pattern.compile("rtt min/avg/max/mdev = [0-9.]+/[0-9.]+/[0-9.]+/[0-9.]+ ms").matcher(out).find(), out);

        String none = run("ping-nobody", 1, 120, "ping", "-c", "2", "-i", "0.1", "-W", "1", "--fabric", fabric.toString(),
                "--address", "1", "10.0.0.77");
        assertTrue(none.contains("From 10.0.0.2 icmp_seq=1 Destination Host Unreachable"), none);
        assertTrue(none.contains("2 packets transmitted, 0 received, +2 errors, 100% packet loss"), none);

        // -w, as Linux's: with -c it stops once COUNT replies came, or at the deadline with status 1.
        String waited = run("ping-deadline", 0, 120, "ping", "-c", "2", "-i", "0.1", "-w", "30", "--fabric", fabric.toString(),
                "--address", "1", "10.0.0.1");
        assertTrue(waited.contains("2 received, 0% packet loss"), waited);
        long started = System.nanoTime();
        String late = run("ping-deadline-nobody", 1, 120, "ping", "-c", "2", "-i", "0.5", "-w", "2", "--fabric", fabric.toString(),
                "--address", "1", "10.0.0.77");
        assertTrue(late.contains(" 0 received"), late);
        assertTrue(System.nanoTime() - started < 60_000_000_000L, "the deadline ended it: " + late);
    }

    @Test
    void udpEchoOfOneHundredThousandDatagramsUpToSixtyThousandBytesLosesNothing() throws Exception {
        startServer();
        int count = Integer.getInteger("nupa.udpEchoCount", 100_000);
        String out = run("udp-check", 0, 900, "udp-check", "--fabric", fabric.toString(), "--address", "1", "--count",
                Integer.toString(count), "--max-size", "60000", "--window", "16", "--timeout", "840", "10.0.0.1");
        Matcher m = Pattern.compile("(\\d+) echoed intact, (\\d+) missing, (\\d+) corrupt, (\\d+) duplicate, (\\d+) sends failed")
                .matcher(out);
        assertTrue(m.find(), out);
        assertEquals(count, Integer.parseInt(m.group(1)), out);
        assertEquals("0 0 0 0", m.group(2) + " " + m.group(3) + " " + m.group(4) + " " + m.group(5), out);
        System.out.println("IpMultiProcessTest: " + out.lines().filter(l -> l.startsWith("udp-check:")).findFirst().orElse(""));
    }

    @Test
    void captureOfPingAndFragmentedUdpDecodesInTsharkWithoutMalformedPacketsOrBadChecksums() throws Exception {
        Assumptions.assumeTrue(tshark(), "tshark is absent (apt-get install tshark): skipping the capture decode check");
        startServer();
        pcap = Files.createTempFile("nupa-capture-", ".pcap");
        ChildJvm capture = nupa("capture", "capture", "-w", pcap.toString(), "--fabric", fabric.toString(), "--node", "0");
        capture.awaitLine("nupa capture:", 60_000);
        run("ping", 0, 120, "ping", "-c", "3", "-i", "0.1", "-s", "20000", "--fabric", fabric.toString(), "--address", "2",
                "10.0.0.1");
        run("udp-check", 0, 300, "udp-check", "--fabric", fabric.toString(), "--address", "2", "--count", "300",
                "--max-size", "30000", "--seed", "3", "10.0.0.1");
        capture.process.toHandle().destroy(); // SIGTERM: it writes what the rings hold, releases its slot and flushes the file
        assertTrue(capture.process.waitFor(30, TimeUnit.SECONDS), capture.output());
        assertTrue(capture.output().contains("frames written to"), capture.output());

        String all = tshark("-r", pcap.toString(), "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
                "-T", "fields", "-e", "frame.protocols");
        long echoes = all.lines().filter(l -> l.contains("icmp")).count();
        long udp = all.lines().filter(l -> l.contains(":ip:udp")).count(); // port 7 decodes as "udp:echo"
        assertTrue(echoes >= 6, "6 ICMP echo messages (requests and replies, reassembled) expected, saw " + echoes);
        assertTrue(udp >= 600, "600 reassembled UDP datagrams expected, saw " + udp);
        String bad = tshark("-r", pcap.toString(), "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
                "-Y", "_ws.malformed || ip.checksum.status == 0 || udp.checksum.status == 0 || icmp.checksum.status == 0");
        assertEquals("", bad.strip(), "tshark found malformed packets or bad checksums");
        // The checks above ran: every frame's IP checksum, and every UDP and ICMP checksum, was verified good.
        long frames = all.lines().count();
        String good = tshark("-r", pcap.toString(), "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
                "-Y", "ip.checksum.status == 1 && (!udp || udp.checksum.status == 1) && (!icmp || icmp.checksum.status == 1)",
                "-T", "fields", "-e", "frame.number");
        assertEquals(frames, good.lines().count(), "frames whose checksums tshark verified good");
        // The observer's summary: what it wrote is what the file holds, and node 0 recorded it (or counted it dropped).
        Matcher m = Pattern.compile("nupa capture: (\\d+) frames written to .*; node 0: (\\d+) recorded, (\\d+) dropped")
                .matcher(capture.output());
        assertTrue(m.find(), capture.output());
        assertEquals(frames, Long.parseLong(m.group(1)), capture.output());
        assertEquals(frames, Long.parseLong(m.group(2)), "node 0 is the only node watched: each record is written");
        System.out.println("IpMultiProcessTest: " + m.group());
    }

    private static boolean tshark() {
        try {
            return new ProcessBuilder("tshark", "--version").redirectErrorStream(true).start().waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private static String tshark(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("tshark"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "tshark did not finish");
        assertEquals(0, p.exitValue(), "tshark " + String.join(" ", args));
        return out;
    }
}
