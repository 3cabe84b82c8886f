package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.IpCounter;
import dev.nupa.tcp.TcpCounter;
import io.vertx.core.AbstractVerticle;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClientAgent;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A node of several event loops that share one IPv4 address: unmodified Vert.x code deployed as several
 * verticle instances serves connections and datagrams on all of the node's loops, each on the loop that
 * owns its stack, and clients on any loop reach their peers.
 */
class NupaVertxLoopsTest {
    private static final int SERVER_LOOPS = 4;
    private Path fabric;
    private Vertx server;
    private Vertx client;

    @BeforeEach
    void start() {
        fabric = Path.of("/dev/shm/nupa-test-loops-" + UUID.randomUUID());
        server = NupaVertx.create(StackConfig.defaults(fabric, 0).withLoops(SERVER_LOOPS)); // 10.0.0.1
        client = NupaVertx.create(StackConfig.defaults(fabric, 1).withLoops(2)); // 10.0.0.2
    }

    @AfterEach
    void stop() throws Exception {
        Nodes.close(fabric, client, server);
    }

    /** The loop whose stack the calling thread owns, or -1. */
    private static int ownLoop(Vertx vertx) {
        List<FabricStack> stacks = NupaVertx.stacks(vertx);
        for (FabricStack s : stacks) {
            if (s.link().isOwner()) {
                return s.loop();
            }
        }
        return -1;
    }

    @Test
    void theLoopsShareTheAddressAndOnlyThePrimaryPublishesIt() {
        List<FabricStack> stacks = NupaVertx.stacks(server);
        assertEquals(SERVER_LOOPS, stacks.size());
        for (FabricStack s : stacks) {
            assertEquals(stacks.getFirst().ip().address(), s.ip().address());
        }
        // Peers resolve the address to the primary's fabric node.
        assertEquals(stacks.getFirst().link().address(),
                NupaVertx.stack(client).neighbors().lookup(stacks.getFirst().ip().address()));
    }

    @Test
    void httpConnectionsSpreadOverTheLoopsOfVerticleInstances() throws Exception {
        Set<Integer> servedOn = ConcurrentHashMap.newKeySet();
        server.deployVerticle(() -> new AbstractVerticle() {
            @Override
            public void start(Promise<Void> started) {
                vertx.createHttpServer().requestHandler(req -> {
                    int loop = ownLoop(server);
                    servedOn.add(loop);
                    req.body().onSuccess(body -> req.response().end(loop + " " + req.path() + " " + body.length()));
                }).listen(8080, "0.0.0.0").<Void>mapEmpty().onComplete(started);
            }
        }, new DeploymentOptions().setInstances(SERVER_LOOPS)).await(10, TimeUnit.SECONDS);

        int connections = 16;
        HttpClientAgent hc = client.createHttpClient(new PoolOptions().setHttp1MaxSize(connections));
        List<Future<String>> answers = new ArrayList<>();
        for (int i = 0; i < connections * 8; i++) {
            Buffer upload = Buffer.buffer(new byte[(i % 7) * 3000]);
            String path = "/r/" + i;
            answers.add(hc.request(HttpMethod.POST, 8080, "10.0.0.1", path)
                    .compose(req -> req.send(upload).compose(HttpClientResponse::body)).map(Buffer::toString));
        }
        for (int i = 0; i < answers.size(); i++) {
            String a = answers.get(i).await(20, TimeUnit.SECONDS);
            String[] parts = a.split(" ");
            assertTrue(Integer.parseInt(parts[0]) >= 0, "the handler ran on a thread that owns a loop's stack: " + a);
            assertEquals("/r/" + i + " " + (i % 7) * 3000, parts[1] + " " + parts[2]);
        }
        assertEquals(SERVER_LOOPS, servedOn.size(), "requests were served on every loop: " + servedOn);
        List<FabricStack> stacks = NupaVertx.stacks(server);
        long movedOut = stacks.getFirst().tcp().counter(TcpCounter.CONNECTIONS_MOVED_OUT);
        long movedIn = 0;
        for (FabricStack s : stacks) {
            movedIn += s.link().call(() -> s.tcp().counter(TcpCounter.CONNECTIONS_MOVED_IN));
        }
        assertTrue(movedOut > 0, "the primary handed connections to the other loops");
        assertEquals(movedOut, movedIn, "every connection handed off was taken in");
        hc.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void netClientsOnEveryLoopOfANodeEchoThroughTheOtherNodesLoops() throws Exception {
        server.deployVerticle(() -> new AbstractVerticle() {
            @Override
            public void start(Promise<Void> started) {
                vertx.createNetServer().connectHandler(s -> s.pipeTo(s)).listen(7, "0.0.0.0").<Void>mapEmpty()
                        .onComplete(started);
            }
        }, new DeploymentOptions().setInstances(SERVER_LOOPS)).await(10, TimeUnit.SECONDS);
        byte[] data = new byte[1 << 20];
        new Random(3).nextBytes(data);
        Set<Integer> clientLoops = ConcurrentHashMap.newKeySet();
        List<Future<Buffer>> echoes = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Promise<Buffer> echoed = Promise.promise();
            echoes.add(echoed.future());
            client.deployVerticle(new AbstractVerticle() { // each instance on the next of the client's loops
                @Override
                public void start() {
                    clientLoops.add(ownLoop(client));
                    NetClient nc = vertx.createNetClient();
                    nc.connect(7, "10.0.0.1").onFailure(echoed::tryFail).onSuccess((NetSocket s) -> {
                        Buffer got = Buffer.buffer(data.length);
                        s.handler(b -> {
                            got.appendBuffer(b);
                            if (got.length() == data.length) {
                                echoed.tryComplete(got);
                                s.close();
                            }
                        });
                        s.write(Buffer.buffer(data));
                    });
                }
            }).await(10, TimeUnit.SECONDS);
        }
        for (Future<Buffer> f : echoes) {
            assertArrayEquals(data, f.await(30, TimeUnit.SECONDS).getBytes());
        }
        assertEquals(Set.of(0, 1), clientLoops, "the client node's connections left from both of its loops");
    }

