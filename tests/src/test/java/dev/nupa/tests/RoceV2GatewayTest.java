package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * RoCEv2 on the wire: two fabrics, each behind a gateway (`nupa node --tap`), with Linux routing between the two TAP
 * devices in a network namespace of its own. An RC QP on fabric A's node 1 and one on fabric B's node 1 connect by IP
 * address ({@link RoceV2PeerMain}); a MiB WRITE, a SEND with immediate, a MiB READ and an atomic cross Ethernet as
 * IPv4/UDP 4791 with an ICRC. tshark on fabric A's TAP decodes every such frame as InfiniBand, and an ICRC check written
 * apart from ours (Python's zlib, IBA 7.8.1 and annex A17) finds every ICRC right. A datagram to port 4791 with a wrong
 * ICRC, sent from Linux, is dropped by the gateway and counted. Gateway A marks ECN (RFC 3168) on what it sends toward
 * its TAP from a backlog of one frame ({@code --tap-ecn-threshold 1}): the WRITE's ECT(0) datagrams cross Linux as CE,
 * node B answers them with CNPs (IBA annex A17.9) that cross back, and node A's DCQCN lowers its rate, the data
 * arriving whole all the same. Everything it creates is removed afterwards.
 */
@Tag("linux")
class RoceV2GatewayTest {
    @Test
    void rdmaBetweenTwoFabricsCrossesLinuxAsRoceV2WithGoodIcrcs() throws Exception {
        String missing = Linux.missing("python3");
        Assumptions.assumeTrue(missing == null, () -> "skipping the RoCEv2 gateway test: " + missing + " is absent");
        Path exchange = Files.createTempDirectory("nupa-rocev2-");
        Path pcap = Files.createTempFile("nupa-rocev2-", ".pcap");
        Process capture = null;
        // Gateway A marks ECN on what it sends toward its TAP from a backlog of one frame (DCQCN end to end, below).
        try (TwoFabrics t = TwoFabrics.start("rr", 77, 78, List.of("--tap-ecn-threshold", "1"), List.of())) {
            Path fabricA = t.fabricA;
            Path fabricB = t.fabricB;
            String ns = t.ns;
            boolean tshark = Linux.missing("tshark") == null;
            if (tshark) {
                capture = Linux.capture(ns, t.tapA, pcap);
            } else {
                System.out.println("tshark is absent (apt-get install tshark): the RDMA runs without the capture checks");
            }

            ChildJvm server = t.start("rocev2-server", RoceV2PeerMain.class, fabricB, 1, "10.0.1.2/24",
                    "10.0.0.0/24 via 10.0.1.1", "server", exchange, 90_000);
            ChildJvm client = t.start("rocev2-client", RoceV2PeerMain.class, fabricA, 1, "10.0.0.2/24",
                    "10.0.1.0/24 via 10.0.0.1", "client", exchange, 90_000);
            Map<String, String> c = client.awaitResult(120_000);
            Map<String, String> s = server.awaitResult(30_000);
            System.out.println("RoceV2GatewayTest: client " + c + ", server " + s);
            assertEquals("ok", c.get("outcome"), client.output());
            assertEquals("ok", s.get("outcome"), "the server found the written MiB's CRC-32 in the immediate: " + server.output());
            for (Map<String, String> r : List.of(c, s)) {
                assertEquals(0, ChildJvm.num(r, "bad_icrc"));
                assertEquals(0, ChildJvm.num(r, "not_rocev2"), "every packet went as RoCEv2, none as a fabric frame");
                assertEquals(0, ChildJvm.num(r, "send_failed"), "a full ring held packets back, it lost none");
            }
            // A MiB at path MTU 1024 each way (WRITE, READ responses): over 2,048 packets crossed, plus ACKs.
            assertTrue(ChildJvm.num(c, "sent") >= 1024 && ChildJvm.num(s, "sent") >= 1024, c + " " + s);
            // DCQCN end to end: CE marked at gateway A reached B, whose CNPs reached A, which slowed its QP.
            assertTrue(ChildJvm.num(s, "cnps_sent") > 0, "node B answered CE with CNPs: " + s);
            assertTrue(ChildJvm.num(c, "cnps_received") > 0 && ChildJvm.num(c, "rate_decreases") > 0,
                    "node A took CNPs and lowered its rate: " + c);

            // A datagram to 4791 whose last 4 bytes are no ICRC, from Linux: gateway B drops it and counts it.
            Linux.ok("ip", "netns", "exec", ns, "python3", "-c", "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
                    + " s.sendto(bytes([4, 0, 255, 255, 0, 0, 0, 2, 0, 0, 0, 1]) + bytes(16) + b'NOPE', ('10.0.1.2', 4791))");
            // The gateways publish their counters every 200 ms: looked at until B counted the forged datagram.
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (gatewayCounters(fabricB).getOrDefault("drop_bad_icrc", 0L) < 1 && System.nanoTime() < deadline) {
                // each look runs `nupa fabric info` in a JVM of its own, which paces the loop
            }
            Map<String, Long> gwA = gatewayCounters(fabricA);
            Map<String, Long> gwB = gatewayCounters(fabricB);
            System.out.println("RoceV2GatewayTest: gateway A " + gwA + ", gateway B " + gwB);
            assertTrue(gwA.getOrDefault("rocev2_out", 0L) >= 1024 && gwA.getOrDefault("rocev2_in", 0L) >= 1024, gwA.toString());
            assertTrue(gwB.getOrDefault("rocev2_out", 0L) >= 1024 && gwB.getOrDefault("rocev2_in", 0L) >= 1024, gwB.toString());
            assertEquals(0L, gwA.getOrDefault("drop_bad_icrc", 0L), gwA.toString());
            assertEquals(1L, gwB.getOrDefault("drop_bad_icrc", 0L), "the forged datagram, and only it: " + gwB);
            assertTrue(gwA.getOrDefault("ecn_marked_out", 0L) > 0, "gateway A marked CE toward its TAP: " + gwA);

            if (capture != null) {
                Process running = capture;
                capture = null;
                Linux.endCapture(running);
                checkRoceCapture(pcap, 2048, List.of("RC RDMA Write First", "RC RDMA Write Middle", "RC RDMA Write Last",
                        "RC Send Only Immediate", "RC RDMA Read Request", "RC RDMA Read Response First",
                        "RC RDMA Read Response Last", "RC Fetch Add", "RC Atomic Acknowledge", "RC Acknowledge"));
                // On the wire between the gateways: A's WRITE as CE (ECN 3), B's CNPs (opcode 0x81) back to A.
                String ce = Linux.stdout(60, "tshark", "-r", pcap.toString(), "-Y",
                        "udp.dstport == 4791 && ip.src == 10.0.0.2 && ip.dsfield.ecn == 3", "-T", "fields", "-e", "frame.number");
                assertTrue(ce.lines().count() > 0, "CE-marked RoCEv2 from node A crossed Linux");
                String cnps = Linux.stdout(60, "tshark", "-r", pcap.toString(), "-Y",
                        "udp.dstport == 4791 && ip.src == 10.0.1.2 && infiniband.bth.opcode == 129", "-T", "fields",
                        "-e", "frame.number");
                assertTrue(cnps.lines().count() > 0, "node B's CNPs crossed Linux toward A");
            }
        } finally {
            if (capture != null) {
                capture.destroyForcibly();
            }
            Files.deleteIfExists(pcap);
            for (String f : List.of("client.properties", "server.properties", "done")) {
                Files.deleteIfExists(exchange.resolve(f));
            }
            Files.deleteIfExists(exchange);
        }
    }

    /** The gateway's counters as `nupa fabric info` shows them from the fabric file (name to value). */
    private static Map<String, Long> gatewayCounters(Path fabric) throws Exception {
        NupaCli.Run info = NupaCli.here("fabric", "info", "--fabric", fabric.toString());
        assertEquals(0, info.status(), info.err());
        Map<String, Long> counters = new java.util.TreeMap<>();
        Matcher m = Pattern.compile(" (rocev2_in|rocev2_out|drop_bad_icrc|drop_bad_rocev2|ecn_marked_out) (\\d+)").matcher(info.out());
        while (m.find()) {
            counters.put(m.group(1), Long.parseLong(m.group(2)));
        }
        assertTrue(counters.containsKey("rocev2_in"), "the gateway publishes its RoCEv2 counters: " + info.out());
        return counters;
    }

    /**
     * Every UDP 4791 frame of the capture decodes as InfiniBand, nothing is malformed, tshark names each of
     * {@code opcodes}, there are at least {@code frames} RoCEv2 frames, and every ICRC holds.
     */
    static void checkRoceCapture(Path pcap, long frames, List<String> opcodes) throws Exception {
        // RPC-over-RDMA's heuristic takes any short SEND's payload for its header and calls it malformed: it is off. An
        // ICMP error quotes a RoCEv2 datagram cut short (a DREP that came after the node left), not one to decode.
        String bad = Linux.stdout(120, "tshark", "-r", pcap.toString(), "--disable-protocol", "rpcordma", "-o", "ip.check_checksum:TRUE",
                "-Y", "_ws.malformed || ip.checksum.status == 0 || (udp.dstport == 4791 && !infiniband && !icmp)");
        assertEquals("", bad.strip(), "tshark found malformed packets, bad IP checksums or undecoded RoCEv2");
        String summary = Linux.stdout(120, "tshark", "-r", pcap.toString(), "-Y", "infiniband");
        for (String name : opcodes) {
            assertTrue(summary.contains(name), "tshark names \"" + name + "\" on the wire");
        }
        String icrc = Linux.stdout(60, "python3", "-c", ICRC_CHECK, pcap.toString()).strip();
        Matcher m = Pattern.compile("frames=(\\d+) good=(\\d+)").matcher(icrc);
        assertTrue(m.find(), icrc);
        assertTrue(Long.parseLong(m.group(1)) >= frames, "the capture holds the RDMA traffic: " + icrc);
        assertEquals(m.group(1), m.group(2), "every RoCEv2 frame's ICRC holds: " + icrc);
    }

    /**
     * The ICRC of each UDP 4791 frame of a pcap file, computed apart from our code (IBA 7.8.1, annex A17.3.3): CRC-32
     * over 8 bytes of ones, the IPv4 header with TOS, TTL and checksum as ones, the UDP header with its checksum as
     * ones, the BTH with byte 4 as ones, and the rest up to the ICRC, which is sent least significant byte first.
     */
    private static final String ICRC_CHECK = String.join("\n",
            "import struct, sys, zlib",
            "d = open(sys.argv[1], 'rb').read()",
            "assert d[:4] == b'\\xd4\\xc3\\xb2\\xa1', 'a little-endian pcap file'",
            "o, n, good = 24, 0, 0",
            "while o + 16 <= len(d):",
            "    size = struct.unpack('<I', d[o + 8:o + 12])[0]",
            "    f = d[o + 16:o + 16 + size]",
            "    o += 16 + size",
            "    if len(f) < 42 or f[12:14] != b'\\x08\\x00':",
            "        continue",
            "    ip = f[14:]",
            "    ihl = (ip[0] & 15) * 4",
            "    if ip[9] != 17 or struct.unpack('>H', ip[ihl + 2:ihl + 4])[0] != 4791:",
            "        continue",
            "    ip = ip[:struct.unpack('>H', ip[2:4])[0]]",
            "    m = bytearray(ip[:-4])",
            "    m[1] = 0xff; m[8] = 0xff; m[10:12] = b'\\xff\\xff'; m[ihl + 6:ihl + 8] = b'\\xff\\xff'; m[ihl + 8 + 4] = 0xff",
            "    n += 1",
            "    good += ip[-4:] == struct.pack('<I', zlib.crc32(b'\\xff' * 8 + bytes(m)) & 0xffffffff)",
            "print('frames=%d good=%d' % (n, good))");
}
