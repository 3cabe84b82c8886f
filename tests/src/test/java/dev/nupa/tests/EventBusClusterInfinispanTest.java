package dev.nupa.tests;

import static dev.nupa.tests.ClusterTestSupport.request;
import static dev.nupa.tests.ClusterTestSupport.freePort;
import static dev.nupa.tests.ClusterTestSupport.untilNoHandlers;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link EventBusClusterTest}'s cluster with Infinispan as the cluster manager: members A and B in child JVMs
 * ({@link ClusterMemberMain}, nodes 0 and 1) and this JVM (node 2), JGroups on loopback, the event bus over the fabric.
 * Request-reply reaches both members; B is killed with SIGKILL and its consumers leave within the failure detection
 * (5 s here), after which a request to them fails with NO_HANDLERS while A still answers.
 */
@Tag("process")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EventBusClusterInfinispanTest {
    @Test
    void requestReplyAndAKilledMemberLeaves() throws Exception {
        Path fabric = ChildJvm.newFabricPath();
        int[] ports = {freePort(), freePort(), freePort()};
        String members = "127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2];
        String name = "ebi-" + UUID.randomUUID();
        ChildJvm a = null;
        ChildJvm b = null;
        Vertx self = null;
        try {
            a = ChildJvm.start("member-A", ClusterMemberMain.class, "--cluster-manager", "infinispan", fabric, 0, ports[0],
                    members, name, "A");
            b = ChildJvm.start("member-B", ClusterMemberMain.class, "--cluster-manager", "infinispan", fabric, 1, ports[1],
                    members, name, "B");
            ClusterConfig cluster = ClusterConfig.loopback(ports[2], List.of(members.split(",")))
                    .withManager(ClusterConfig.Manager.INFINISPAN).withName(name).withFailureDetection(Duration.ofSeconds(5));
            self = NupaCluster.create(StackConfig.defaults(fabric, 2), cluster).await(90, TimeUnit.SECONDS);
            a.awaitLine("READY A", 90_000);
            b.awaitLine("READY B", 90_000);
            Vertx v = self;

            // Registrations reach this member through Infinispan's registry: ask until both members have answered.
            Set<String> seen = new HashSet<>();
            ChildJvm.waitUntil("both members answer on svc", 30_000, () -> {
                String reply;
                try {
                    reply = request(v, "svc", "hi");
                } catch (ReplyException e) {
                    assertEquals(ReplyFailure.NO_HANDLERS, e.failureType(), e.toString()); // not known here yet
                    return false;
                }
                assertEquals("hi", reply.split(":")[1], reply);
                seen.add(reply.split(":")[0]);
                return seen.containsAll(Set.of("A", "B"));
            });
            assertEquals("B:x", request(v, "only.B", "x"));
            assertTrue(NupaVertx.stack(self).tcp().connections() >= 2,
                    "this node holds " + NupaVertx.stack(self).tcp().connections() + " TCP connections on the fabric");

            b.kill();
            // Until JGroups drops B, a request to B's own address times out; then it fails at once with NO_HANDLERS.
            System.out.println("EventBusClusterInfinispanTest: B's consumers left " + untilNoHandlers(self, "only.B")
                    + " ms after SIGKILL");
            for (int i = 0; i < 10; i++) {
                assertEquals("A:k" + i, request(v, "svc", "k" + i));
            }
        } finally {
            if (self != null) {
                self.close().await(30, TimeUnit.SECONDS);
            }
            if (a != null) {
                a.close();
            }
            if (b != null) {
                b.close();
            }
            Files.deleteIfExists(fabric);
        }
    }
}
