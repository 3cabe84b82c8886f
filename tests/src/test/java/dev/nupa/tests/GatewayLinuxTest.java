package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;


/**
 * The gateway with Linux as its peer: `nupa node --tap` on fabric node 0 bridges the fabric to a TAP
 * device that the test moves into a network namespace of its own, where Linux's ping, curl and nc talk
 * to fabric node 1 (the example Vert.x services, over the Vert.x transport) through it. The namespace,
 * the TAP device and the fabric file are removed afterwards.
 */
@Tag("linux")
class GatewayLinuxTest {
    private static final String GATEWAY = GatewayRig.GATEWAY;
    private static final String SERVER = GatewayRig.SERVER;

    /** The gateway to a fabric of MTU 9000 through a TAP of 1500, with the example services on fabric node 1. */
    private static GatewayRig standard;
    /** A fabric of MTU 4000 behind a TAP of 9000: Linux's datagrams may be too big for the fabric. */
    private static GatewayRig narrow;
    /** The lossless-fabric checksum policy on every node (`--no-checksums`), a `nupa node` echoing on fabric node 1. */
    private static GatewayRig lossless;
    /**
     * A gateway and a fabric node (a `nupa node` echoing) that each drop, duplicate, reorder and corrupt the frames they
     * receive, as netem would (the kernel here may have none).
     */
    private static GatewayRig lossy;
    /** Checksum and segmentation offloads on the TAP (`--tap-offloads`), a `nupa node` echoing on fabric node 1. */
    private static GatewayRig offloaded;
    /** The same with the lossy rig's faults on the gateway and the fabric node. */
    private static GatewayRig offloadedLossy;
    /** A TAP of two queues (`--tap-queues 2`), each served by an event loop of the gateway node. */
    private static GatewayRig multiQueue;

    @BeforeAll
    static void start() throws Exception {
        String missing = Linux.missing("ip", "ping", "curl", "nc");
        Assumptions.assumeTrue(missing == null, () -> "skipping the gateway tests: " + missing
                + " is absent (apt-get install iproute2 iputils-ping curl netcat-openbsd)");
        Assumptions.assumeTrue(Files.isWritable(Path.of("/dev/net/tun")),
                "skipping the gateway tests: /dev/net/tun is not writable here (no TAP devices without it and CAP_NET_ADMIN)");
        Linux.Result made = Linux.run(10, "ip", "netns", "add", "nupa-gw-probe");
        Linux.run(10, "ip", "netns", "del", "nupa-gw-probe");
        Assumptions.assumeTrue(made.status() == 0, () -> "skipping the gateway tests: cannot create a network namespace: "
                + made.output());
        standard = GatewayRig.start(1500, 9000, true, "--tcp-echo", "7"); // the gateway node serves TCP echo itself
        narrow = GatewayRig.start(9000, 4000, false);
        lossless = GatewayRig.start(1500, 9000, false, List.of("--no-checksums", "--tcp-echo", "7", "--udp-echo", "9"),
                "--no-checksums");
        lossy = GatewayRig.start(1500, 9000, false, List.of("--tcp-echo", "7", "--link-faults", LOSSY), "--link-faults", LOSSY);
        offloaded = GatewayRig.start(1500, 9000, false, List.of("--tcp-echo", "7", "--udp-echo", "9"), "--tap-offloads");
        offloadedLossy = GatewayRig.start(1500, 9000, false, List.of("--tcp-echo", "7", "--link-faults", LOSSY), "--tap-offloads",
                "--link-faults", LOSSY);
        multiQueue = GatewayRig.start(1500, 9000, false, List.of("--tcp-echo", "7", "--udp-echo", "9"), "--tap-queues", "2");
    }

    private static final String LOSSY = "drop=0.02,duplicate=0.01,reorder=0.05,corrupt=0.001,seed=7";

    @AfterAll
    static void stop() throws IOException, InterruptedException {
        for (GatewayRig r : new GatewayRig[] {standard, narrow, lossless, lossy, offloaded, offloadedLossy, multiQueue}) {
            if (r != null) {
                r.stop();
            }
        }
    }

