package dev.nupa.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.nupa.tcp.TcpCounter;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.NupaNetty;
import dev.nupa.transport.NupaServerSocketChannel;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.netty.buffer.Unpooled;
import io.netty.channel.unix.DomainSocketChannel;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientConnection;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/**
 * {@link ReactorServer}, unmodified Reactor Netty code, on one fabric node through {@link NupaLoopResources},
 * answers a Vert.x HttpClient and a Reactor Netty HttpClient on another node of the same fabric file.
 */
class ReactorNettyOverFabricTest {
    private static final int PORT = 8090;
    private Path fabric;
    private NupaLoopResources serverLoops;
    private DisposableServer server;

    @BeforeEach
    void start() {
        fabric = Path.of("/dev/shm/nupa-test-reactor-" + UUID.randomUUID());
        serverLoops = new NupaLoopResources(StackConfig.defaults(fabric, 0)); // 10.0.0.1
        server = ReactorServer.start(serverLoops, PORT);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (server != null) {
                server.disposeNow(Duration.ofSeconds(10));
            }
            if (serverLoops != null) {
                serverLoops.disposeLater(Duration.ZERO, Duration.ofSeconds(5)).block(Duration.ofSeconds(10));
                assertTrue(serverLoops.group().isTerminated(), "disposing the loop resources ended the node's loops");
            }
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    private static long counter(FabricStack s, TcpCounter c) {
        return s.link().call(() -> s.tcp().counter(c));
    }

    @Test
    void reactorNettyServerAnswersVertxClientOnAnotherNode() throws Exception {
        // Reactor Netty listens through the NUPA channels, on the node's address.
        assertInstanceOf(NupaServerSocketChannel.class, server.channel());
        FabricStack serverStack = NupaNetty.stack(serverLoops.group());
        long acceptedBefore = counter(serverStack, TcpCounter.CONNECTIONS_ACCEPTED);
        long segmentsBefore = counter(serverStack, TcpCounter.SEGMENTS_IN);

        Vertx vertx = NupaVertx.create(StackConfig.defaults(fabric, 1)); // 10.0.0.2
        try {
            HttpClientAgent client = vertx.createHttpClient();
            HttpClientConnection conn = client.connect(new io.vertx.core.http.HttpConnectOptions().setHost("10.0.0.1").setPort(PORT))
                    .await(10, TimeUnit.SECONDS);
            assertEquals("10.0.0.1:" + PORT, conn.remoteAddress().toString(), "the client reached the server node's fabric address");
            conn.close().await(10, TimeUnit.SECONDS);

            assertEquals("hello from Reactor Netty\n", get(client, "/hello"));
            assertEquals("10.0.0.2", get(client, "/peer"), "the server saw the client node's fabric address");

            byte[] body = new byte[4 << 20];
            new Random(11).nextBytes(body);
            String sha = client.request(HttpMethod.POST, PORT, "10.0.0.1", "/sha256")
                    .compose(req -> req.send(Buffer.buffer(body)).compose(HttpClientResponse::body))
                    .await(30, TimeUnit.SECONDS).toString();
            assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body)), sha,
                    "4 MiB posted over the fabric arrived whole");
            client.close().await(10, TimeUnit.SECONDS);

