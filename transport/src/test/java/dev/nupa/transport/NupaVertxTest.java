package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.IpCounter;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import java.io.IOException;
import java.net.ConnectException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Unmodified Vert.x code over the fabric: two Vert.x instances, each on its own fabric node (one
 * file, one JVM), talk TCP (NetServer/NetClient), HTTP/1.1 and UDP (DatagramSocket) to each other.
 */
class NupaVertxTest {
    private Path fabric;
    private Vertx server;
    private Vertx client;

    @BeforeEach
    void start() {
        fabric = Path.of("/dev/shm/nupa-test-vertx-" + UUID.randomUUID());
        server = NupaVertx.create(StackConfig.defaults(fabric, 0)); // 10.0.0.1
        client = NupaVertx.create(StackConfig.defaults(fabric, 1)); // 10.0.0.2
    }

    @AfterEach
    void stop() throws Exception {
        Nodes.close(fabric, client, server);
    }

    @Test
    void netSocketEchoesWithPipeToAndTheStackRunsOnTheEventLoop() throws Exception {
        AtomicReference<String> serverThread = new AtomicReference<>();
        NetServer echo = server.createNetServer().connectHandler(s -> {
            serverThread.set(Thread.currentThread().getName() + " owner=" + NupaVertx.stack(server).link().isOwner());
            s.pipeTo(s);
        });
        echo.listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        assertEquals(7, echo.actualPort());

        byte[] data = new byte[8 << 20];
        new Random(7).nextBytes(data);
        NetClient nc = client.createNetClient();
        NetSocket socket = nc.connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals("10.0.0.1:7", socket.remoteAddress().toString());
        Buffer received = Buffer.buffer(data.length);
        Promise<Void> all = Promise.promise();
        socket.handler(b -> {
            received.appendBuffer(b);
            if (received.length() == data.length) {
                all.tryComplete();
            }
        });
        for (int at = 0; at < data.length; at += 64 * 1024) {
            socket.write(Buffer.buffer(java.util.Arrays.copyOfRange(data, at, Math.min(data.length, at + 64 * 1024))));
        }
        all.future().await(30, TimeUnit.SECONDS);
        assertArrayEquals(data, received.getBytes());
        assertTrue(serverThread.get().endsWith("owner=true"), "the handler ran on the node's owner thread: " + serverThread.get());
        Promise<Void> closed = Promise.promise();
        socket.closeHandler(v -> closed.complete());
        socket.close();
        closed.future().await(10, TimeUnit.SECONDS); // at once, not after TIME-WAIT
    }

