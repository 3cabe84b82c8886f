package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelProgressiveFuture;
import io.netty.channel.ChannelProgressiveFutureListener;
import io.netty.channel.ChannelProgressivePromise;
import io.netty.channel.DefaultFileRegion;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.FileRegion;
import io.netty.channel.WriteBufferWaterMark;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.dns.AddressResolverOptions;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What Vert.x and Netty ask of a channel, as they get it from epoll: file regions (Vert.x then builds epoll's
 * pipeline, with its idle handler after the HTTP decoder, and sends files as regions), the host name a connect
 * was given, the socket options read back as set, and auto-read. Two Vert.x instances on one fabric, as
 * NupaVertxTest; through Netty's API (a region's progress, release and failure, options, auto-read), two
 * nodes of their own under the transport's loops, as NupaSocketChannelTest.
 */
class NupaPipelineParityTest {
    private static final String HOST = "fabric-server.test";

    private Path fabric;
    private Vertx server;
    private Vertx client;
    private final List<Path> files = new ArrayList<>();
    /** Referenced to the test's end: a Vert.x client the collector takes shuts down with a 30 s grace (CleanableNetClient). */
    private final List<Object> clients = new ArrayList<>();

    private NetClient netClient() {
        NetClient c = client.createNetClient();
        clients.add(c);
        return c;
    }

    private HttpClient httpClient() {
        HttpClient c = client.createHttpClient();
        clients.add(c);
        return c;
    }

    @BeforeEach
    void start() {
        fabric = Path.of("/dev/shm/nupa-test-parity-" + UUID.randomUUID());
        server = NupaVertx.create(StackConfig.defaults(fabric, 0)); // 10.0.0.1
        // The client knows the server by a name (its own hosts table, no DNS).
        VertxOptions named = new VertxOptions().setAddressResolverOptions(new AddressResolverOptions()
                .setHostsValue(Buffer.buffer("10.0.0.1 " + HOST + "\n")));
        client = NupaVertx.create(StackConfig.defaults(fabric, 1), named); // 10.0.0.2
    }

    @AfterEach
    void stop() throws Exception {
        try {
            Nodes.close(fabric, client, server);
        } finally {
            clients.clear();
            for (Path f : files) {
                Files.deleteIfExists(f);
            }
        }
    }

    /** A file of {@code size} seeded random bytes; returns it, its SHA-256 in {@code sha}. */
    private Path randomFile(long size, byte[][] sha) throws Exception {
        Path f = Files.createTempFile("nupa-test-parity-", ".bin");
        files.add(f);
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        Random random = new Random(size);
        byte[] chunk = new byte[1 << 20];
        try (OutputStream out = Files.newOutputStream(f)) {
            for (long left = size; left > 0; left -= chunk.length) {
                random.nextBytes(chunk);
                int n = (int) Math.min(left, chunk.length);
                out.write(chunk, 0, n);
                md.update(chunk, 0, n);
            }
        }
        sha[0] = md.digest();
        return f;
    }

    @Test
    void anHttpServersIdleTimeoutClosesAConnectionWhoseTrickleFormsNoRequest() throws Exception {
        AtomicInteger requests = new AtomicInteger();
        HttpServer http = server.createHttpServer(new HttpServerOptions().setIdleTimeout(500)
                .setIdleTimeoutUnit(TimeUnit.MILLISECONDS)).requestHandler(req -> {
                    requests.incrementAndGet();
                    req.response().end();
                });
        http.listen(8080, "0.0.0.0").await(10, TimeUnit.SECONDS);
        NetSocket socket = netClient().connect(8080, "10.0.0.1").await(10, TimeUnit.SECONDS);
        Promise<Void> closed = Promise.promise();
        socket.write("GET / HTTP/1.1\r\nX-Trickle: ");
        // A byte every 100 ms: a header line that never ends (300 bytes in the 30 s waited, far below the decoder's
        // bound). Bytes keep arriving, but none forms a request, so the connection is idle to the HTTP server.
        long trickle = client.setPeriodic(100, id -> socket.write("a"));
        socket.closeHandler(v -> {
            client.cancelTimer(trickle);
            closed.tryComplete();
        });
        closed.future().await(30, TimeUnit.SECONDS); // the timeout is 0.5 s; 60 times that is the bound
        assertEquals(0, requests.get());
    }