            // Carried by the server node's TCP: the connections were accepted there, the 4 MiB came in as its segments.
            assertTrue(counter(serverStack, TcpCounter.CONNECTIONS_ACCEPTED) - acceptedBefore >= 2,
                    "connections accepted by the server node: " + serverStack.link().call(() -> serverStack.tcp().counters()));
            assertTrue(counter(serverStack, TcpCounter.SEGMENTS_IN) - segmentsBefore > (4 << 20) / 65536,
                    "segments the server node took in: " + serverStack.link().call(() -> serverStack.tcp().counters()));
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void reactorNettyClientCallsTheServerFromAnotherNode() throws Exception {
        NupaLoopResources clientLoops = new NupaLoopResources(StackConfig.defaults(fabric, 1)); // 10.0.0.2
        try {
            FabricStack clientStack = NupaNetty.stack(clientLoops.group());
            long openedBefore = counter(clientStack, TcpCounter.CONNECTIONS_OPENED);
            reactor.netty.http.client.HttpClient client = reactor.netty.http.client.HttpClient.create()
                    .runOn(clientLoops).baseUrl("http://10.0.0.1:" + PORT);

            assertEquals("hello from Reactor Netty\n", client.get().uri("/hello").responseContent().aggregate().asString()
                    .block(Duration.ofSeconds(10)));
            assertEquals("10.0.0.2", client.get().uri("/peer").responseContent().aggregate().asString()
                    .block(Duration.ofSeconds(10)));
            byte[] body = new byte[1 << 20];
            new Random(12).nextBytes(body);
            String sha = client.post().uri("/sha256").send(Mono.just(Unpooled.wrappedBuffer(body)))
                    .responseContent().aggregate().asString().block(Duration.ofSeconds(30));
            assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body)), sha);
            assertTrue(counter(clientStack, TcpCounter.CONNECTIONS_OPENED) > openedBefore,
                    "the client node opened the connection: " + clientStack.link().call(() -> clientStack.tcp().counters()));
        } finally {
            clientLoops.disposeLater(Duration.ZERO, Duration.ofSeconds(5)).block(Duration.ofSeconds(10));
        }
    }

    @Test
    void aNodeOfTwoLoopsServesOnBothThroughItsOneAddress() throws Exception {
        NupaLoopResources loops = new NupaLoopResources(StackConfig.defaults(fabric, 2).withLoops(2)); // 10.0.0.3, two loops
        DisposableServer two = ReactorServer.start(loops, PORT);
        Vertx vertx = NupaVertx.create(StackConfig.defaults(fabric, 1)); // 10.0.0.2
        try {
            java.util.List<FabricStack> stacks = NupaNetty.stacks(loops.group());
            assertEquals(2, stacks.size());
            // Eight connections open at once: Reactor Netty's child group deals them to both loops in turn, the primary
            // accepting all of them.
            HttpClientAgent client = vertx.createHttpClient();
            java.util.List<HttpClientConnection> conns = new java.util.ArrayList<>();
            for (int i = 0; i < 8; i++) {
                conns.add(client.connect(new io.vertx.core.http.HttpConnectOptions().setHost("10.0.0.3").setPort(PORT))
                        .await(10, TimeUnit.SECONDS));
            }
            for (HttpClientConnection c : conns) {
                assertEquals("10.0.0.2", c.request(HttpMethod.GET, PORT, "10.0.0.3", "/peer")
                        .compose(req -> req.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString());
            }
            client.close().await(10, TimeUnit.SECONDS);
            assertTrue(counter(stacks.get(0), TcpCounter.CONNECTIONS_ACCEPTED) >= 8,
                    "the primary loop accepted them: " + stacks.get(0).link().call(() -> stacks.get(0).tcp().counters()));
            assertTrue(counter(stacks.get(1), TcpCounter.CONNECTIONS_MOVED_IN) >= 1,
                    "the second loop served some: " + stacks.get(1).link().call(() -> stacks.get(1).tcp().counters()));
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
            two.disposeNow(Duration.ofSeconds(10));
            loops.disposeLater(Duration.ZERO, Duration.ofSeconds(5)).block(Duration.ofSeconds(10));
        }
    }

    @Test
    void channelTypesTheFabricLacksAreRefusedWithTheReason() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> serverLoops.onChannelClass(DomainSocketChannel.class, serverLoops.group()));
        assertTrue(e.getMessage().contains("DomainSocketChannel"), e.getMessage());
        IllegalArgumentException notNode = assertThrows(IllegalArgumentException.class,
                () -> NupaNetty.stack(new io.netty.channel.DefaultEventLoopGroup(1)));
        assertTrue(notNode.getMessage().contains("NupaNetty.eventLoopGroup"), notNode.getMessage());
    }

    private static String get(HttpClient client, String path) throws Exception {
        return client.request(HttpMethod.GET, PORT, "10.0.0.1", path)
                .compose(req -> req.send().compose(HttpClientResponse::body))
                .await(10, TimeUnit.SECONDS).toString();
    }
}
