package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.Fabric;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.internal.VertxInternal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Vert.x instances made the plain way ({@code Vertx.vertx()}, {@code Vertx.builder().build()}) land on the fabric
 * when the nupa.* system properties name a node ({@link NupaVertxProvider}), and stay on the kernel's network when
 * they do not; {@link NupaVertx#transport} gives builders a transport whose node opens and closes with the Vert.x.
 */
class NupaVertxProviderTest {
    private final Path fabric = Path.of("/dev/shm/nupa-test-provider-" + UUID.randomUUID());
    private final List<Vertx> made = new ArrayList<>();

    @AfterEach
    void cleanUp() throws Exception {
        System.clearProperty("nupa.fabric");
        System.clearProperty("nupa.address");
        System.clearProperty("nupa.loops");
        for (Vertx v : made) {
            v.close().await(10, TimeUnit.SECONDS);
        }
        Files.deleteIfExists(fabric);
    }

    private Vertx keep(Vertx v) {
        made.add(v);
        return v;
    }

    private static int loops(Vertx v) {
        int n = 0;
        for (var loop : ((VertxInternal) v).nettyEventLoopGroup()) {
            n++;
        }
        return n;
    }

    private Set<Integer> attached() {
        try (Fabric f = ShmFabric.join(fabric)) {
            Set<Integer> out = new TreeSet<>();
            for (NodeInfo n : f.nodes()) {
                if (!n.state().equals("FREE")) {
                    out.add(n.address());
                }
            }
            return out;
        }
    }

    @Test
    void plainVertxInstancesUnderThePropertiesAreFabricNodesAndTalkHttp() throws Exception {
        System.setProperty("nupa.fabric", fabric.toString());
        System.setProperty("nupa.address", "0");
        Vertx server = keep(Vertx.vertx());
        Vertx client = keep(Vertx.builder().build()); // the named address is held: the first free one
        assertInstanceOf(NupaTransport.class, ((VertxInternal) server).transport());
        assertInstanceOf(NupaTransport.class, ((VertxInternal) client).transport());
        assertEquals(0, NupaVertx.stack(server).link().address());
        assertEquals(1, NupaVertx.stack(client).link().address());
        assertEquals("10.0.0.2/24", NupaVertx.stack(client).ip().config().toString());

        server.createHttpServer().requestHandler(req -> req.response().end("hello " + req.path()))
                .listen(8080, "0.0.0.0").await(10, TimeUnit.SECONDS);
        String body = client.createHttpClient().request(HttpMethod.GET, 8080, "10.0.0.1", "/x")
                .compose(req -> req.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString();
        assertEquals("hello /x", body);
        assertEquals(1L, NupaVertx.stack(server).tcp().counters().get(dev.nupa.tcp.TcpCounter.CONNECTIONS_ACCEPTED),
                "the request came over the server node's TCP");

        // Closing a Vert.x instance closes its node; the named address is free again for the next instance.
        server.close().await(10, TimeUnit.SECONDS);
        made.remove(server);
        assertEquals(Set.of(1), attached());
        Vertx again = keep(Vertx.vertx());
        assertEquals(0, NupaVertx.stack(again).link().address());
        assertEquals(Set.of(0, 1), attached());
    }

    @Test
    void withoutTheFabricPropertyVertxIsAsWithoutTheJar() throws Exception {
        Vertx v = keep(Vertx.vertx());
        assertEquals("io.vertx.core.impl.transports.NioTransport", ((VertxInternal) v).transport().getClass().getName());
        assertEquals(VertxOptions.DEFAULT_EVENT_LOOP_POOL_SIZE, loops(v));
        assertThrows(IllegalArgumentException.class, () -> NupaVertx.stack(v));
    }

    @Test
    void theEventLoopsAreTheNodesAndAProgramsOwnTransportChoiceGivesWayToTheNode() throws Exception {
        System.setProperty("nupa.fabric", fabric.toString());
        System.setProperty("nupa.address", "5");
        System.setProperty("nupa.loops", "2");
        Vertx v = keep(Vertx.builder().with(new VertxOptions().setEventLoopPoolSize(7).setPreferNativeTransport(true)).build());
        assertInstanceOf(NupaTransport.class, ((VertxInternal) v).transport());
        assertEquals(2, loops(v));
        assertEquals(5, NupaVertx.stack(v).link().address());
        assertEquals(2, NupaVertx.stacks(v).size());
    }

    @Test
    void theTransportFactoryOpensTheNodeWithTheVertxAndClosesItWithIt() throws Exception {
        var transport = NupaVertx.transport(StackConfig.defaults(fabric, 3).withLoops(2));
        Vertx v = Vertx.builder().withTransport(transport).build();
        try {
            assertEquals(2, loops(v));
            assertEquals(3, NupaVertx.stack(v).link().address());
            assertTrue(attached().contains(3));
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> Vertx.builder().withTransport(transport).build());
            assertTrue(twice.getMessage().contains("one Vert.x instance"), twice.getMessage());
        } finally {
            v.close().await(10, TimeUnit.SECONDS);
        }
        assertEquals(Set.of(), attached());
    }

    @Test
    void aTakenAddressFailsTheBuildWithTheReasonAndHoldsNothing() throws Exception {
        Vertx holder = keep(NupaVertx.create(StackConfig.defaults(fabric, 0)));
        System.setProperty("nupa.fabric", fabric.toString());
        System.setProperty("nupa.address", "0");
        RuntimeException e = assertThrows(RuntimeException.class, Vertx::vertx);
        assertTrue(e.getMessage().startsWith("node address 0 of fabric ") && e.getMessage().contains("is taken by a live node"), e.getMessage());
        assertEquals(Set.of(0), attached());
        holder.close().await(10, TimeUnit.SECONDS);
        made.remove(holder);
        // The failed one did not keep the named address: the next instance takes it.
        assertEquals(0, NupaVertx.stack(keep(Vertx.vertx())).link().address());
    }

    @Test
    void settingsComeFromPropertiesThenTheEnvironmentAndWrongOnesAreNamed() {
        assertNull(NodeProperties.from(Map.<String, String>of()::get, Map.<String, String>of()::get));
        StackConfig c = NodeProperties.from(Map.of("nupa.address", "4")::get,
                Map.of("NUPA_FABRIC", "/dev/shm/f9", "NUPA_ADDRESS", "2", "NUPA_LOOPS", "3", "NUPA_IP", "10.9.0.1/16",
                        "NUPA_ROUTES", "192.168.77.0/24 via 10.9.0.9,default via 10.9.0.8", "NUPA_SPIN", "true")::get);
        assertEquals(Path.of("/dev/shm/f9"), c.fabric());
        assertEquals(4, c.address());
        assertEquals(3, c.loops());
        assertEquals(dev.nupa.ip.IpConfig.parse("10.9.0.1/16"), c.ip());
        assertEquals(2, c.routes().size());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> NodeProperties.from(Map.of("nupa.fabric", "/dev/shm/f9", "nupa.address", "x")::get, Map.<String, String>of()::get));
        assertTrue(bad.getMessage().startsWith("nupa.address (NUPA_ADDRESS) is \"x\""), bad.getMessage());
        bad = assertThrows(IllegalArgumentException.class,
                () -> NodeProperties.from(Map.of("nupa.fabric", "/dev/shm/f9", "nupa.loops", "0")::get, Map.<String, String>of()::get));
        assertTrue(bad.getMessage().startsWith("nupa.loops (NUPA_LOOPS)"), bad.getMessage());
    }
}
