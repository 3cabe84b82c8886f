package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tcp.BufferUnavailableException;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpCounter;
import dev.nupa.tcp.TcpState;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * How a channel's writes and close reach its TCP connection, end to end over two nodes under the
 * transport's event loops (Netty's API, as Vert.x drives it): the buffers of one flush leave together,
 * a composite larger than the send buffer arrives whole; a full close is bounded in FIN-WAIT-2, a half
 * close (shutdownOutput) is not; SO_LINGER 0 resets; a write that finds no buffer memory fails with the
 * remedy and the FIN still leaves. The server's application accepts and then stays silent (half-closure
 * allowed), so its end stays in CLOSE-WAIT unless told otherwise.
 */
class NupaSocketChannelTest {
    private static final long FIN_WAIT_2_TIMEOUT_NS = 300_000_000L;
    private static final TcpConfig TCP = TcpConfig.defaults(9000).withFinWait2Timeout(FIN_WAIT_2_TIMEOUT_NS);

    private final Path fabric = Path.of("/dev/shm/nupa-test-close-" + UUID.randomUUID());
    private FabricStack serverStack;
    private FabricStack clientStack;
    private EventLoopGroup serverLoop;
    private EventLoopGroup clientLoop;

    /** The two nodes; the client's TCP buffers may hold {@code clientBufferMemory} bytes together (0: the default). */
    private void start(long clientBufferMemory) {
        serverLoop = NupaNetty.eventLoopGroup(StackConfig.defaults(fabric, 0).withTcp(TCP)); // 10.0.0.1
        clientLoop = NupaNetty.eventLoopGroup(StackConfig.defaults(fabric, 1).withTcp(TCP).withTcpBufferMemory(clientBufferMemory));
        serverStack = NupaNetty.stack(serverLoop);
        clientStack = NupaNetty.stack(clientLoop);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (clientLoop != null) {
                clientLoop.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
            if (serverLoop != null) {
                serverLoop.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** One end of a connection: what it read, whether its input was shut down, what went wrong. */
    private static final class End extends ChannelInboundHandlerAdapter {
        final ByteArrayOutputStream read = new ByteArrayOutputStream();
        final CompletableFuture<Channel> active = new CompletableFuture<>();
        final CompletableFuture<Void> inputShutdown = new CompletableFuture<>();
        final CompletableFuture<Throwable> error = new CompletableFuture<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            active.complete(ctx.channel());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            byte[] bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);
            synchronized (read) {
                read.writeBytes(bytes);
            }
            b.release();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                inputShutdown.complete(null);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            error.complete(cause);
        }

        String text() {
            synchronized (read) {
                return read.toString(StandardCharsets.US_ASCII);
            }
        }
    }

    /** Connects the client to a silent server on {@code port}; returns the client's end, then the server's. */
    private End[] connect(int port, int clientSendBuffer) throws Exception {
        End server = new End();
        End client = new End();
        new ServerBootstrap().group(serverLoop).channel(NupaServerSocketChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true).childHandler(server)
                .bind(new InetSocketAddress("10.0.0.1", port)).sync();
        Bootstrap b = new Bootstrap().group(clientLoop).channel(NupaSocketChannel.class)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true).handler(client);
        if (clientSendBuffer > 0) {
            b.option(ChannelOption.SO_SNDBUF, clientSendBuffer);
        }
        b.connect(new InetSocketAddress("10.0.0.1", port)).sync();
        client.active.get(10, TimeUnit.SECONDS);
        server.active.get(10, TimeUnit.SECONDS);
        return new End[] {client, server};
    }

