package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.tcp.TcpServer;
import dev.nupa.tcp.TcpSocket;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;

/** TCP between two nodes in one application, through the Vert.x-style sockets and real datapath threads. */
class TcpNodeTest {
    private final Path fabric = Path.of("/dev/shm/nupa-tcp-node-test-" + UUID.randomUUID());
    private Vertx vertx;
    private NupaNode server;
    private NupaNode client;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        server = NupaNode.start(vertx, NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
        client = NupaNode.start(vertx, NodeConfig.defaults(fabric, 1)).await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
        Files.deleteIfExists(fabric);
    }

    @Test
    void echoOfEightMegabytesThroughPipeToArrivesIntactAndBothSidesClose() throws Exception {
        TcpServer echo = server.createTcpServer();
        Promise<Void> serverClosed = Promise.promise();
        echo.connectHandler(s -> {
            s.closeHandler(v -> serverClosed.tryComplete());
            s.pipeTo(s); // echo with back-pressure; ends (FIN) when the client ends
        });
        echo.listen(7).await(5, TimeUnit.SECONDS);

        TcpSocket socket = client.connectTcp(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        // 8 MiB: enough for back-pressure, zero windows and (on a busy machine) timeouts to happen;
        // it once stalled on ACKs numbered past a zero window (fixed, see TcpConnectionTest).
        byte[] data = new byte[8 << 20];
        new Random(1).nextBytes(data);
        Buffer received = Buffer.buffer(data.length);
        Promise<Void> ended = Promise.promise();
        socket.handler(received::appendBuffer);
        socket.endHandler(v -> ended.tryComplete());
        for (int at = 0; at < data.length; at += 64 * 1024) {
            socket.write(Buffer.buffer(java.util.Arrays.copyOfRange(data, at, Math.min(data.length, at + 64 * 1024))));
        }
        socket.end();
        try {
            ended.future().await(20, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            String c = client.link().call(() -> socket.connection().toString()); // the connection is the loop's
            throw new AssertionError("echo incomplete: " + received.length() + " of " + data.length + " bytes back; client "
                    + c + " " + client.tcp().counters() + "; server " + server.tcp().counters() + " " + server.ip().counters());
        }
        assertEquals(data.length, received.length());
        assertArrayEquals(data, received.getBytes());
        serverClosed.future().await(30, TimeUnit.SECONDS);
    }

    @Test
    void rxFlowableOfASocketDeliversAsRequestedAndCompletableWritesComplete() throws Exception {
        TcpServer echo = server.createTcpServer();
        echo.connectHandler(s -> s.pipeTo(s));
        echo.listen(9).await(5, TimeUnit.SECONDS);
        TcpSocket socket = client.connectTcp(9, "10.0.0.1").await(10, TimeUnit.SECONDS);
        var subscriber = dev.nupa.ip.RxStreams.toFlowable(socket).test(0);
        for (int i = 0; i < 5; i++) {
            dev.nupa.ip.RxStreams.completable(socket.write(Buffer.buffer("chunk-" + i + ";"))).blockingAwait();
        }
        // The echo comes back into the client connection's receive buffer and stays there, unread: a read
        // would have taken bytes out of it. Only then is "nothing delivered" a fact, not a guess.
        int total = "chunk-0;chunk-1;chunk-2;chunk-3;chunk-4;".length();
        long until = System.nanoTime() + 10_000_000_000L;
        int unread = 0;
        while ((unread = client.link().call(() -> socket.connection().readable())) < total && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        assertEquals(total, unread, "the whole echo waits unread in the receive buffer");
        assertEquals(0, subscriber.values().size(), "nothing arrives before it is requested");
        subscriber.requestMore(100);
        StringBuilder all = new StringBuilder();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!all.toString().contains("chunk-4;") && System.nanoTime() < deadline) {
            Thread.sleep(20);
            all.setLength(0);
            subscriber.values().forEach(b -> all.append(b.toString()));
        }
        assertEquals("chunk-0;chunk-1;chunk-2;chunk-3;chunk-4;", all.toString());
        socket.end();
        subscriber.awaitDone(10, TimeUnit.SECONDS);
        subscriber.assertComplete();
    }

    @Test
    void writesPacedByWriteQueueFullAndTheDrainHandlerArriveInOrder() throws Exception {
        // Found by tcp-check: the drain handler ran inside write(), so a writer looping until
        // writeQueueFull() re-entered itself and sent its first 64 KiB twice.
        server.createTcpServer().connectHandler(s -> s.pipeTo(s)).listen(8).await(5, TimeUnit.SECONDS);
        byte[] data = new byte[8 << 20];
        new Random(3).nextBytes(data);
        Buffer received = Buffer.buffer(data.length);
        Promise<Void> all = Promise.promise();
        vertx.runOnContext(v -> client.connectTcp(8, "10.0.0.1").onSuccess(s -> {
            s.handler(b -> {
                received.appendBuffer(b);
                if (received.length() >= data.length) {
                    all.tryComplete();
                }
            });
            TcpCheckCommand.writePaced(s, data); // the paced writer tcp-check uses
        }));
        all.future().await(60, TimeUnit.SECONDS);
        assertEquals(-1, java.util.Arrays.mismatch(data, received.getBytes()), "first differing byte");
    }

    @Test
    void connectingToAPortNobodyListensOnIsRefused() throws Exception {
        Future<TcpSocket> f = client.connectTcp(4444, "10.0.0.1");
        Throwable t = f.transform(ar -> Future.succeededFuture(ar.cause())).await(10, TimeUnit.SECONDS);
        assertTrue(t != null && t.getMessage().contains("connection refused"), String.valueOf(t));
    }
    /** An echo server on port {@code port} of the server node whose sockets' errors reach {@code errors} (pipeTo would take them). */
    private void echo(int port, Promise<Throwable> errors) throws Exception {
        server.createTcpServer().connectHandler(s -> {
            s.exceptionHandler(errors::tryComplete);
            s.handler(s::write);
        }).listen(port).await(5, TimeUnit.SECONDS);
    }

    /** Writes {@code n} bytes and waits until they came back. */
    private static void echoed(TcpSocket socket, int n) throws Exception {
        Promise<Void> back = Promise.promise();
        long[] got = {0};
        socket.handler(b -> {
            got[0] += b.length();
            if (got[0] >= n) {
                back.tryComplete();
            }
        });
        socket.write(Buffer.buffer(new byte[n]));
        back.future().await(10, TimeUnit.SECONDS);
    }

    @Test
    void soLinger_zeroResetsOnCloseLeavingNoTimeWaitAndNoErrorOnThisSide() throws Exception {
        Promise<Throwable> serverError = Promise.promise();
        echo(11, serverError);
        TcpSocket socket = client.connectTcp(11, "10.0.0.1").await(10, TimeUnit.SECONDS);
        Promise<Throwable> clientError = Promise.promise();
        Promise<Void> closed = Promise.promise();
        socket.exceptionHandler(clientError::tryComplete);
        socket.closeHandler(v -> closed.tryComplete());
        echoed(socket, 1000);

        socket.setLinger(0).close().await(5, TimeUnit.SECONDS);
        closed.future().await(5, TimeUnit.SECONDS);
        assertEquals(0, client.tcp().connections(), "RFC 9293 3.10.5: an abort leaves no TIME-WAIT " + client.tcp().states());
        assertTrue(serverError.future().await(5, TimeUnit.SECONDS).getMessage().contains("connection reset by peer"),
                "the peer got a RST");
        assertEquals(1, client.tcp().counter(dev.nupa.tcp.TcpCounter.CONNECTIONS_FAILED), "closed by abort");
        // TcpSocket calls the exception handler, when it calls it, before the close handler that completed
        // `closed` (both on the socket's context): no wait is needed to see that it was not called.
        assertFalse(clientError.future().isComplete(), "closing is no error: " + clientError.future().result());
    }

    @Test
    void soLinger_positiveCompletesCloseOnceThePeerAcknowledgedEveryByte() throws Exception {
        java.util.concurrent.atomic.AtomicLong received = new java.util.concurrent.atomic.AtomicLong();
        server.createTcpServer().connectHandler(s -> s.handler(b -> received.addAndGet(b.length()))).listen(12)
                .await(5, TimeUnit.SECONDS);
        TcpSocket socket = client.connectTcp(12, "10.0.0.1").await(10, TimeUnit.SECONDS);
        socket.setLinger(10);
        assertEquals(10, socket.linger());
        int n = 4 << 20;
        socket.write(Buffer.buffer(new byte[n]));
        socket.close().await(15, TimeUnit.SECONDS);
        dev.nupa.tcp.TcpState st = client.link().call(() -> socket.connection().state()); // read on the loop
        int unacknowledged = client.link().call(() -> socket.connection().unacknowledged());
        assertTrue(st == dev.nupa.tcp.TcpState.FIN_WAIT_2 || st == dev.nupa.tcp.TcpState.TIME_WAIT,
                "the FIN was acknowledged when close completed: " + st);
        assertEquals(0, unacknowledged, "every byte acknowledged");
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (received.get() < n && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(n, received.get(), "and the server read them all");
    }

    @Test
    void soLinger_runsOutWhenThePeerNeverAcknowledgesTheFin() throws Exception {
        server.createTcpServer().connectHandler(s -> { }).listen(13).await(5, TimeUnit.SECONDS);
        TcpSocket socket = client.connectTcp(13, "10.0.0.1").await(10, TimeUnit.SECONDS);
        server.close().await(10, TimeUnit.SECONDS); // the peer leaves the fabric: nothing will acknowledge
        long start = System.nanoTime();
        Throwable t = socket.setLinger(1).close().transform(ar -> Future.succeededFuture(ar.cause()))
                .await(10, TimeUnit.SECONDS);
        double seconds = (System.nanoTime() - start) / 1e9;
        assertTrue(t != null && t.getMessage().contains("linger of 1 s ran out"), String.valueOf(t));
        assertTrue(seconds >= 0.9, "it lingered: " + seconds + " s");
    }

    @Test
    void soLinger_valuesOutsideMinusOneTo65535AreRefused() throws Exception {
        server.createTcpServer().connectHandler(s -> { }).listen(14).await(5, TimeUnit.SECONDS);
        TcpSocket socket = client.connectTcp(14, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals(-1, socket.linger(), "off unless set");
        for (int bad : new int[] {-2, 65_536, Integer.MIN_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> socket.setLinger(bad));
            assertEquals("linger must be -1 (off) or 0..65535 seconds, got " + bad, e.getMessage());
        }
        assertEquals(-1, socket.linger(), "a refused value changes nothing");
        socket.setLinger(65_535).setLinger(-1);
        assertEquals(-1, socket.linger());
    }
}
