package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.gateway.EthernetFrame;
import dev.nupa.gateway.EthernetInterface;
import dev.nupa.ip.wire.Ipv4Address;

/**
 * The gateway's Ethernet side is untrusted: a scapy script (Debian's python3-scapy) sends it every kind of
 * frame it must drop (short frames, other stations' and group addresses, VLAN tags, IPv6, unknown EtherTypes,
 * bad ARP, spoofed fabric sources, bad IP headers) and floods of ARP, SYNs from spoofed sources and IP
 * fragments, while curl keeps
 * fetching from a fabric node through it. Nothing crashes, curl goes on succeeding, and the gateway's
 * counters, printed when it stops, show each kind of drop.
 */
@Tag("linux")
class GatewayHostileFramesTest {
    private static final Path SCRIPT = Path.of("src/test/resources/hostile-frames.py");
    private static final String PYTHON = "/usr/bin/python3"; // Debian's, which has scapy

    @Test
    void hostileFramesAreCountedAndDroppedWhileCurlKeepsSucceeding() throws Exception {
        String missing = Linux.missing("ip", "curl", PYTHON);
        Assumptions.assumeTrue(missing == null, () -> "skipping: " + missing + " is absent (apt-get install iproute2 curl python3-scapy)");
        Assumptions.assumeTrue(Linux.run(10, PYTHON, "-c", "import scapy").status() == 0,
                "skipping: scapy is absent (apt-get install python3-scapy)");
        Assumptions.assumeTrue(Files.isWritable(Path.of("/dev/net/tun")), "skipping: /dev/net/tun is not writable here");
        GatewayRig rig = GatewayRig.start(1500, 9000, true, "--grpc", "127.0.0.1:0");
        try {
            AtomicBoolean done = new AtomicBoolean();
            AtomicInteger ok = new AtomicInteger();
            AtomicInteger failed = new AtomicInteger();
            Thread curls = Thread.ofPlatform().start(() -> {
                while (!done.get()) {
                    try {
                        Linux.Result r = rig.run(20, "curl", "-sS", "--max-time", "5",
                                "http://" + GatewayRig.SERVER + ":8080/hello");
                        (r.status() == 0 && r.output().equals("hello over the fabric\n") ? ok : failed).incrementAndGet();
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
            });
            String mac = EthernetFrame.macToString(EthernetInterface.localMac(Ipv4Address.parse(GatewayRig.GATEWAY)));
            Linux.Result sent = rig.run(300, PYTHON, SCRIPT.toAbsolutePath().toString(), rig.tap(), mac, GatewayRig.GATEWAY,
                    GatewayRig.SERVER, GatewayRig.LINUX);
            assertEquals(0, sent.status(), sent.output());
            assertTrue(sent.output().contains("sent fragment-flood 2000"), sent.output());
            // Linux's own SYN flooder, from random sources at 10,000 SYNs a second for 3 s, at the fabric node's
            // HTTP port through the gateway (the node answers with SYN cookies once its backlog is full).
            String synFlood = "skipped (hping3 is absent: apt-get install hping3)";
            if (Linux.missing("hping3") == null) {
                Linux.Result flood = rig.run(60, "hping3", "-q", "-S", "-p", "8080", "-i", "u100", "-c", "30000", "--rand-source",
                        GatewayRig.SERVER);
                assertTrue(flood.output().contains("30000 packets transmitted"), flood.output());
                synFlood = "30000 SYNs sent";
            }
            Thread.sleep(1000); // curl goes on after the floods
            done.set(true);
            curls.join(30_000);
            System.out.println("GatewayHostileFramesTest: curl " + ok.get() + " ok, " + failed.get() + " failed; hping3 SYN flood: "
                    + synFlood + "; " + sent.output());
            assertTrue(ok.get() >= 3, "curl kept fetching through the gateway: " + ok.get() + " ok");
            assertEquals(0, failed.get(), "no curl failed");

            // The gateway's counters, from its node's gRPC Admin service.
            Map<String, Long> g = counters(rig, "gateway");
            Map<String, Long> ip = counters(rig, "ip");
            for (String drop : new String[] {"drop_not_for_us", "drop_multicast", "drop_bad_source_mac", "drop_vlan",
                    "drop_ipv6", "drop_ethertype", "drop_bad_arp", "drop_spoofed", "drop_broadcast"}) {
                assertTrue(g.getOrDefault(drop, 0L) >= 5, drop + " counted each of its 5 frames: " + g);
            }
            assertTrue(g.getOrDefault("arp_requests_in", 0L) >= 3000, "the ARP flood was seen: " + g);
            assertTrue(g.getOrDefault("arp_replies_out", 0L) + g.getOrDefault("proxy_arp_replies", 0L) < 100,
                    "and not answered (none asked for the gateway or a fabric node): " + g);
            assertTrue(g.getOrDefault("drop_bad_arp", 0L) >= 10, "bad and short ARP: " + g);
            assertTrue(g.getOrDefault("drop_arp_queue_full", 0L) > 0,
                    "SYN-ACKs to spoofed sources found the ARP cache's bound: " + g);
            assertTrue(ip.getOrDefault("in_hdr_errors", 0L) + ip.getOrDefault("in_truncated", 0L) >= 15,
                    "bad IP checksums, header lengths and short datagrams: " + ip);
            assertTrue(ip.getOrDefault("forw_ttl_exceeded", 0L) >= 5, "TTL 1 is not forwarded: " + ip);
            assertTrue(rig.children().get(0).process.isAlive(), "the gateway runs on");
        } finally {
            rig.stop();
        }
    }

    /** The counters of {@code layer} from the gateway node's Admin service (its port is on its first line). */
    private static Map<String, Long> counters(GatewayRig rig, String layer) throws Exception {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("gRPC on 127\\.0\\.0\\.1:(\\d+)")
                .matcher(rig.children().get(0).awaitLine("nupa node:", 10_000));
        assertTrue(m.find(), "the gateway's first line names its gRPC port");
        io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
        try {
            dev.nupa.node.admin.AdminGrpcClient admin = dev.nupa.node.admin.AdminGrpcClient.create(
                    io.vertx.grpc.client.GrpcClient.client(vertx),
                    io.vertx.core.net.SocketAddress.inetSocketAddress(Integer.parseInt(m.group(1)), "127.0.0.1"));
            dev.nupa.node.admin.Counters c = admin.getCounters(dev.nupa.node.admin.CountersRequest.newBuilder()
                    .setLayer(layer).build()).await(10, TimeUnit.SECONDS);
            Map<String, Long> out = new HashMap<>();
            c.getCountersList().forEach(v -> out.put(v.getName(), v.getValue()));
            return out;
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }
}