    @Test
    void theBuffersOfOneFlushLeaveAsOneSegment() throws Exception {
        // As epoll's gathering write: HTTP/2 writes a call's frames as separate buffers (and composites) and
        // flushes once; each must not become a small segment of its own.
        start(0);
        End[] e = connect(7007, 0);
        Channel c = e[0].active.get();
        c.writeAndFlush(Unpooled.copiedBuffer("warm", StandardCharsets.US_ASCII)).sync();
        waitFor(() -> e[1].text().equals("warm"));
        long before = clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.SEGMENTS_OUT));
        c.eventLoop().submit(() -> {
            c.write(Unpooled.copiedBuffer("one ", StandardCharsets.US_ASCII));
            c.write(Unpooled.wrappedBuffer(Unpooled.copiedBuffer("two ", StandardCharsets.US_ASCII),
                    Unpooled.directBuffer().writeBytes("three ".getBytes(StandardCharsets.US_ASCII))));
            c.write(Unpooled.copiedBuffer("four", StandardCharsets.US_ASCII));
            c.flush();
        }).sync();
        waitFor(() -> e[1].text().equals("warmone two three four"));
        assertEquals(1, clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.SEGMENTS_OUT)) - before,
                "one segment carried the four buffers");
    }

    @Test
    void theFlushesOfOneTurnLeaveTogether() throws Exception {
        // Vert.x's event bus writes and flushes each message on its own: of the 100 small messages one turn of the
        // loop writes, the first leaves at once and the other 99 together at the turn's end (FabricStack.sendDue),
        // not one segment each.
        start(0);
        End[] e = connect(7009, 0);
        Channel c = e[0].active.get();
        c.writeAndFlush(Unpooled.copiedBuffer("warm", StandardCharsets.US_ASCII)).sync();
        waitFor(() -> e[1].text().equals("warm"));
        long before = clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.SEGMENTS_OUT));
        StringBuilder expected = new StringBuilder("warm");
        c.eventLoop().submit(() -> {
            for (int i = 0; i < 100; i++) {
                c.writeAndFlush(Unpooled.copiedBuffer(String.format("m%03d;", i), StandardCharsets.US_ASCII));
            }
        }).sync();
        for (int i = 0; i < 100; i++) {
            expected.append(String.format("m%03d;", i));
        }
        waitFor(() -> e[1].text().equals(expected.toString()));
        assertEquals(2, clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.SEGMENTS_OUT)) - before,
                "two segments carried the turn's 100 messages (500 bytes)");
    }

    @Test
    void aCompositeLargerThanTheSendBufferArrivesWholeInOrder() throws Exception {
        start(0);
        End[] e = connect(7008, 64 * 1024);
        byte[] data = new byte[1 << 20];
        new java.util.Random(7).nextBytes(data);
        // Heap, direct and pooled direct parts of uneven sizes, wrapped in a slice as HTTP/2's encoder hands them on.
        io.netty.buffer.CompositeByteBuf composite = Unpooled.compositeBuffer(64);
        int at = 0;
        for (int i = 0; at < data.length; i++) {
            int n = Math.min(data.length - at, 1 + (i * 7919) % 40_000);
            ByteBuf part = switch (i % 3) {
                case 0 -> Unpooled.wrappedBuffer(data, at, n);
                case 1 -> Unpooled.directBuffer(n).writeBytes(data, at, n);
                default -> io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(n).writeBytes(data, at, n);
            };
            composite.addComponent(true, part);
            at += n;
        }
        e[0].active.get().writeAndFlush(composite.slice(0, data.length).retain()).sync();
        composite.release();
        waitFor(() -> e[1].read.size() == data.length);
        byte[] got;
        synchronized (e[1].read) {
            got = e[1].read.toByteArray();
        }
        assertTrue(java.util.Arrays.equals(data, got), "the bytes arrived as written");
    }

    @Test
    void closeBoundsFinWait2TheConnectionIsResetFreedAndCounted() throws Exception {
        start(0);
        End[] e = connect(7001, 0);
        long closedAt = System.nanoTime();
        e[0].active.get().close().sync();
        Throwable t = e[1].error.get(10, TimeUnit.SECONDS);
        assertTrue(System.nanoTime() - closedAt >= FIN_WAIT_2_TIMEOUT_NS, "not before the timeout");
        assertInstanceOf(SocketException.class, t, "the peer learned of it by a reset: " + t);
        assertTrue(e[1].inputShutdown.isDone(), "the FIN came first: the peer's input was shut down");
        assertEquals(1, clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.FIN_WAIT_2_TIMEOUTS)));
        assertEquals(0, (int) clientStack.link().call(() -> clientStack.tcp().connections()), "nothing left on the client");
        waitFor(() -> serverStack.link().call(() -> serverStack.tcp().connections()) == 0);
    }

    @Test
    void shutdownOutputLeavesAHalfClosedChannelReadingInFinWait2BeyondTheTimeout() throws Exception {
        // Linux times FIN-WAIT-2 only for a connection the application closed (tcp_fin_timeout on an orphan,
        // tcp(7)); one that only shut its output down waits for the peer as long as it takes (RFC 9293). A
        // closed connection beside it times out meanwhile: the timers ran, and passed the half-closed one by.
        start(0);
        End[] e = connect(7002, 0);
        ((DuplexChannel) e[0].active.get()).shutdownOutput().sync();
        e[1].inputShutdown.get(10, TimeUnit.SECONDS);
        waitFor(() -> Map.of(TcpState.FIN_WAIT_2, 1).equals(clientStack.link().call(() -> clientStack.tcp().states())));
        End[] closed = connect(7003, 0);
        closed[0].active.get().close().sync(); // entered FIN-WAIT-2 after the half-closed one
        assertInstanceOf(SocketException.class, closed[1].error.get(10, TimeUnit.SECONDS), "the closed one timed out: a reset");
        assertEquals(1, clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.FIN_WAIT_2_TIMEOUTS)));
        assertEquals(Map.of(TcpState.FIN_WAIT_2, 1), clientStack.link().call(() -> clientStack.tcp().states()),
                "still waiting for the peer, as RFC 9293 allows");
        assertFalse(e[1].error.isDone(), "the half-closed connection was not reset");
        Channel server = e[1].active.get();
        server.writeAndFlush(Unpooled.copiedBuffer("late reply", StandardCharsets.US_ASCII)).sync();
        ((DuplexChannel) server).shutdownOutput().sync();
        e[0].inputShutdown.get(10, TimeUnit.SECONDS);
        assertEquals("late reply", e[0].text());
    }

    @Test
    void soLingerZeroResetsOnCloseLeavingNoTimeWait() throws Exception {
        start(0);
        End[] e = connect(7003, 0);
        Channel c = e[0].active.get();
        c.writeAndFlush(Unpooled.copiedBuffer("before the reset", StandardCharsets.US_ASCII)).sync();
        waitFor(() -> e[1].text().equals("before the reset"));
        c.config().setOption(ChannelOption.SO_LINGER, 0);
        c.close().sync();
        Throwable t = e[1].error.get(10, TimeUnit.SECONDS);
        assertInstanceOf(SocketException.class, t, "the peer got a reset: " + t);
        assertEquals(0, (int) clientStack.link().call(() -> clientStack.tcp().connections()),
                "RFC 9293 3.10.5: an abort leaves no TIME-WAIT");
        assertEquals(1, clientStack.link().call(() -> clientStack.tcp().counter(TcpCounter.CONNECTIONS_FAILED)), "closed by abort");
        assertTrue(!e[0].error.isDone(), "closing is no error on the closing side");
    }

    @Test
    void soLingerOutsideMinusOneTo65535IsRefusedWithTheRange() throws Exception {
        start(0);
        Channel c = connect(7004, 0)[0].active.get();
        NupaSocketChannelConfig config = (NupaSocketChannelConfig) c.config();
        for (int bad : new int[] {-2, 65_536, Integer.MIN_VALUE}) {
            IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> config.setSoLinger(bad));
            assertTrue(x.getMessage().startsWith("SO_LINGER " + bad + " is outside -1..65535 seconds"), x.getMessage());
        }
        assertEquals(-1, config.getSoLinger(), "a refused value changes nothing");
        assertEquals(65_535, config.setSoLinger(65_535).getSoLinger());
    }

    @Test
    void aWriteThatFindsNoBufferMemoryFailsWithTheRemedyAndTheFinStillLeaves() throws Exception {
        start(10_000); // less than one 64 KiB send buffer
        End[] e = connect(7005, 64 * 1024);
        ChannelFuture w = e[0].active.get().writeAndFlush(Unpooled.copiedBuffer("lost for want of memory", StandardCharsets.US_ASCII));
        w.await(10, TimeUnit.SECONDS);
        Throwable t = w.cause();
        while (t != null && !(t instanceof BufferUnavailableException)) {
            t = t.getCause();
        }
        assertTrue(t != null && t.getMessage().contains("65536-byte TCP buffer") && t.getMessage().contains("TcpConfig.withBuffers"),
                String.valueOf(w.cause()));
        assertEquals(0, (long) clientStack.link().call(() -> clientStack.tcp().bufferMemoryUsed()));
        e[1].inputShutdown.get(10, TimeUnit.SECONDS); // the FIN arrived
        assertEquals("", e[1].text(), "nothing of the refused write reached the peer");
    }

    @Test
    void aWriteThatFindsTheBoundFullWaitsUnwritableAndLeavesOnceAnotherConnectionGivesMemoryBack() throws Exception {
        start(100_000); // room for one 64 KiB send buffer (up to the pressure mark, 2/3 of this), not two
        Channel a = connect(7010, 64 * 1024)[0].active.get();
        End[] b = connect(7011, 64 * 1024);
        Channel bc = b[0].active.get();
        a.writeAndFlush(Unpooled.copiedBuffer("holds the memory", StandardCharsets.US_ASCII)).sync();
        byte[] data = new byte[128 * 1024]; // past the outbound buffer's 64 KiB high-water mark
        java.util.Arrays.fill(data, (byte) 'w');
        ChannelFuture w = bc.writeAndFlush(Unpooled.wrappedBuffer(data));
        assertTrue(!bc.isWritable() && !w.isDone(), "the write waits in the outbound buffer, the channel unwritable"
                + " (Vert.x's writeQueueFull), rather than failing: " + w.cause());
        a.close().sync(); // its send buffer's memory goes back once its connection ends
        assertTrue(w.await(10, TimeUnit.SECONDS) && w.isSuccess(), "the waiting write leaves: " + w.cause());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (b[1].text().length() < data.length && System.nanoTime() < deadline) {
            Thread.sleep(5); // a look every 5 ms until it all arrived
        }
        assertEquals(new String(data, StandardCharsets.US_ASCII), b[1].text());
        assertTrue(bc.isWritable(), "writable again once the outbound buffer drained");
    }

    @Test
    void anEmptyFlushAndTheCloseBehindItWaitForNoMemoryWhenTheBoundIsFull() throws Exception {
        // Vert.x's close writes and flushes an empty buffer, then closes once that write completes: with the bound
        // full, a connection that never wrote must still close at once (thousands of closes stalled behind it).
        start(100_000);
        Channel a = connect(7012, 64 * 1024)[0].active.get();
        a.writeAndFlush(Unpooled.copiedBuffer("holds the memory", StandardCharsets.US_ASCII)).sync();
        Channel idle = connect(7013, 64 * 1024)[0].active.get();
        ChannelFuture empty = idle.writeAndFlush(Unpooled.EMPTY_BUFFER);
        assertTrue(empty.await(5, TimeUnit.SECONDS) && empty.isSuccess(), "the empty write completed: " + empty.cause());
        assertTrue(idle.close().await(5, TimeUnit.SECONDS), "the close completed");
        assertTrue(a.isActive(), "the connection that holds the memory is untouched");
    }

    @Test
    void thePeersFinClosesAChannelOnlyAfterTheWritesItHadAcceptedReachedTheConnection() throws Exception {
        // An echo server without half-closure that reads only while it can write (as Vert.x's pipeTo), and a client
        // that sends 8 MiB, shuts its output down once they are sent and reads slowly: the FIN reaches the server
        // while echoed bytes still wait for room in its send buffer. They must all come back.
        start(0);
        new ServerBootstrap().group(serverLoop).channel(NupaServerSocketChannel.class)
                .childHandler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ctx.write(msg);
                        if (!ctx.channel().isWritable()) {
                            ctx.channel().config().setAutoRead(false);
                        }
                    }

                    @Override
                    public void channelReadComplete(ChannelHandlerContext ctx) {
                        ctx.flush();
                    }

                    @Override
                    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                        ctx.channel().config().setAutoRead(ctx.channel().isWritable());
                    }
                })
                .bind(new InetSocketAddress("10.0.0.1", 7006)).sync();
        End client = new End();
        Channel c = new Bootstrap().group(clientLoop).channel(NupaSocketChannel.class)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true).option(ChannelOption.AUTO_READ, false).handler(client)
                .connect(new InetSocketAddress("10.0.0.1", 7006)).sync().channel();
        byte[] data = new byte[8 << 20];
        new java.util.Random(8).nextBytes(data);
        // Netty's shutdownOutput drops writes still queued, so it follows the last write's completion.
        c.writeAndFlush(Unpooled.wrappedBuffer(data)).addListener(f -> ((DuplexChannel) c).shutdownOutput());
        java.util.concurrent.ScheduledFuture<?> slowReader = clientLoop.scheduleAtFixedRate(c::read, 0, 2, TimeUnit.MILLISECONDS);
        waitFor(() -> !c.isActive() || client.inputShutdown.isDone());
        slowReader.cancel(false);
        byte[] back;
        synchronized (client.read) {
            back = client.read.toByteArray();
        }
        assertEquals(data.length, back.length, "bytes echoed before the server's FIN; server " + serverStack.link().call(
                () -> serverStack.tcp().counters()) + "; client " + clientStack.link().call(() -> clientStack.tcp().counters()));
        assertTrue(java.util.Arrays.equals(data, back), "the echo is the data");
    }

    private static void waitFor(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached in 10 s");
            }
            Thread.sleep(10);
        }
    }
}
