package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tcp.TcpCounter;
import dev.nupa.tcp.TcpLayer;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Socket semantics an application written for Linux relies on, through unmodified Vert.x code: a close that leaves
 * received data unread resets the connection (RFC 9293 3.10.4, Linux's tcp_close), and a connect that cannot
 * succeed fails at once with the exception Java's sockets give (NoRouteToHostException), not after its timeout.
 */
class LinuxSocketSemanticsTest {
    private Path fabric;
    private Vertx server;
    private Vertx client;

    @BeforeEach
    void start() {
        fabric = Path.of("/dev/shm/nupa-test-semantics-" + UUID.randomUUID());
        server = NupaVertx.create(StackConfig.defaults(fabric, 0)); // 10.0.0.1
        client = NupaVertx.create(StackConfig.defaults(fabric, 1)); // 10.0.0.2
    }

    @AfterEach
    void stop() throws Exception {
        Nodes.close(fabric, client, server);
    }

    /** Runs {@code f} on the node's event loop (its stack's owner) and waits for its answer. */
    private static <T> T onLoop(Vertx vertx, Function<TcpLayer, T> f) throws Exception {
        Promise<T> p = Promise.promise();
        vertx.getOrCreateContext().runOnContext(v -> {
            try {
                p.complete(f.apply(NupaVertx.stack(vertx).tcp()));
            } catch (Throwable t) {
                p.fail(t);
            }
        });
        return p.future().await(10, TimeUnit.SECONDS);
    }

    @Test
    void aServerThatClosesWithUnreadDataResetsTheConnectionAndThePeerLearnsAtOnce() throws Exception {
        AtomicReference<NetSocket> accepted = new AtomicReference<>();
        server.createNetServer().connectHandler(s -> {
            s.pause(); // what arrives stays unread in the connection's receive buffer
            accepted.set(s);
        }).listen(7000, "0.0.0.0").await(10, TimeUnit.SECONDS);

        NetSocket socket = client.createNetClient().connect(7000, "10.0.0.1").await(10, TimeUnit.SECONDS);
        Promise<Throwable> failed = Promise.promise();
        Promise<Void> closed = Promise.promise();
        socket.exceptionHandler(failed::tryComplete);
        socket.closeHandler(v -> closed.tryComplete());
        // More than Vert.x's paused socket queues for itself (it stops reading once its queue is full): the rest
        // stays in the connection's receive buffer, as in a kernel's.
        for (int i = 0; i < 64; i++) {
            socket.write(Buffer.buffer(new byte[64 * 1024])); // 4 MiB in all
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (onLoop(server, tcp -> tcp.list(16).stream().mapToInt(TcpLayer.ConnectionView::recvQueue).sum()) == 0) {
            assertTrue(System.nanoTime() < deadline, "the bytes never reached the server's receive buffer: "
                    + onLoop(server, tcp -> tcp.list(16)) + " client " + onLoop(client, tcp -> tcp.list(16)));
            Thread.onSpinWait();
        }

        NetSocket s = accepted.get();
        Promise<Void> serverClosed = Promise.promise();
        server.getOrCreateContext().runOnContext(v -> s.close().onComplete(serverClosed));
        serverClosed.future().await(10, TimeUnit.SECONDS);

        // A FIN would leave the client's socket open until it wrote again; the reset closes it with the error.
        Throwable t = failed.future().await(10, TimeUnit.SECONDS);
        assertInstanceOf(SocketException.class, t);
        assertEquals("Connection reset", t.getMessage());
        closed.future().await(10, TimeUnit.SECONDS);
        assertEquals(Long.valueOf(1), onLoop(server, tcp -> (Long) tcp.counter(TcpCounter.ABORTS_ON_CLOSE)));
        Future<Void> write = socket.write(Buffer.buffer("after the reset"));
        assertTrue(write.failed(), "a write after the reset fails at once");
    }

    private Throwable connectFailure(int port, String host) throws Exception {
        // A connect timeout far beyond the await: a failure that comes is the fast one, not the timeout.
        var nc = client.createNetClient(new NetClientOptions().setConnectTimeout(600_000));
        try {
            nc.connect(port, host).await(10, TimeUnit.SECONDS);
        } catch (CompletionException e) {
            return e.getCause();
        } catch (Exception e) {
            return e;
        }
        throw new AssertionError("the connect to " + host + " succeeded");
    }

    @Test
    void aConnectToAnAddressWhoseNodeIsNotUpFailsAtOnceWithNoRouteToHost() throws Exception {
        Throwable t = connectFailure(80, "10.0.0.9"); // on-link; no fabric node holds it
        assertInstanceOf(NoRouteToHostException.class, t, String.valueOf(t));
        assertTrue(t.getMessage().startsWith("No route to host"), t.getMessage());
        assertEquals(Long.valueOf(1), onLoop(client, tcp -> (Long) tcp.counter(TcpCounter.CONNECTS_UNREACHABLE)));
    }

    @Test
    void aConnectToANodeThatLeftFailsAtOnce() throws Exception {
        server.close().await(10, TimeUnit.SECONDS);
        server = null;
        Throwable t = connectFailure(80, "10.0.0.1");
        assertInstanceOf(NoRouteToHostException.class, t, String.valueOf(t));
    }

    @Test
    void aConnectWithoutARouteFailsAtOnceWithNetworkUnreachable() throws Exception {
        Throwable t = connectFailure(80, "192.168.77.1");
        assertInstanceOf(NoRouteToHostException.class, t, String.valueOf(t));
        assertTrue(t.getMessage().startsWith("Network is unreachable"), t.getMessage());
    }

    @Test
    void aServerOnLocalhostAnswersTheNodeItselfThroughLoopbackAndNoOtherNode() throws Exception {
        server.createHttpServer().requestHandler(req -> req.response().end("local " + req.localAddress().host()
                + " from " + req.remoteAddress().host())).listen(8081, "localhost").await(10, TimeUnit.SECONDS);
        var http = server.createHttpClient();
        String body = http.request(HttpMethod.GET, 8081, "localhost", "/")
                .compose(r -> r.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString();
        assertEquals("local 127.0.0.1 from 127.0.0.1", body);
        Throwable t = connectFailure(8081, "10.0.0.1"); // the listener hears 127.0.0.1 only: a reset answers
        assertInstanceOf(ConnectException.class, t, String.valueOf(t));
        assertTrue(NupaVertx.stack(server).ip().loopback().datagrams() > 0, "it went through lo");
    }

    @Test
    void aServerOnTheWildcardAlsoHearsLoopbackAndTheNodesOwnAddress() throws Exception {
        server.createNetServer().connectHandler(s -> s.handler(s::write)).listen(7001, "0.0.0.0").await(10, TimeUnit.SECONDS);
        for (String host : new String[] {"127.0.0.1", "10.0.0.1"}) {
            NetSocket socket = server.createNetClient().connect(7001, host).await(10, TimeUnit.SECONDS);
            Promise<Buffer> echoed = Promise.promise();
            socket.handler(echoed::tryComplete);
            socket.write("hello " + host);
            assertEquals("hello " + host, echoed.future().await(10, TimeUnit.SECONDS).toString());
            assertEquals(host, socket.localAddress().host(), "the source is the address of the way it went");
            socket.close().await(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void udpToLocalhostIsDeliveredWithinTheNode() throws Exception {
        DatagramSocket echo = server.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(9001, "127.0.0.1").await(10, TimeUnit.SECONDS);
        DatagramSocket asker = server.createDatagramSocket();
        Promise<String> answer = Promise.promise();
        asker.handler(p -> answer.tryComplete(p.sender().host() + " " + p.data()));
        asker.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        asker.send("ping", 9001, "127.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals("127.0.0.1 ping", answer.future().await(10, TimeUnit.SECONDS));
    }

    @Test
    void aClientMayChooseItsLocalAddressAndPortAndATakenPortIsRefusedWithBindException() throws Exception {
        server.createNetServer().connectHandler(s -> s.handler(s::write)).listen(7002, "0.0.0.0").await(10, TimeUnit.SECONDS);
        NetSocket socket = client.createNetClient(new NetClientOptions().setLocalAddress("10.0.0.2"))
                .connect(7002, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals("10.0.0.2", socket.localAddress().host());
        // A port that already has a connection, bound through Netty (Vert.x binds the address only).
        int taken = socket.localAddress().port();
        // Netty annotates a connect's failure with the address (a SocketException around the BindException), as on epoll.
        Throwable t = bindAndConnect(new java.net.InetSocketAddress("10.0.0.2", taken), 7002);
        assertInstanceOf(java.net.BindException.class, t.getCause(), String.valueOf(t));
        assertTrue(t.getMessage().startsWith("Address already in use"), t.getMessage());
        Throwable foreign = bindAndConnect(new java.net.InetSocketAddress("10.0.0.77", 0), 7002);
        assertInstanceOf(java.net.BindException.class, foreign.getCause(), String.valueOf(foreign));
        assertTrue(foreign.getMessage().startsWith("Cannot assign requested address"), foreign.getMessage());
        Throwable ok = bindAndConnect(new java.net.InetSocketAddress("10.0.0.2", 40123), 7002);
        assertEquals(null, ok, "a free port is taken");
    }

    /** Connects from {@code local} through a plain Netty bootstrap on the client's loop; returns the failure or null. */
    private Throwable bindAndConnect(java.net.InetSocketAddress local, int port) throws Exception {
        var vi = (io.vertx.core.internal.VertxInternal) client;
        var b = new io.netty.bootstrap.Bootstrap().group(vi.nettyEventLoopGroup())
                .channelFactory(() -> vi.transport().channelFactory(false).newChannel())
                .handler(new io.netty.channel.ChannelInboundHandlerAdapter());
        io.netty.channel.ChannelFuture f = b.connect(new java.net.InetSocketAddress("10.0.0.1", port), local);
        f.await(10, TimeUnit.SECONDS);
        if (f.isSuccess()) {
            assertEquals(local.getPort() == 0 ? f.channel().localAddress() : local, f.channel().localAddress());
            f.channel().close().await(10, TimeUnit.SECONDS);
            return null;
        }
        return f.cause();
    }

    @Test
    void udpSocketsWithSoReusePortShareAPortAndEachFlowStaysOnOne() throws Exception {
        var options = new io.vertx.core.datagram.DatagramSocketOptions().setReusePort(true);
        java.util.Map<String, java.util.Set<String>> flowsBySocket = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.concurrent.atomic.AtomicInteger received = new java.util.concurrent.atomic.AtomicInteger();
        for (String name : new String[] {"a", "b"}) {
            DatagramSocket s = server.createDatagramSocket(options);
            s.handler(p -> {
                flowsBySocket.computeIfAbsent(name, k -> java.util.concurrent.ConcurrentHashMap.newKeySet())
                        .add(String.valueOf(p.sender().port()));
                received.incrementAndGet();
            });
            s.listen(9100, "0.0.0.0").await(10, TimeUnit.SECONDS);
        }
        Exception taken = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> server.createDatagramSocket().listen(9100, "0.0.0.0").await(10, TimeUnit.SECONDS));
        assertTrue(taken.getMessage().contains("already in use"), taken.toString());
        int senders = 24;
        for (int i = 0; i < senders; i++) {
            DatagramSocket c = client.createDatagramSocket();
            for (int k = 0; k < 3; k++) {
                c.send("x", 9100, "10.0.0.1").await(10, TimeUnit.SECONDS);
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (received.get() < senders * 3) {
            assertTrue(System.nanoTime() < deadline, "received " + received.get() + " of " + senders * 3);
            Thread.onSpinWait();
        }
        assertEquals(2, flowsBySocket.size(), "both sockets got flows: " + flowsBySocket);
        var a = new java.util.HashSet<>(flowsBySocket.get("a"));
        a.retainAll(flowsBySocket.get("b"));
        assertTrue(a.isEmpty(), "a flow went to one socket only: " + flowsBySocket);
        assertEquals(senders, flowsBySocket.get("a").size() + flowsBySocket.get("b").size());
    }

    @Test
    void aBroadcastReachesEveryNodeOfTheSubnetThatListensTheSenderIncludedAndNeedsSoBroadcast() throws Exception {
        java.util.concurrent.atomic.AtomicInteger atServer = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger atClient = new java.util.concurrent.atomic.AtomicInteger();
        DatagramSocket s = server.createDatagramSocket();
        s.handler(p -> atServer.incrementAndGet());
        s.listen(9200, "0.0.0.0").await(10, TimeUnit.SECONDS);
        DatagramSocket c = client.createDatagramSocket(new io.vertx.core.datagram.DatagramSocketOptions().setBroadcast(true));
        c.handler(p -> atClient.incrementAndGet());
        c.listen(9200, "0.0.0.0").await(10, TimeUnit.SECONDS);
        c.send("subnet", 9200, "10.0.0.255").await(10, TimeUnit.SECONDS);
        c.send("limited", 9200, "255.255.255.255").await(10, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (atServer.get() < 2 || atClient.get() < 2) {
            assertTrue(System.nanoTime() < deadline, "server " + atServer.get() + ", client " + atClient.get());
            Thread.onSpinWait();
        }
        DatagramSocket plain = client.createDatagramSocket();
        Exception denied = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> plain.send("x", 9200, "10.0.0.255").await(10, TimeUnit.SECONDS));
        Throwable cause = denied instanceof CompletionException ? denied.getCause() : denied;
        assertInstanceOf(SocketException.class, cause, String.valueOf(cause));
        assertTrue(cause.getMessage().startsWith("Permission denied"), cause.getMessage());
    }

    @Test
    void multicastReachesTheNodesThatJoinedTheSenderAsIpMulticastLoopSaysAndNoneAfterLeaving() throws Exception {
        java.util.List<String> atServer = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.List<String> atClient = new java.util.concurrent.CopyOnWriteArrayList<>();
        // Vert.x asks for an interface by name, as on Linux with a socket bound to 0.0.0.0; a node has one, the fabric,
        // whatever the name (any of the host's: lo).
        DatagramSocket s = server.createDatagramSocket();
        s.handler(p -> atServer.add(p.data().toString()));
        s.listen(9300, "0.0.0.0").await(10, TimeUnit.SECONDS);
        s.listenMulticastGroup("239.1.2.3", "lo", null).await(10, TimeUnit.SECONDS);
        // IP_MULTICAST_LOOP on (Vert.x turns it off by default): the sender's own node gets its datagrams back.
        DatagramSocket c = client.createDatagramSocket(new io.vertx.core.datagram.DatagramSocketOptions()
                .setLoopbackModeDisabled(false));
        c.handler(p -> atClient.add(p.data().toString()));
        c.listen(9300, "0.0.0.0").await(10, TimeUnit.SECONDS);
        c.listenMulticastGroup("239.1.2.3", "lo", null).await(10, TimeUnit.SECONDS);
        c.send("one", 9300, "239.1.2.3").await(10, TimeUnit.SECONDS);
        await(() -> atServer.contains("one") && atClient.contains("one"), () -> "server " + atServer + ", client " + atClient);

        // IP_MULTICAST_LOOP off, Vert.x's default: the sender's own node does not get it back.
        DatagramSocket quiet = client.createDatagramSocket();
        quiet.send("two", 9300, "239.1.2.3").await(10, TimeUnit.SECONDS);
        c.send("sentinel", 9300, "10.0.0.2").await(10, TimeUnit.SECONDS); // queued on lo after "two" would have been
        await(() -> atServer.contains("two") && atClient.contains("sentinel"), () -> "server " + atServer + ", client " + atClient);
        assertTrue(!atClient.contains("two"), "no loop back with IP_MULTICAST_LOOP off: " + atClient);

        s.unlistenMulticastGroup("239.1.2.3", "lo", null).await(10, TimeUnit.SECONDS);
        c.send("three", 9300, "239.1.2.3").await(10, TimeUnit.SECONDS);
        c.send("after", 9300, "10.0.0.1").await(10, TimeUnit.SECONDS); // the same way, behind "three"
        await(() -> atServer.contains("after") && atClient.contains("three"), () -> "server " + atServer + ", client " + atClient);
        assertTrue(!atServer.contains("three"), "the node that left got nothing: " + atServer);

        Exception notAGroup = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> c.listenMulticastGroup("10.0.0.9", "lo", null).await(10, TimeUnit.SECONDS));
        assertTrue(notAGroup.getMessage().contains("not a multicast group address"), notAGroup.toString());
    }

    private static void await(java.util.function.BooleanSupplier condition, java.util.function.Supplier<String> state) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, () -> "not within 10 s: " + state.get());
            Thread.onSpinWait();
        }
    }
}