    @Test
    void httpSendFileOfOneHundredMebibytesArrivesIntactAsFileRegions() throws Exception {
        byte[][] sha = new byte[1][];
        long size = 100L << 20;
        Path file = randomFile(size, sha);
        long regionsBefore = NupaVertx.stack(server).regionsSent();
        HttpServer http = server.createHttpServer().requestHandler(req -> req.response().sendFile(file.toString()));
        http.listen(8080, "0.0.0.0").await(10, TimeUnit.SECONDS);

        MessageDigest md = MessageDigest.getInstance("SHA-256");
        AtomicReference<String> length = new AtomicReference<>();
        httpClient().request(HttpMethod.GET, 8080, "10.0.0.1", "/file")
                .compose(req -> req.send().compose(resp -> {
                    length.set(resp.getHeader("content-length"));
                    resp.handler(b -> md.update(b.getBytes()));
                    return resp.end();
                }))
                .await(120, TimeUnit.SECONDS);
        assertEquals(Long.toString(size), length.get());
        assertArrayEquals(sha[0], md.digest(), "the client's SHA-256 of the body is the file's");
        assertRegions(regionsBefore, size);
    }

    /** The file left as FileRegions: Vert.x sends a file as regions of 1 MiB (VertxConnection.MAX_REGION_SIZE). */
    private void assertRegions(long before, long size) {
        long regions = NupaVertx.stack(server).regionsSent() - before;
        assertTrue(regions >= size >> 20, "the file left as " + (size >> 20) + " or more FileRegions, not " + regions);
    }

    @Test
    void netSocketSendFileArrivesIntactAsFileRegions() throws Exception {
        byte[][] sha = new byte[1][];
        long size = 12L << 20;
        Path file = randomFile(size, sha);
        long regionsBefore = NupaVertx.stack(server).regionsSent();
        CompletableFuture<Void> sent = new CompletableFuture<>();
        // The file goes once the client asks (a byte): its handler is in place by then, or Vert.x would drop what came first.
        NetServer net = server.createNetServer().connectHandler(s -> s.handler(ask -> s.sendFile(file.toString())
                .onComplete(ar -> {
                    if (ar.succeeded()) {
                        sent.complete(null);
                    } else {
                        sent.completeExceptionally(ar.cause());
                    }
                    s.close();
                })));
        net.listen(7000, "0.0.0.0").await(10, TimeUnit.SECONDS);

        MessageDigest md = MessageDigest.getInstance("SHA-256");
        AtomicInteger received = new AtomicInteger();
        NetSocket socket = netClient().connect(7000, "10.0.0.1").await(10, TimeUnit.SECONDS);
        Promise<Void> closed = Promise.promise();
        socket.handler(b -> {
            md.update(b.getBytes());
            received.addAndGet(b.length());
        });
        socket.closeHandler(v -> closed.complete());
        socket.write("?");
        closed.future().await(60, TimeUnit.SECONDS);
        sent.get(10, TimeUnit.SECONDS);
        assertEquals(size, received.get());
        assertArrayEquals(sha[0], md.digest(), "the client's SHA-256 of what it read is the file's");
        assertRegions(regionsBefore, size);
    }