    private static Linux.Result inNs(long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        return standard.run(timeoutSeconds, cmd);
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

        // The gateway publishes its counters in the fabric: `nupa fabric info` shows them from the file alone.
        // Published every 200 ms: looked at until the pings' datagrams show.
        NupaCommandLineTest.Run info = fabricInfoWhen(standard.fabric(), out -> published(out, "ipv4_in") >= 10);
        assertEquals(0, info.status(), info.err());
        assertTrue(Pattern.compile("node 0 publishes gateway " + standard.tap() + " 192\\.168\\.77\\.\\d+/24:").matcher(info.out()).find(),
                info.out());
        assertTrue(published(info.out(), "ipv4_in") >= 10, "the pings' datagrams came in through the gateway: " + info.out());
        assertTrue(info.out().contains(" drop_ipv6 "), info.out());
    }

    @Test
    void linuxReachesTheGatewaysOwnTcpServiceAtItsTapAddress() throws Exception {
        // The gateway node's TCP echo, connected to at the gateway's Ethernet address: the connection answers from it.
        Linux.Result echo = Linux.run(20, "sh", "-c", "printf 'hello, gateway' | ip netns exec " + standard.ns() + " nc -N -w 5 "
                + GATEWAY + " 7");
        assertEquals(0, echo.status(), echo.output());
        assertEquals("hello, gateway", echo.output().strip());
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
    void aFabricNodeFetchesFromALinuxHttpServerThroughTheGateway() throws Exception {
        Assumptions.assumeTrue(Linux.missing("python3") == null, "python3 is absent: skipping the Linux HTTP server");
        Path dir = Files.createTempDirectory("nupa-gw-www-");
        byte[] page = new byte[3 << 20];
        new Random(9).nextBytes(page);
        Files.write(dir.resolve("page.bin"), page);
        Process server = new ProcessBuilder("ip", "netns", "exec", standard.ns(), "python3", "-m", "http.server", "8000",
                "--bind", GatewayRig.LINUX, "--directory", dir.toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            ChildJvm.waitUntil("Linux's HTTP server to listen", 30_000, () -> {
                try {
                    return standard.run(5, "curl", "-s", "-o", "/dev/null", "http://" + GatewayRig.LINUX + ":8000/").status() == 0;
                } catch (Exception e) {
                    return false;
                }
            });
            ChildJvm fetch = ChildJvm.start("fetch-" + standard.tap(), FabricFetchMain.class, standard.fabric(), 2,
                    "192.168.77.0/24 via 10.0.0.1", GatewayRig.LINUX, 8000, "/page.bin");
            try {
                String line = fetch.awaitLine("FETCHED", 90_000);
                assertEquals("FETCHED 200 " + page.length + " " + sha256(page), line,
                        "Vert.x's HTTP client on fabric node 2 read the page from Linux through the gateway");
            } finally {
                fetch.close();
            }
        } finally {
            server.destroy();
            server.waitFor(10, TimeUnit.SECONDS);
            Files.deleteIfExists(dir.resolve("page.bin"));
            Files.deleteIfExists(dir);
        }
    }

    @Test
    void ncEchoesUdpAndTcpThroughTheGatewayBothWays() throws Exception {
        Linux.Result udp = Linux.run(20, "sh", "-c", "printf 'hello, fabric' | ip netns exec " + standard.ns() + " nc -u -w 2 " + SERVER + " 9");
        assertEquals("hello, fabric", udp.output(), "the UDP echo on the fabric node answered through the gateway");
        assertTcpEcho(standard, ECHO_MIB);
    }

    /** MiB echoed each way on the clean paths: 256 in the suite; -Dnupa.test.echoMib=1024 for a 1 GiB run. */
    private static final int ECHO_MIB = Integer.getInteger("nupa.test.echoMib", 256);

    /**
     * {@code mib} MiB of seeded random bytes through `nc -N` to the TCP echo on the fabric node (port 7) and back
     * (from Linux to the fabric and from the fabric to Linux at once), compared by SHA-256 as they stream.
     */
    private static void assertTcpEcho(GatewayRig rig, int mib) throws Exception {
        Path sums = Files.createTempDirectory("nupa-gw-echo-");
        try {
            String source = "python3 -c 'import random, sys; r = random.Random(6); w = sys.stdout.buffer\n"
                    + "for _ in range(" + mib + "): w.write(r.randbytes(1 << 20))'";
            // -N: shut the write side down at the end of the input; the echo server then ends too.
            Linux.Result tcp = Linux.run(300, "bash", "-c", "set -o pipefail; " + source + " | tee >(sha256sum > " + sums.resolve("sent")
                    + ") | ip netns exec " + rig.ns() + " nc -N -w 30 " + SERVER + " 7 | sha256sum > " + sums.resolve("back"));
            assertEquals(0, tcp.status(), tcp.output());
            ChildJvm.waitUntil("the digest of what was sent", 30_000, () -> Files.exists(sums.resolve("sent"))
                    && fileText(sums.resolve("sent")).endsWith("\n"));
            String sent = fileText(sums.resolve("sent")).strip();
            String back = fileText(sums.resolve("back")).strip();
            assertTrue(sent.length() == 64 + 3 && !sent.startsWith("e3b0c442"), "something was sent: " + sent);
            assertEquals(sent, back, mib + " MiB echoed through the gateway, digest for digest");
        } finally {
            for (String f : new String[] {"sent", "back"}) {
                Files.deleteIfExists(sums.resolve(f));
            }
            Files.deleteIfExists(sums);
        }
    }

    private static String fileText(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";
        }
    }

