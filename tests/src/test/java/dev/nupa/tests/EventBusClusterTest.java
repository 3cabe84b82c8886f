package dev.nupa.tests;

import static dev.nupa.tests.ClusterTestSupport.request;
import static dev.nupa.tests.ClusterTestSupport.freePort;
import static dev.nupa.tests.ClusterTestSupport.untilNoHandlers;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * A clustered Vert.x across processes on one fabric file: members A and B in child JVMs ({@link ClusterMemberMain}, nodes
 * 0 and 1) and this JVM (node 2), Hazelcast's membership on loopback, the event bus between them over the fabric.
 * Request-reply, point-to-point round robin, publish to all, order per sender; then B is killed with SIGKILL in the
 * middle of a stream of requests, which goes on with A; B's consumers leave the registry within Hazelcast's failure detection (5 s here), requests to them fail with NO_HANDLERS
 * (or time out until then) as on Linux, and a replacement B at the same fabric address takes over.
 */
@Tag("process")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EventBusClusterTest {
    private static Path fabric;
    private static int[] ports;
    private static String members;
    private static String name;
    private static ChildJvm a;
    private static ChildJvm b;
    private static Vertx self;

    @BeforeAll
    static void start() throws Exception {
        fabric = ChildJvm.newFabricPath();
        ports = new int[] {freePort(), freePort(), freePort()};
        members = "127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2];
        name = "eb-" + UUID.randomUUID();
        a = member("A", 0);
        b = member("B", 1);
        ClusterConfig cluster = ClusterConfig.loopback(ports[2], List.of(members.split(","))).withName(name)
                .withFailureDetection(Duration.ofSeconds(5));
        self = NupaCluster.create(StackConfig.defaults(fabric, 2), cluster).await(90, TimeUnit.SECONDS);
        a.awaitLine("READY A", 90_000);
        b.awaitLine("READY B", 90_000);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (self != null) {
                self.close().await(30, TimeUnit.SECONDS);
            }
        } finally {
            if (a != null) {
                a.close();
            }
            if (b != null) {
                b.close();
            }
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    @Order(1)
    void requestReplyGoesRoundRobinOverTheMembers() throws Exception {
        // Registrations reach this member through Hazelcast: ask until both members have answered once.
        Set<String> seen = new HashSet<>();
        ChildJvm.waitUntil("both members answer on svc", 30_000, () -> {
            seen.add(request(self, "svc", "hi").split(":")[0]);
            return seen.containsAll(Set.of("A", "B"));
        });
        Map<String, Integer> answered = new HashMap<>();
        int n = 200;
        for (int i = 0; i < n; i++) {
            String reply = request(self, "svc", "r" + i);
            String[] parts = reply.split(":");
            assertEquals("r" + i, parts[1], "reply " + reply + " is not to request " + i);
            answered.merge(parts[0], 1, Integer::sum);
        }
        assertEquals(n, answered.getOrDefault("A", 0) + answered.getOrDefault("B", 0), answered.toString());
        // Vert.x sends point-to-point messages to the handlers in turn: each of the two got its share.
        assertTrue(answered.getOrDefault("A", 0) >= n / 4 && answered.getOrDefault("B", 0) >= n / 4, answered.toString());
        // The event bus went over the fabric: this node holds TCP connections to A and B.
        assertTrue(NupaVertx.stack(self).tcp().connections() >= 2,
                "this node holds " + NupaVertx.stack(self).tcp().connections() + " TCP connections on the fabric");
    }

    @Test
    @Order(2)
    void publishReachesEveryMember() throws Exception {
        int n = 100;
        for (int i = 0; i < n; i++) {
            self.eventBus().publish("news", "n" + i);
        }
        for (String member : List.of("A", "B")) {
            ChildJvm.waitUntil(member + " received every published message", 30_000,
                    () -> Long.parseLong(request(self, "ctl." + member, "count")) >= n);
            assertEquals(n, Long.parseLong(request(self, "ctl." + member, "count")), member + " received a message twice");
        }
    }

    @Test
    @Order(3)
    void eachSendersMessagesArriveInOrder() throws Exception {
        int n = 2000;
        DeliveryOptions from = new DeliveryOptions().addHeader("from", "self");
        var sprayed = self.eventBus().<String>request("ctl.B", "spray A " + n); // B sends to A while this JVM does
        for (long i = 0; i < n; i++) {
            self.eventBus().send("seq.A", i, from);
        }
        assertEquals("sent " + n, sprayed.await(30, TimeUnit.SECONDS).body());
        ChildJvm.waitUntil("A received both senders' messages", 30_000,
                () -> request(self, "ctl.A", "seq").startsWith("received=" + (2 * n) + " "));
        assertEquals("received=" + (2 * n) + " outOfOrder=0", request(self, "ctl.A", "seq"));
    }

    @Test
    @Order(4)
    void aKilledMembersConsumersLeaveAndAReplacementTakesOver() throws Exception {
        // A stream of requests to svc (A and B in turn), 8 outstanding, runs while B is killed: each request is answered
        // or fails with a ReplyException (a timeout for those sent to B), and the stream goes on with A.
        AtomicLong answered = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> odd = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        DeliveryOptions streamWait = new DeliveryOptions().setSendTimeout(2000);
        Runnable[] next = new Runnable[1];
        next[0] = () -> {
            if (!stop.get()) {
                self.eventBus().<String>request("svc", "s", streamWait).onComplete((m, err) -> {
                    if (err == null) {
                        answered.incrementAndGet();
                    } else if (err instanceof ReplyException) {
                        failed.incrementAndGet();
                    } else {
                        odd.compareAndSet(null, err);
                    }
                    next[0].run();
                });
            }
        };
        self.runOnContext(v -> {
            for (int i = 0; i < 8; i++) {
                next[0].run();
            }
        });
        ChildJvm.waitUntil("the stream runs", 30_000, () -> answered.get() >= 100);
        b.kill();
        long answeredAtKill = answered.get();
        untilNoHandlers(self, "only.B");
        ChildJvm.waitUntil("the stream goes on with A", 30_000, () -> answered.get() >= answeredAtKill + 500);
        stop.set(true);
        System.out.println("EventBusClusterTest: the stream around B's death: " + answered.get() + " answered, " + failed.get()
                + " failed with a ReplyException");
        assertEquals(null, odd.get(), "a request of the stream failed otherwise than with a ReplyException");
        // Point-to-point now reaches A alone, and this member's event loop answers as before.
        for (int i = 0; i < 20; i++) {
            assertEquals("A:k" + i, request(self, "svc", "k" + i));
        }
        // A replacement at B's fabric address and membership port takes over B's address on the event bus.
        b = member("B", 1);
        b.awaitLine("READY B", 90_000);
        ChildJvm.waitUntil("the replacement answers on only.B", 30_000, () -> {
            try {
                return request(self, "only.B", "again").equals("B:again");
            } catch (RuntimeException e) {
                return false;
            }
        });
    }

    private static ChildJvm member(String id, int node) {
        int port = ports[node];
        return ChildJvm.start("member-" + id, ClusterMemberMain.class, fabric, node, port, members, name, id);
    }
}