    @Test
    void theRemoteAddressKeepsTheHostNameTheConnectWasGiven() throws Exception {
        server.createNetServer().connectHandler(s -> { }).listen(7001, "0.0.0.0").await(10, TimeUnit.SECONDS);
        NetSocket socket = netClient().connect(7001, HOST).await(10, TimeUnit.SECONDS);
        assertEquals(HOST, socket.remoteAddress().hostName());
        assertEquals("10.0.0.1", socket.remoteAddress().hostAddress());
        assertEquals(7001, socket.remoteAddress().port());

        server.createHttpServer().requestHandler(req -> req.response().end("hi")).listen(8080, "0.0.0.0")
                .await(10, TimeUnit.SECONDS);
        AtomicReference<HttpConnection> connection = new AtomicReference<>();
        String body = httpClient().request(HttpMethod.GET, 8080, HOST, "/")
                .compose(req -> {
                    connection.set(req.connection());
                    return req.send().compose(HttpClientResponse::body);
                })
                .await(10, TimeUnit.SECONDS).toString();
        assertEquals("hi", body);
        assertEquals(HOST, connection.get().remoteAddress().hostName());
        assertEquals("10.0.0.1", connection.get().remoteAddress().hostAddress());
    }

    // ---- Netty's API, as Vert.x drives it: two stacks under the transport's loops -----------------------------

    /** Two nodes of their own (the Vert.x ones stay idle), each under one event loop of the transport. */
    private static final class Loops implements AutoCloseable {
        final Path fabric = Path.of("/dev/shm/nupa-test-parity-netty-" + UUID.randomUUID());
        final EventLoopGroup server = NupaNetty.eventLoopGroup(StackConfig.defaults(fabric, 0));
        final EventLoopGroup client = NupaNetty.eventLoopGroup(StackConfig.defaults(fabric, 1));

        @Override
        public void close() throws Exception {
            try {
                client.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                server.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            } finally {
                Files.deleteIfExists(fabric);
            }
        }
    }

    /** The server's end of one connection: what it read (digested) and the channel. */
    private static final class Sink extends ChannelInboundHandlerAdapter {
        final MessageDigest md;
        final CompletableFuture<Channel> active = new CompletableFuture<>();
        final AtomicInteger reads = new AtomicInteger();
        long read;

        Sink() throws Exception {
            md = MessageDigest.getInstance("SHA-256");
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            active.complete(ctx.channel());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            read += b.readableBytes();
            md.update(b.nioBuffer());
            b.release();
            reads.incrementAndGet();
        }
    }