    @Test
    void aLossyDuplicatingReorderingCorruptingPathStillEchoesEveryByte() throws Exception {
        // Every frame between the gateway and the fabric node may be lost (2%), delivered twice (1%), passed by the
        // next (5%) or have a byte flipped (0.1%), both ways: Linux's TCP and ours recover, and checksums catch what
        // was corrupted. (netem on the Linux side would do the same to the TAP; these kernels may not have it.)
        // 32 MiB in the suite (some 460 frames lost each way); -Dnupa.test.lossyMib=1024 for a 1 GiB run (about a minute here).
        assertLossyEcho(lossy, LOSSY_MIB, "lossy path");
    }

    private static final int LOSSY_MIB = Integer.getInteger("nupa.test.lossyMib", 32);

    /** {@link #assertTcpEcho} through a rig with faults: Linux retransmitted (the faults were there), and what it found. */
    private static void assertLossyEcho(GatewayRig rig, int mib, String what) throws Exception {
        long[] before = linuxTcpCounters(rig);
        long t0 = System.nanoTime();
        assertTcpEcho(rig, mib);
        long[] after = linuxTcpCounters(rig);
        System.out.printf("%s: %d MiB each way, sha256-equal, in %.1f s; Linux retransmitted %d segments and found %d with a"
                + " bad checksum%n", what, mib, (System.nanoTime() - t0) / 1e9, after[0] - before[0], after[1] - before[1]);
        assertTrue(after[0] > before[0], "the faults were there: Linux retransmitted what was lost");
    }

