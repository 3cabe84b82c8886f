package dev.nupa.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.nupa.cluster.ClusterConfig.Manager;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Clustered Vert.x instances in this JVM on one fabric file: a request and its reply travel over the fabric's TCP (each
 * node holds the event bus's connections) while membership goes over loopback; a start that cannot happen fails with
 * one message and leaves nothing behind.
 */
@Tag("process") // the cluster managers' threads and sockets, a few seconds: heavier than the unit tier's tests
class NupaClusterTest {
    @Test
    void membersAnswerOverTheFabric() throws Exception {
        membersAnswerOverTheFabric(Manager.HAZELCAST);
    }

    @Test
    void membersAnswerOverTheFabricWithInfinispan() throws Exception {
        membersAnswerOverTheFabric(Manager.INFINISPAN);
    }

    private static void membersAnswerOverTheFabric(Manager manager) throws Exception {
        Path fabric = fabric();
        int p0 = freePort();
        int p1 = freePort();
        List<String> members = List.of("127.0.0.1:" + p0, "127.0.0.1:" + p1);
        String name = "t-" + UUID.randomUUID();
        Vertx a = null;
        Vertx b = null;
        try {
            a = NupaCluster.create(StackConfig.defaults(fabric, 0), config(manager, p0, members, name)).await(60, TimeUnit.SECONDS);
            b = NupaCluster.create(StackConfig.defaults(fabric, 1), config(manager, p1, members, name)).await(60, TimeUnit.SECONDS);
            a.eventBus().<String>consumer("greeter", m -> m.reply("hello " + m.body())).completion().await(30, TimeUnit.SECONDS);
            assertEquals("hello b", requestUntilAnswered(b, "greeter", "b"));
            assertTrue(NupaVertx.stack(a).tcp().connections() >= 1, "a holds no TCP connection on the fabric");
            assertTrue(NupaVertx.stack(b).tcp().connections() >= 1, "b holds no TCP connection on the fabric");
        } finally {
            close(b);
            close(a);
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void aTakenMembershipPortIsOneErrorAndTheNodeLeaves() throws Exception {
        aTakenMembershipPortIsOneErrorAndTheNodeLeaves(Manager.HAZELCAST, "Hazelcast");
    }

    @Test
    void aTakenMembershipPortIsOneErrorAndTheNodeLeavesWithInfinispan() throws Exception {
        aTakenMembershipPortIsOneErrorAndTheNodeLeaves(Manager.INFINISPAN, "Infinispan");
    }

    private static void aTakenMembershipPortIsOneErrorAndTheNodeLeaves(Manager manager, String what) throws Exception {
        Path fabric = fabric();
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            var e = assertThrows(Exception.class, () -> NupaCluster.create(StackConfig.defaults(fabric, 0),
                    config(manager, port, List.of(), "t-" + UUID.randomUUID())).await(60, TimeUnit.SECONDS));
            assertTrue(e.getMessage().contains("did not start: " + what + " could not start on 127.0.0.1:" + port), e.getMessage());
            assertTrue(e.getMessage().endsWith("; choose a free membership port or stop what holds it"), e.getMessage());
            // The node left the fabric: its address is free again for a plain Vert.x.
            Vertx again = NupaVertx.create(StackConfig.defaults(fabric, 0));
            close(again);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void aFabricAddressInUseIsOneErrorBeforeAnyJoin() throws Exception {
        aFabricAddressInUseIsOneErrorBeforeAnyJoin(Manager.HAZELCAST);
    }

    @Test
    void aFabricAddressInUseIsOneErrorBeforeAnyJoinWithInfinispan() throws Exception {
        aFabricAddressInUseIsOneErrorBeforeAnyJoin(Manager.INFINISPAN);
    }

    private static void aFabricAddressInUseIsOneErrorBeforeAnyJoin(Manager manager) throws Exception {
        Path fabric = fabric();
        Vertx holder = NupaVertx.create(StackConfig.defaults(fabric, 0));
        try {
            int port = freePort();
            var e = assertThrows(Exception.class, () -> NupaCluster.create(StackConfig.defaults(fabric, 0),
                    config(manager, port, List.of(), "t-" + UUID.randomUUID())).await(60, TimeUnit.SECONDS));
            assertTrue(e.getMessage().contains("did not start: node address 0 of fabric"), e.getMessage());
            // The cluster manager never started: its port is still free.
            try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
                assertEquals(port, s.getLocalPort());
            }
        } finally {
            close(holder);
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void badConfigurationNamesTheProblem() {
        var e = assertThrows(IllegalArgumentException.class, () -> ClusterConfig.loopback(5701, List.of("localhost")));
        assertTrue(e.getMessage().contains("host:port"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ClusterConfig.loopback(0, List.of()));
        assertTrue(e.getMessage().contains("1 to 65535"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> ClusterConfig.loopback(5701, List.of()).withFailureDetection(Duration.ofMillis(10)));
        assertTrue(e.getMessage().contains("1 s or more"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Manager.parse("zookeeper"));
        assertTrue(e.getMessage().contains("hazelcast or infinispan"), e.getMessage());
        assertEquals(Manager.INFINISPAN, Manager.parse("infinispan"));
    }

    private static ClusterConfig config(Manager manager, int port, List<String> members, String name) {
        return ClusterConfig.loopback(port, members).withManager(manager).withName(name)
                .withFailureDetection(Duration.ofSeconds(5));
    }

    /** The subscription reaches other members through the manager's registry, asynchronously: asks until it is there. */
    private static String requestUntilAnswered(Vertx from, String address, String body) throws Exception {
        return ClusterRequests.<String>requestOnceKnown(from, address, body, Duration.ofSeconds(30)).map(Message::body)
                .await(35, TimeUnit.SECONDS);
    }

    private static void close(Vertx v) throws Exception {
        if (v != null) {
            v.close().await(30, TimeUnit.SECONDS);
        }
    }

    private static Path fabric() {
        return Path.of("/dev/shm/nupa-test-cluster-" + UUID.randomUUID());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