    private static Channel connect(Loops loops, Sink server, int port, boolean serverAutoRead) throws Exception {
        new ServerBootstrap().group(loops.server).channel(NupaServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, serverAutoRead).childHandler(server)
                .bind(new InetSocketAddress("10.0.0.1", port)).sync();
        Channel ch = new Bootstrap().group(loops.client).channel(NupaSocketChannel.class)
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                        // A reset the test caused: the write's promise says it.
                    }
                }).connect(new InetSocketAddress("10.0.0.1", port)).sync().channel();
        server.active.get(10, TimeUnit.SECONDS);
        return ch;
    }

    @Test
    void aFileRegionLargerThanTheBuffersIsSentWholeWithItsProgressAndReleased() throws Exception {
        byte[][] sha = new byte[1][];
        long size = 6L << 20;
        Path file = randomFile(size, sha);
        try (Loops loops = new Loops()) {
            Sink server = new Sink();
            Channel ch = connect(loops, server, 9000, true);
            FileRegion region = new DefaultFileRegion(file.toFile(), 0, size);
            List<Long> progress = Collections.synchronizedList(new ArrayList<>());
            ChannelProgressivePromise promise = ch.newProgressivePromise();
            promise.addListener(new ChannelProgressiveFutureListener() {
                @Override
                public void operationProgressed(ChannelProgressiveFuture f, long at, long total) {
                    assertEquals(size, total);
                    progress.add(at);
                }

                @Override
                public void operationComplete(ChannelProgressiveFuture f) {
                }
            });
            ch.writeAndFlush(region, promise).sync();
            // On the class path, as the node runs, the region's file is read into the loop's direct buffer.
            assertTrue(RegionSink.readsFilesDirectly(), "DefaultFileRegion's file is read directly");
            assertEquals(0, region.refCnt(), "released once sent");
            assertEquals(size, region.transferred());
            assertTrue(progress.size() > 1, "progress in several steps (the send buffer is 256 KiB): " + progress.size());
            assertEquals(size, progress.getLast());
            for (int i = 1; i < progress.size(); i++) {
                assertTrue(progress.get(i) > progress.get(i - 1), "progress only grows");
            }
            waitFor(() -> loops.server.submit(() -> server.read).get() == size, "the server read " + size + " bytes");
            byte[] got = loops.server.submit((Callable<byte[]>) server.md::digest).get();
            assertArrayEquals(sha[0], got);
        }
    }

    @Test
    void closingWhileAFileRegionWaitsForRoomFailsItsPromiseAndReleasesIt() throws Exception {
        byte[][] sha = new byte[1][];
        Path file = randomFile(4L << 20, sha);
        try (Loops loops = new Loops()) {
            Channel ch = connect(loops, new Sink(), 9001, false); // the server reads nothing: the send buffer fills
            FileRegion region = new DefaultFileRegion(file.toFile(), 0, 4L << 20);
            ChannelFuture written = ch.writeAndFlush(region);
            waitFor(() -> loops.client.submit(() -> region.transferred() > 0).get(), "part of the region sent");
            assertTrue(!written.isDone(), "the region waits for room");
            ch.close().sync();
            assertInstanceOf(ClosedChannelException.class, written.await().cause());
            assertEquals(0, region.refCnt(), "released when its write failed");
        }
    }

    @Test
    void aResetWhileAFileRegionWaitsForRoomFailsItsPromiseAndReleasesIt() throws Exception {
        byte[][] sha = new byte[1][];
        Path file = randomFile(4L << 20, sha);
        try (Loops loops = new Loops()) {
            Sink server = new Sink();
            Channel ch = connect(loops, server, 9002, false);
            FileRegion region = new DefaultFileRegion(file.toFile(), 0, 4L << 20);
            ChannelFuture written = ch.writeAndFlush(region);
            waitFor(() -> loops.client.submit(() -> region.transferred() > 0).get(), "part of the region sent");
            Channel peer = server.active.get();
            peer.config().setOption(ChannelOption.SO_LINGER, 0);
            peer.close().sync(); // a reset (unread data, SO_LINGER 0)
            assertTrue(written.await(10, TimeUnit.SECONDS), "the write ended");
            assertTrue(!written.isSuccess(), "the write failed: " + written);
            assertEquals(0, region.refCnt(), "released when its write failed");
        }
    }

    @Test
    void theSocketOptionsEpollTakesAreTakenAndReadBack() throws Exception {
        try (Loops loops = new Loops()) {
            Sink server = new Sink();
            Channel client = connect(loops, server, 9003, true);
            Channel accepted = server.active.get();
            for (Channel ch : List.of(client, accepted)) {
                // Netty's epoll channels start with Nagle off (EpollSocketChannelConfig: canEnableTcpNoDelayByDefault).
                assertEquals(true, ch.config().getOption(ChannelOption.TCP_NODELAY), "TCP_NODELAY's default on " + ch);
                Map<ChannelOption<?>, Object> options = new LinkedHashMap<>();
                options.put(ChannelOption.SO_KEEPALIVE, true);
                options.put(ChannelOption.TCP_NODELAY, false);
                options.put(ChannelOption.SO_SNDBUF, 65_536);
                options.put(ChannelOption.SO_RCVBUF, 131_072);
                options.put(ChannelOption.SO_LINGER, 3);
                options.put(ChannelOption.SO_REUSEADDR, true);
                options.put(ChannelOption.IP_TOS, 0x10);
                options.put(ChannelOption.ALLOW_HALF_CLOSURE, true);
                options.put(ChannelOption.AUTO_READ, false);
                options.put(ChannelOption.AUTO_CLOSE, false);
                options.put(ChannelOption.CONNECT_TIMEOUT_MILLIS, 1234);
                options.put(ChannelOption.WRITE_SPIN_COUNT, 8);
                options.put(ChannelOption.MAX_MESSAGES_PER_WRITE, 5);
                options.put(ChannelOption.TCP_FASTOPEN_CONNECT, true);
                for (var e : options.entrySet()) {
                    @SuppressWarnings("unchecked")
                    ChannelOption<Object> o = (ChannelOption<Object>) e.getKey();
                    assertTrue(ch.config().setOption(o, e.getValue()), o + " taken by " + ch);
                    assertEquals(e.getValue(), ch.config().getOption(o), o + " read back from " + ch);
                    assertEquals(e.getValue(), ch.config().getOptions().get(o), o + " among the options of " + ch);
                }
                assertTrue(ch.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(1024, 4096)));
                WriteBufferWaterMark mark = ch.config().getOption(ChannelOption.WRITE_BUFFER_WATER_MARK);
                assertEquals(1024, mark.low());
                assertEquals(4096, mark.high());
                ch.config().setOption(ChannelOption.SO_LINGER, -1); // the test's end closes without waiting
            }
            Channel listener = new ServerBootstrap().group(loops.server).channel(NupaServerSocketChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter()).bind(new InetSocketAddress("10.0.0.1", 9005)).sync().channel();
            assertEquals(true, listener.config().getOption(ChannelOption.TCP_NODELAY), "accepted connections start with Nagle off");
            for (var e : Map.<ChannelOption<?>, Object>of(ChannelOption.SO_BACKLOG, 64, ChannelOption.SO_REUSEADDR, true,
                    ChannelOption.TCP_FASTOPEN, 16, ChannelOption.SO_RCVBUF, 131_072).entrySet()) {
                @SuppressWarnings("unchecked")
                ChannelOption<Object> o = (ChannelOption<Object>) e.getKey();
                assertTrue(listener.config().setOption(o, e.getValue()), o + " taken by the listener");
                assertEquals(e.getValue(), listener.config().getOption(o), o + " read back from the listener");
            }
        }
    }

    @Test
    void autoReadTurnedOffBetweenReadsReadsNothingMoreUntilAskedAsOnEpoll() throws Exception {
        try (Loops loops = new Loops()) {
            Sink server = new Sink(); // the server's end writes here; the client's end reads
            Sink reader = new Sink();
            new ServerBootstrap().group(loops.server).channel(NupaServerSocketChannel.class).childHandler(server)
                    .bind(new InetSocketAddress("10.0.0.1", 9004)).sync();
            Channel client = new Bootstrap().group(loops.client).channel(NupaSocketChannel.class).handler(reader)
                    .connect(new InetSocketAddress("10.0.0.1", 9004)).sync().channel();
            Channel writer = server.active.get(10, TimeUnit.SECONDS);
            writer.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {'a'})).sync();
            waitFor(() -> loops.client.submit(() -> reader.read == 1).get(), "the first byte read");
            // Off from the loop, outside a read (as Vert.x's pause() from a timer): epoll clears EPOLLIN at once
            // (AbstractEpollChannel.clearEpollIn), so what comes next stays in the socket.
            loops.client.submit(() -> client.config().setAutoRead(false)).sync();
            writer.config().setOption(ChannelOption.SO_LINGER, 10);
            writer.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {'b'}));
            writer.close().sync(); // SO_LINGER: once the client's stack acknowledged the byte and the FIN
            assertEquals(1, loops.client.submit(() -> reader.read).get(), "nothing read after auto-read went off");
            client.read();
            waitFor(() -> loops.client.submit(() -> reader.read == 2).get(), "the second byte read once asked");
        }
    }

    private interface Check {
        boolean ok() throws Exception;
    }

    private static void waitFor(Check check, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!check.ok()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within 30 s: " + what);
            }
            // Not a fixed wait: the pause between looks at the condition. Each look hops to an event loop, so
            // spinning would keep that loop (one of this machine's two CPUs) busy answering instead of working.
            Thread.sleep(5);
        }
    }
}