    /**
     * `nupa fabric info` of {@code fabric} once its output satisfies {@code ready} (the gateway publishes its counters
     * every 200 ms), or the last one after 10 s, for the assertions to say what was missing.
     */
    private static NupaCommandLineTest.Run fabricInfoWhen(Path fabric, java.util.function.Predicate<String> ready) throws Exception {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            NupaCommandLineTest.Run info = NupaCommandLineTest.here("fabric", "info", "--fabric", fabric.toString());
            if (info.status() != 0 || ready.test(info.out()) || System.nanoTime() > deadline) {
                return info;
            }
        }
    }

    /** The value of counter {@code name} in the first table of `nupa fabric info`'s {@code text}, or -1. */
    private static long published(String text, String name) {
        java.util.regex.Matcher m = Pattern.compile(" " + name + " (\\d+)").matcher(text);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    @Test
    void withOffloadsLinuxSuperFramesAreCutAndSegmentsToLinuxJoinedAndEveryByteArrives() throws Exception {
        // TCP both ways at once: Linux hands the TAP super-frames (TSO), the gateway cuts them; the echo's segments
        // toward Linux are joined into super-frames that Linux takes whole.
        assertTcpEcho(offloaded, ECHO_MIB);
        Linux.Result udp = Linux.run(20, "sh", "-c", "printf 'offloaded' | ip netns exec " + offloaded.ns() + " nc -u -w 2 " + SERVER + " 9");
        assertEquals("offloaded", udp.output(), "UDP, whose checksum Linux leaves partial, crosses the gateway completed");
        Linux.Result big = offloaded.run(30, "ping", "-c", "2", "-i", "0.2", "-W", "5", "-s", "8000", SERVER);
        assertTrue(big.output().contains("2 packets transmitted, 2 received"), big.output());
        List<String> offloads = List.of("rx_gso_frames", "rx_gso_segments", "rx_csum_completed", "tx_gso_frames", "tx_gso_segments");
        String info = fabricInfoWhen(offloaded.fabric(), out -> offloads.stream().allMatch(c -> published(out, c) > 0)).out();
        for (String c : offloads) {
            assertTrue(published(info, c) > 0, c + " shows the offloads at work: " + info);
        }
        assertEquals(0, published(info, "drop_bad_vnet"), info);
    }

    @Test
    void withOffloadsACorruptedSegmentIsNotJoinedButLeftForLinuxToDrop() throws Exception {
        // The gateway joins only segments whose checksum holds: one a fault corrupted on the fabric goes alone, with
        // its bad checksum, and Linux drops it and has it resent; the echo comes back whole.
        assertLossyEcho(offloadedLossy, LOSSY_MIB, "lossy offloaded path");
    }

    @Test
    void withTwoQueuesLinuxSpreadsFlowsAndEachLoopCarriesItsOwnBothWays() throws Exception {
        Linux.Result queues = multiQueue.run(10, "ls", "/sys/class/net/" + multiQueue.tap() + "/queues");
        assertTrue(queues.output().contains("rx-1") && queues.output().contains("tx-1"), "the TAP has two queues: " + queues.output());
        Linux.Result ping = multiQueue.run(30, "ping", "-c", "3", "-i", "0.2", "-W", "5", SERVER);
        assertTrue(ping.output().contains("3 packets transmitted, 3 received"), ping.output());
        Linux.Result udp = Linux.run(20, "sh", "-c", "printf 'two queues' | ip netns exec " + multiQueue.ns() + " nc -u -w 2 " + SERVER + " 9");
        assertEquals("two queues", udp.output());
        // Eight TCP echoes at once, 16 MiB each, each compared by SHA-256 as it streams.
        String flows = "set -o pipefail; for i in $(seq 1 8); do ( python3 -c 'import random, sys; r = random.Random('$i'); w = sys.stdout.buffer\n"
                + "for _ in range(16): w.write(r.randbytes(1 << 20))' | tee >(sha256sum > $D/sent$i) | ip netns exec " + multiQueue.ns()
                + " nc -N -w 30 " + SERVER + " 7 | sha256sum > $D/back$i ) & done; wait; sleep 1;"
                + " for i in $(seq 1 8); do grep -q e3b0c442 $D/sent$i && exit 2; cmp $D/sent$i $D/back$i || exit 1; done";
        Path dir = Files.createTempDirectory("nupa-gw-mq-");
        try {
            Linux.Result r = Linux.run(300, "bash", "-c", "D=" + dir + "; " + flows);
            assertEquals(0, r.status(), "eight flows echoed whole: " + r.output());
        } finally {
            for (int i = 1; i <= 8; i++) {
                Files.deleteIfExists(dir.resolve("sent" + i));
                Files.deleteIfExists(dir.resolve("back" + i));
            }
            Files.deleteIfExists(dir);
        }
        // Each queue publishes its counters from its loop's fabric node: both carried frames each way.
        List<String> tables = List.of("gateway " + multiQueue.tap() + " 192", "gateway " + multiQueue.tap() + " queue 1 192");
        String info = fabricInfoWhen(multiQueue.fabric(), out -> tables.stream().allMatch(t -> out.contains(t)
                && published(out.substring(out.indexOf(t)), "rx_frames") > 100 && published(out.substring(out.indexOf(t)), "tx_frames") > 100)).out();
        for (String table : tables) {
            int at = info.indexOf(table);
            assertTrue(at >= 0, table + " is published: " + info);
            String rest = info.substring(at);
            for (String c : List.of("rx_frames", "tx_frames")) {
                assertTrue(published(rest, c) > 100, table + " " + c + ": " + rest);
            }
        }
    }

    /** Linux's TCP RetransSegs and InCsumErrors in the rig's namespace (/proc/net/snmp is per namespace). */
    private static long[] linuxTcpCounters(GatewayRig rig) throws Exception {
        String[] lines = rig.run(10, "cat", "/proc/net/snmp").output().lines().filter(l -> l.startsWith("Tcp:")).toArray(String[]::new);
        List<String> names = List.of(lines[0].split("\\s+"));
        String[] values = lines[1].split("\\s+");
        return new long[] {Long.parseLong(values[names.indexOf("RetransSegs")]), Long.parseLong(values[names.indexOf("InCsumErrors")])};
    }

    @Test
    void aFabricWithoutChecksumsMeetsLinuxWithEveryChecksumRightAndBadOnesDropped() throws Exception {
        // Every node of the fabric runs the lossless policy; what crosses the gateway is checksummed by its sender
        // and verified by its receiver all the same (IpConfig.computesTo, verifiesFrom).
        String pcap = captured(lossless, () -> {
            Linux.Result ping = lossless.run(30, "ping", "-c", "2", "-i", "0.3", "-W", "5", "-s", "8000", SERVER);
            assertTrue(ping.output().contains("2 packets transmitted, 2 received"), ping.output());
            Linux.Result udp = Linux.run(20, "sh", "-c", "printf 'no sums inside' | ip netns exec " + lossless.ns() + " nc -u -w 2 " + SERVER + " 9");
            assertEquals("no sums inside", udp.output(), "Linux took the echo, whose UDP checksum it verified");
            assertTcpEcho(lossless, 4); // Linux drops a TCP segment whose checksum is wrong, and 0 is wrong
        });
        if (pcap != null) {
            String zeroUdpSums = Linux.stdout(60, "tshark", "-r", pcap, "-Y", "udp && ip.src == " + SERVER + " && udp.checksum == 0");
            assertEquals("", zeroUdpSums.strip(), "UDP leaving the fabric carries a checksum, not 0 (none)");
        }
        // A datagram from Linux with a wrong UDP checksum is dropped by the node, though its policy verifies nothing
        // from the fabric; the same datagram with the right checksum is echoed.
        Linux.Result raw = lossless.run(30, "python3", "-c", BAD_CHECKSUM_PROBE, GatewayRig.LINUX, SERVER);
        assertEquals("bad: no answer; good: echoed", raw.output().strip(), raw.output());
    }

    /** Sends UDP datagrams to port 9 of argv[2] from argv[1] by a raw socket: one with a wrong checksum, then a right one. */
    private static final String BAD_CHECKSUM_PROBE = """
            import socket, struct, sys
            src, dst = sys.argv[1], sys.argv[2]
            rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            rx.bind((src, 0))
            rx.settimeout(2.0)
            port = rx.getsockname()[1]
            raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
            def datagram(payload, wrong):
                length = 8 + len(payload)
                words = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack('!BBH', 0, 17, length)
                words += struct.pack('!HHHH', port, 9, length, 0) + payload + (b'\\0' if len(payload) % 2 else b'')
                total = sum(struct.unpack('!%dH' % (len(words) // 2), words))
                while total >> 16:
                    total = (total & 0xFFFF) + (total >> 16)
                checksum = (~total & 0xFFFF) or 0xFFFF
                if wrong:
                    checksum ^= 0x0101
                return struct.pack('!HHHH', port, 9, length, checksum) + payload
            def answered(payload, wrong):
                raw.sendto(datagram(payload, wrong), (dst, 0))
                try:
                    return rx.recv(2048) == payload
                except socket.timeout:
                    return False
            bad = answered(b'corrupted on the way', True)
            good = answered(b'intact', False)
            print('bad: ' + ('echoed' if bad else 'no answer') + '; good: ' + ('echoed' if good else 'no answer'))
            """;

    @Test
    void aDatagramTooBigForTheFabricWithDontFragmentGetsFragmentationNeededAndLinuxLearnsThePathMtu() throws Exception {
        // 5,028 bytes with DF set (-M do) fit the 9000-byte TAP but not the 4000-byte fabric: the gateway answers
        // fragmentation needed with the fabric's MTU (RFC 1191), and Linux's route cache takes it.
        Linux.Result first = narrow.run(30, "ping", "-c", "1", "-W", "3", "-M", "do", "-s", "5000", SERVER);
        assertTrue(first.output().contains("Frag needed and DF set (mtu = 4000)"), first.output());
        Linux.Result route = narrow.run(10, "ip", "route", "get", SERVER);
        assertTrue(route.output().contains("mtu 4000"), "Linux's path MTU cache learned the fabric's MTU: " + route.output());
        Linux.Result again = narrow.run(30, "ping", "-c", "1", "-W", "3", "-M", "do", "-s", "5000", SERVER);
        assertTrue(again.output().contains("message too long, mtu=4000"), "Linux now refuses it itself: " + again.output());
        // Without DF, Linux fragments to the path MTU it learned and the node answers.
        Linux.Result fits = narrow.run(30, "ping", "-c", "2", "-i", "0.3", "-W", "3", "-s", "5000", SERVER);
        assertTrue(fits.output().contains("2 packets transmitted, 2 received"), fits.output());
    }

    @Test
    void tsharkOnTheTapSeesNoMalformedPacketAndNoBadChecksum() throws Exception {
        Assumptions.assumeTrue(Linux.missing("tshark") == null, "tshark is absent (apt-get install tshark): skipping the capture check");
        String pcap = captured(standard, () -> {
            inNs(10, "ip", "neigh", "flush", "dev", standard.tap()); // so that Linux asks ARP again, into the capture
            inNs(30, "ping", "-c", "2", "-i", "0.2", "-s", "8000", SERVER);
            inNs(30, "curl", "-sS", "--max-time", "20", "http://" + SERVER + ":8080/hello");
            Linux.run(20, "sh", "-c", "printf 'checked' | ip netns exec " + standard.ns() + " nc -u -w 1 " + SERVER + " 9");
        });
        List<String> all = new ArrayList<>(List.of("tshark", "-r", pcap));
        all.addAll(List.of(CHECKS));
        all.addAll(List.of("-T", "fields", "-e", "frame.protocols"));
        String protocols = Linux.stdout(60, all.toArray(String[]::new));
        assertTrue(protocols.contains("eth:ethertype:arp"), "ARP was seen:\n" + protocols);
        assertTrue(protocols.contains(":icmp") && protocols.contains(":tcp") && protocols.contains(":udp"), protocols);
    }

    /** tshark's checksum checks, off by default. */
    private static final String[] CHECKS = {"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"};

    interface Traffic {
        void run() throws Exception;
    }

    /**
     * Runs {@code traffic} while tshark captures on the rig's TAP (in the namespace), checks that the capture holds
     * no malformed packet and no bad IP, ICMP, UDP or TCP checksum, and returns its path (removed after the tests);
     * without tshark, runs the traffic alone and returns null.
     */
    private static String captured(GatewayRig rig, Traffic traffic) throws Exception {
        if (Linux.missing("tshark") != null) {
            System.out.println("tshark is absent (apt-get install tshark): the traffic runs without the capture check");
            traffic.run();
            return null;
        }
        Path pcap = Files.createTempFile("nupa-gw-", ".pcap");
        pcap.toFile().deleteOnExit();
        Process capture = Linux.capture(rig.ns(), rig.tap(), pcap);
        try {
            traffic.run();
        } finally {
            Linux.endCapture(capture);
        }
        List<String> bad = new ArrayList<>(List.of("tshark", "-r", pcap.toString()));
        bad.addAll(List.of(CHECKS));
        bad.addAll(List.of("-Y", "_ws.malformed || ip.checksum.status == 0 || udp.checksum.status == 0"
                + " || tcp.checksum.status == 0 || icmp.checksum.status == 0"));
        assertEquals("", Linux.stdout(60, bad.toArray(String[]::new)).strip(),
                "tshark found malformed packets or bad checksums on the TAP");
        return pcap.toString();
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}