    @Test
    void datagramsReachSocketsOnEveryLoopThroughThePrimary() throws Exception {
        int sockets = SERVER_LOOPS;
        Set<Integer> boundOn = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < sockets; i++) {
            int port = 9000 + i;
            server.deployVerticle(new AbstractVerticle() {
                @Override
                public void start(Promise<Void> started) {
                    boundOn.add(ownLoop(server));
                    DatagramSocket echo = vertx.createDatagramSocket();
                    echo.handler(p -> echo.send(Buffer.buffer(ownLoop(server) + ":").appendBuffer(p.data()),
                            p.sender().port(), p.sender().host()));
                    echo.listen(port, "0.0.0.0").<Void>mapEmpty().onComplete(started);
                }
            }).await(10, TimeUnit.SECONDS);
        }
        assertEquals(SERVER_LOOPS, boundOn.size(), "a socket on every loop: " + boundOn);
        DatagramSocket socket = client.createDatagramSocket();
        int count = 40;
        Set<String> got = ConcurrentHashMap.newKeySet();
        Promise<Void> all = Promise.promise();
        socket.handler(p -> {
            got.add(p.data().toString());
            if (got.size() == count) {
                all.tryComplete();
            }
        });
        socket.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            socket.send(Buffer.buffer("d" + i), 9000 + i % sockets, "10.0.0.1").await(10, TimeUnit.SECONDS);
        }
        all.future().await(10, TimeUnit.SECONDS);
        Set<String> loopsAnswering = ConcurrentHashMap.newKeySet();
        got.forEach(g -> loopsAnswering.add(g.substring(0, g.indexOf(':'))));
        assertEquals(SERVER_LOOPS, loopsAnswering.size(), "datagrams were answered from every loop: " + got);
        FabricStack primary = NupaVertx.stack(server);
        assertTrue(primary.link().call(() -> primary.ip().counter(IpCounter.LOOP_HANDOVERS)) > 0,
                "the primary handed datagrams to the loops that hold their ports");
    }

    @Test
    void aPortIsTakenOnceForTheWholeNode() throws Exception {
        Future<DatagramSocket> first = server.createDatagramSocket().listen(9100, "0.0.0.0");
        first.await(10, TimeUnit.SECONDS);
        Promise<Throwable> refused = Promise.promise();
        server.deployVerticle(new AbstractVerticle() { // on another loop than the first socket's
            @Override
            public void start() {
                vertx.createDatagramSocket().listen(9100, "0.0.0.0").onComplete(ar -> refused.complete(ar.cause()));
            }
        }).await(10, TimeUnit.SECONDS);
        Throwable t = refused.future().await(10, TimeUnit.SECONDS);
        assertTrue(t != null && t.getMessage().contains("9100"), "the second bind was refused, naming the port: " + t);
    }

    @Test
    void aNodeOfTooManyLoopsIsRefusedWithTheRange() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StackConfig.defaults(fabric, 2).withLoops(65));
        assertTrue(e.getMessage().contains("1..64"), e.getMessage());
    }
}
