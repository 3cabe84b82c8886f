package dev.nupa.tests;

import static dev.nupa.tests.ClusterTestSupport.request;
import static dev.nupa.tests.ClusterTestSupport.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * One Vert.x cluster over two fabrics, each behind a gateway (`nupa node --tap`), with Linux routing between the two TAP
 * devices in a network namespace of its own, as two hosts would: member X on fabric A (10.0.0.2), member Y on fabric B
 * (10.0.1.2) and this JVM on fabric A (10.0.0.3); Hazelcast's membership on loopback. Requests to X stay on fabric A;
 * requests to Y, publishes to both and Y's messages to X cross the gateways as TCP. tshark on fabric A's TAP finds only
 * well-formed TCP there, Y's among it, and nothing between the two members of fabric A. Everything it creates is removed.
 */
@Tag("linux")
class EventBusAcrossFabricsTest {
    @Test
    void membersOnTwoFabricsFormOneClusterThroughTheGateways() throws Exception {
        Path pcap = Files.createTempFile("nupa-eventbus-", ".pcap");
        Process capture = null;
        Vertx self;
        Vertx[] selfHolder = new Vertx[1];
        // Jumbo frames on the TAPs: the event bus's TCP segments cross without fragmentation.
        List<String> jumbo = List.of("--tap-mtu", "9000");
        // The members (children of the rig) outlive this JVM's own one, which leaves the cluster first.
        try (TwoFabrics t = TwoFabrics.start("eb", 79, 80, jumbo, jumbo); AutoCloseable leave = () -> closeSelf(selfHolder[0])) {
            Path fabricA = t.fabricA;
            Path fabricB = t.fabricB;
            boolean tshark = Linux.missing("tshark") == null;
            if (tshark) {
                capture = Linux.capture(t.ns, t.tapA, pcap);
            } else {
                System.out.println("tshark is absent (apt-get install tshark): the cluster runs without the capture checks");
            }

            int[] ports = {freePort(), freePort(), freePort()};
            String members = "127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2];
            String name = "eb-x-" + UUID.randomUUID();
            ChildJvm x = t.start("member-X", ClusterMemberMain.class, fabricA, 1, ports[0], members, name, "X",
                    "10.0.0.2/24", "10.0.1.0/24 via 10.0.0.1");
            ChildJvm y = t.start("member-Y", ClusterMemberMain.class, fabricB, 1, ports[1], members, name, "Y",
                    "10.0.1.2/24", "10.0.0.0/24 via 10.0.1.1");
            StackConfig here = StackConfig.defaults(fabricA, 2).withIp(IpConfig.parse("10.0.0.3/24"))
                    .withRoutes(List.of(Route.parse("10.0.1.0/24 via 10.0.0.1")));
            self = selfHolder[0] = NupaCluster.create(here, ClusterConfig.loopback(ports[2], List.of(members.split(","))).withName(name)
                    .withFailureDetection(Duration.ofSeconds(5))).await(90, TimeUnit.SECONDS);
            x.awaitLine("READY X", 90_000);
            y.awaitLine("READY Y", 90_000);

            for (int i = 0; i < 20; i++) {
                assertEquals("X:a" + i, request(self, "only.X", "a" + i)); // stays on fabric A
                assertEquals("Y:b" + i, request(self, "only.Y", "b" + i)); // crosses both gateways and back
            }
            int n = 50;
            for (int i = 0; i < n; i++) {
                self.eventBus().publish("news", "n" + i);
            }
            Vertx from = self;
            for (String member : List.of("X", "Y")) {
                ChildJvm.waitUntil(member + " received every published message", 30_000,
                        () -> Long.parseLong(request(from, "ctl." + member, "count")) >= n);
                assertEquals(n, Long.parseLong(request(self, "ctl." + member, "count")), member + " received a message twice");
            }
            // Member to member across the gateways, in order: Y sends to X.
            assertEquals("sent 500", request(self, "ctl.Y", "spray X 500"));
            ChildJvm.waitUntil("X received Y's messages", 30_000, () -> request(from, "ctl.X", "seq").startsWith("received=500 "));
            assertEquals("received=500 outOfOrder=0", request(self, "ctl.X", "seq"));

            if (capture != null) {
                Process running = capture;
                capture = null;
                Linux.endCapture(running);
                String bad = Linux.stdout(120, "tshark", "-r", pcap.toString(), "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
                        "-Y", "_ws.malformed || ip.checksum.status == 0 || tcp.checksum.status == 0 || (ip && !tcp)");
                assertEquals("", bad.strip(), "tshark found on fabric A's TAP malformed frames, bad checksums or IP other than TCP");
                String crossing = Linux.stdout(120, "tshark", "-r", pcap.toString(), "-Y", "tcp && ip.addr == 10.0.1.2 && tcp.len > 0");
                assertTrue(!crossing.isBlank(), "the event bus's TCP to and from Y crossed fabric A's TAP");
                System.out.println("EventBusAcrossFabricsTest: " + crossing.strip().split("\n").length
                        + " TCP segments with data to or from Y on fabric A's TAP");
                String local = Linux.stdout(120, "tshark", "-r", pcap.toString(), "-Y", "ip.addr == 10.0.0.2 && ip.addr == 10.0.0.3");
                assertEquals("", local.strip(), "traffic between the members of fabric A stays on the fabric");
            }
        } finally {
            if (capture != null) {
                capture.destroyForcibly();
            }
            Files.deleteIfExists(pcap);
        }
    }

    private static void closeSelf(Vertx self) throws Exception {
        if (self != null) {
            self.close().await(30, TimeUnit.SECONDS);
        }
    }
}