    @Test
    void aWarmUpRunsOverLoopbackAndBetweenTwoNodesOfItsOwnAndLeavesNothingOpen() throws Exception {
        long udpIn = NupaVertx.stack(server).ip().counter(IpCounter.UDP_IN_DATAGRAMS);
        String pairFabric = "nupa-warmup-" + ProcessHandle.current().pid() + "-";
        Path dir = dev.nupa.device.ShmFabric.freshPath("x").getParent(); // where the warm-up makes its fabric file
        Future<Void> warmUp = NupaVertx.warmUp(server, 50);
        boolean pairSeen = false;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!warmUp.isComplete() && System.nanoTime() < end) {
            pairSeen |= countFiles(dir, pairFabric) > 0; // the two nodes' private fabric, while they run
            Thread.sleep(1);
        }
        warmUp.await(1, TimeUnit.SECONDS);
        assertTrue(pairSeen, "the warm-up ran two nodes on a fabric file of their own");
        assertEquals(0, countFiles(dir, pairFabric), "their fabric file is deleted");
        assertEquals(udpIn + 100, NupaVertx.stack(server).ip().counter(IpCounter.UDP_IN_DATAGRAMS),
                "50 datagrams each way over the loopback");
        // The client's ends wait in TIME-WAIT (it closed first), as on Linux; nothing else is left.
        FabricStack stack = NupaVertx.stack(server);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!stack.tcp().list(10).isEmpty() && System.nanoTime() < deadline) {
            Thread.onSpinWait(); // both ends of each loopback connection finish closing on the loop
        }
        assertEquals(java.util.List.of(), stack.tcp().list(10), "no connection left but TIME-WAIT records");
        assertEquals(java.util.Set.of(dev.nupa.tcp.TcpState.TIME_WAIT), stack.tcp().states().keySet());
        assertThrows(IllegalArgumentException.class, () -> NupaVertx.warmUp(server, 0));
    }

    @Test
    void httpRequestsGetTheirAnswers() throws Exception {
        HttpServer http = server.createHttpServer().requestHandler(req -> req.body().onSuccess(body ->
                req.response().putHeader("content-type", "text/plain").end(req.method() + " " + req.path() + " " + body.length())));
        http.listen(8080, "0.0.0.0").await(10, TimeUnit.SECONDS);
        HttpClient hc = client.createHttpClient();
        for (int i = 0; i < 50; i++) { // keep-alive: one connection, many requests
            Buffer upload = Buffer.buffer(new byte[i * 1000]);
            String body = hc.request(HttpMethod.POST, 8080, "10.0.0.1", "/echo/" + i)
                    .compose(req -> req.send(upload).compose(HttpClientResponse::body))
                    .await(10, TimeUnit.SECONDS).toString();
            assertEquals("POST /echo/" + i + " " + (i * 1000), body);
        }
    }

    @Test
    void aThousandDatagramsOfRandomSizesUpToSixtyThousandBytesAreEchoedIntact() throws Exception {
        // Up to 60,000 bytes: most are fragmented to the 9,000-byte MTU and reassembled on both nodes.
        DatagramSocket echo = server.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(9, "0.0.0.0").await(10, TimeUnit.SECONDS);
        DatagramSocket socket = client.createDatagramSocket();
        int count = 1000;
        byte[][] sent = new byte[count][];
        Random rnd = new Random(7);
        int[] next = {0};
        int[] got = {0};
        int[] changed = {0};
        Promise<Void> all = Promise.promise();
        Runnable sendOne = () -> {
            int i = next[0]++;
            if (i < count) {
                byte[] data = new byte[4 + rnd.nextInt(60_000 - 4)];
                rnd.nextBytes(data);
                java.nio.ByteBuffer.wrap(data).putInt(0, i);
                sent[i] = data;
                socket.send(Buffer.buffer(data), 9, "10.0.0.1").onFailure(all::tryFail);
            }
        };
        socket.handler(p -> { // on the client's loop, as sendOne runs
            if (!Arrays.equals(sent[p.data().getInt(0)], p.data().getBytes())) {
                changed[0]++;
            }
            if (++got[0] == count) {
                all.tryComplete();
            }
            sendOne.run();
        });
        socket.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        client.runOnContext(v -> { // a window of 16 in flight
            for (int w = 0; w < 16; w++) {
                sendOne.run();
            }
        });
        all.future().await(60, TimeUnit.SECONDS);
        assertEquals(0, changed[0], "datagrams that came back changed");
        assertEquals(0, NupaVertx.stack(server).ip().counter(IpCounter.UDP_RCVBUF_ERRORS));
        assertEquals(0, NupaVertx.stack(client).ip().counter(IpCounter.REASM_FAILS));
    }

    @Test
    void datagramMisuseFailsWithTheReason() throws Exception {
        DatagramSocket s1 = client.createDatagramSocket();
        s1.listen(53, "0.0.0.0").await(10, TimeUnit.SECONDS);
        Exception taken = assertThrows(Exception.class,
                () -> client.createDatagramSocket().listen(53, "0.0.0.0").await(10, TimeUnit.SECONDS));
        assertTrue(taken.getMessage().contains("53 is already in use"), taken.toString());
        Exception foreign = assertThrows(Exception.class,
                () -> client.createDatagramSocket().listen(54, "10.0.0.1").await(10, TimeUnit.SECONDS));
        assertTrue(foreign.getMessage().contains("10.0.0.1 is not an address of this node (10.0.0.2"), foreign.toString());
        // An address of the subnet no node holds: sent, as Linux's sendto to an on-link host that never answers ARP,
        // and dropped and counted (udp(7)).
        long noRoutes = NupaVertx.stack(client).ip().counter(IpCounter.OUT_NO_ROUTES);
        s1.send("x", 7, "10.0.0.77").await(10, TimeUnit.SECONDS);
        assertEquals(noRoutes + 1, NupaVertx.stack(client).ip().counter(IpCounter.OUT_NO_ROUTES));
        // A closed port answers with ICMP port unreachable: counted, and the socket goes on, as an unconnected UDP
        // socket does on Linux (Vert.x would close it on an exception).
        Promise<Throwable> error = Promise.promise();
        s1.exceptionHandler(error::tryComplete);
        long before = NupaVertx.stack(client).ip().counter(IpCounter.ICMP_IN_DEST_UNREACHS);
        s1.send("x", 4444, "10.0.0.1").await(10, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (NupaVertx.stack(client).ip().counter(IpCounter.ICMP_IN_DEST_UNREACHS) == before && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(before + 1, NupaVertx.stack(client).ip().counter(IpCounter.ICMP_IN_DEST_UNREACHS), "the port unreachable came");
        DatagramSocket echo = server.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(4445, "0.0.0.0").await(10, TimeUnit.SECONDS);
        Promise<String> back = Promise.promise();
        s1.handler(p -> back.tryComplete(p.data().toString()));
        s1.send("still here", 4445, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals("still here", back.future().await(10, TimeUnit.SECONDS), "the socket still sends and receives");
        assertTrue(!error.future().isComplete(), "no exception: " + error.future().result());
    }

    @Test
    void aSlowReaderThrottlesAFastWriterWithBoundedMemory() throws Exception {
        // The server reads nothing until told: the client's writes must stop (writeQueueFull) once the
        // server's receive window, the client's send buffer and Vert.x's write queue are full.
        Promise<NetSocket> accepted = Promise.promise();
        server.createNetServer().connectHandler(s -> {
            s.pause();
            accepted.complete(s);
        }).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        // Referenced to the end: a Vert.x client the collector takes shuts down with a 30 s grace (CleanableNetClient),
        // which closing the Vert.x instance waits for.
        NetClient netClient = client.createNetClient();
        NetSocket socket = netClient.connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        NetSocket serverSide = accepted.future().await(10, TimeUnit.SECONDS);
        Buffer chunk = Buffer.buffer(new byte[64 * 1024]);
        Promise<Long> blocked = Promise.promise();
        long[] written = {0};
        client.runOnContext(v -> {
            Runnable[] pump = new Runnable[1];
            pump[0] = () -> {
                while (!socket.writeQueueFull()) {
                    socket.write(chunk);
                    written[0] += chunk.length();
                    if (written[0] > 256L << 20) {
                        blocked.tryFail("wrote 256 MiB to a reader that reads nothing: no back-pressure");
                        return;
                    }
                }
                // Full: wait a while for the queue to drain; a paused reader must not let it.
                client.setTimer(300, t -> {
                    if (socket.writeQueueFull()) {
                        blocked.tryComplete(written[0]);
                    } else {
                        pump[0].run();
                    }
                });
            };
            pump[0].run();
        });
        long held = blocked.future().await(30, TimeUnit.SECONDS);
        // What was accepted is bounded by the queues on the way: the client's write queue, the TCP send
        // and receive buffers (256 KiB each) and what the server's NetSocket had taken in before its
        // pause closed the channel (about 1.3 MiB in all here); without back-pressure the writer
        // would have gone on to the 256 MiB cap above.
        System.out.println("NupaVertxTest: " + held + " bytes accepted while the reader was paused");
        assertTrue(held <= 4 << 20, "bytes accepted while the reader was paused: " + held);
        // Resumed, the reader gets every byte and the writer may go on.
        long[] read = {0};
        Promise<Void> all = Promise.promise();
        server.runOnContext(v -> {
            serverSide.handler(b -> {
                read[0] += b.length();
                if (read[0] == held) {
                    all.tryComplete();
                }
            });
            serverSide.resume();
        });
        all.future().await(30, TimeUnit.SECONDS);
        assertEquals(held, read[0]);
        java.lang.ref.Reference.reachabilityFence(netClient);
    }

    /** A client connection with SO_LINGER {@code seconds} that wrote 2 MiB, and its server side, paused. */
    private record Lingering(NetClient netClient, NetSocket client, NetSocket server) {
    }

    private Lingering lingeringConnection(int port, int seconds, int sendBuffer) throws Exception {
        Promise<NetSocket> accepted = Promise.promise();
        server.createNetServer().connectHandler(s -> {
            s.pause();
            accepted.complete(s);
        }).listen(port, "0.0.0.0").await(10, TimeUnit.SECONDS);
        // Kept referenced (in the record): a Vert.x client the collector takes closes itself gracefully, slowly.
        NetClient netClient = client.createNetClient(new NetClientOptions().setSoLinger(seconds).setSendBufferSize(sendBuffer));
        NetSocket socket = netClient.connect(port, "10.0.0.1").await(10, TimeUnit.SECONDS);
        NetSocket serverSide = accepted.future().await(10, TimeUnit.SECONDS);
        // More than the paused peer's window and our send buffer take: some waits in Vert.x's queue, unsent.
        Buffer chunk = Buffer.buffer(new byte[64 * 1024]);
        client.runOnContext(v -> {
            for (int i = 0; i < 32; i++) {
                socket.write(chunk);
            }
        });
        return new Lingering(netClient, socket, serverSide);
    }

    @Test
    void soLingerAboveZeroCompletesTheCloseOnceThePeerHasEveryByte() throws Exception {
        Lingering l = lingeringConnection(17, 30, 256 * 1024);
        long[] closedAt = {0};
        Promise<Void> closed = Promise.promise();
        client.runOnContext(v -> l.client().close().onComplete(r -> {
            closedAt[0] = System.nanoTime();
            closed.handle(r);
        }));
        // The close cannot complete while the peer reads nothing: its window holds our FIN back.
        long[] resumedAt = {0};
        long[] read = {0};
        Promise<Void> end = Promise.promise();
        server.setTimer(500, t -> {
            resumedAt[0] = System.nanoTime();
            l.server().handler(b -> read[0] += b.length());
            l.server().endHandler(x -> end.complete());
            l.server().resume();
        });
        closed.future().await(30, TimeUnit.SECONDS);
        end.future().await(30, TimeUnit.SECONDS);
        assertTrue(resumedAt[0] != 0 && closedAt[0] > resumedAt[0], "the close completed after the peer resumed reading");
        assertTrue(read[0] >= 256 * 1024, "the peer read what was sent before the close: " + read[0]);
    }

    @Test
    void soLingerAboveZeroGivesUpAfterItsSecondsWhenThePeerReadsNothing() throws Exception {
        // A send buffer that takes all 2 MiB: Vert.x's queue empties, so its close reaches the channel (with
        // writes still queued in Vert.x, a close waits for them, on any transport) and the FIN waits behind
        // data the paused peer's closed window holds back.
        Lingering l = lingeringConnection(18, 1, 4 << 20);
        long start = System.nanoTime();
        Promise<Void> closed = Promise.promise();
        client.runOnContext(v -> l.client().close().onComplete(closed));
        closed.future().await(30, TimeUnit.SECONDS);
        long waited = System.nanoTime() - start;
        assertTrue(waited >= 1_000_000_000L, "the close waited out its linger of 1 s: " + waited / 1_000_000 + " ms");
    }

    @Test
    void aClosedPortRefusesTheConnection() {
        Future<NetSocket> f = client.createNetClient().connect(4444, "10.0.0.1");
        Exception e = assertThrows(Exception.class, () -> f.await(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, e, e.toString());
    }

    private static long countFiles(Path dir, String prefix) throws IOException {
        try (var files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().startsWith(prefix)).count();
        }
    }
}
