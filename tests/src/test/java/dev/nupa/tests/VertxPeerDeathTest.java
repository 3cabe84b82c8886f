package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricGeometry;
import dev.nupa.examples.HelloServer;
import dev.nupa.ip.IpCounter;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import java.io.IOException;
import java.net.NoRouteToHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Unmodified Vert.x code whose peer's node dies: this JVM's Vert.x (node 1) holds NetSockets and a DatagramSocket
 * toward {@link HelloServer} in a child JVM (node 0), which is killed with SIGKILL, so nothing of it says goodbye.
 * Every NetSocket ends through its exception and close handlers with the error Linux gives, within the fabric's
 * liveness timeout rather than TCP's retransmission timeout (which an idle connection never even starts); a connect
 * afterwards fails at once with "No route to host", as Linux's connect(2) once ARP failed (EHOSTUNREACH), not after
 * the connect timeout; a datagram sent afterwards fails its send, and the socket goes on.
 */
@Tag("process")
class VertxPeerDeathTest {
    private static final String SERVER = "10.0.0.1";
    private static final int SOCKETS = 30;

    private final Path fabric = ChildJvm.newFabricPath();
    private ChildJvm server;
    private Vertx vertx;

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (vertx != null) {
                vertx.close().await(10, TimeUnit.SECONDS);
            }
        } finally {
            if (server != null) {
                server.close();
            }
            Files.deleteIfExists(fabric);
        }
    }

    /** How one NetSocket ended: the exception its handler saw (null: none) once its close handler ran. */
    private record Ending(NetSocket socket, AtomicReference<Throwable> error, CompletableFuture<Void> closed) {
        static Ending watch(NetSocket s) {
            Ending e = new Ending(s, new AtomicReference<>(), new CompletableFuture<>());
            s.exceptionHandler(t -> e.error.compareAndSet(null, t));
            s.closeHandler(v -> e.closed.complete(null));
            return e;
        }
    }

    @Test
    void netSocketsToAKilledNodeEndWithConnectionResetAndAConnectAfterFailsWithNoRouteToHost() throws Exception {
        server = ChildJvm.start("hello-server", HelloServer.class, fabric, 0);
        server.awaitLine("READY", 60_000);
        vertx = NupaVertx.create(StackConfig.defaults(fabric, 1));
        // A connect timeout longer than the whole test: a connect that fails did not wait for it.
        NetClient nc = vertx.createNetClient(new NetClientOptions().setConnectTimeout(600_000));

        List<Ending> endings = new ArrayList<>();
        for (int i = 0; i < SOCKETS; i++) {
            NetSocket s = nc.connect(7, SERVER).await(10, TimeUnit.SECONDS); // the echo service
            Ending e = Ending.watch(s);
            endings.add(e);
            switch (i % 3) {
                case 0 -> { // live: one round trip
                    CompletableFuture<String> back = new CompletableFuture<>();
                    s.handler(b -> back.complete(b.toString()));
                    s.write("ping").await(10, TimeUnit.SECONDS);
                    assertEquals("ping", back.get(10, TimeUnit.SECONDS));
                }
                case 1 -> { // sends pending: it reads nothing back, so the echo stops reading, and its writes wait
                    s.pause();
                    Buffer chunk = Buffer.buffer(new byte[64 * 1024]);
                    for (int k = 0; k < 4096 && !s.writeQueueFull(); k++) {
                        s.write(chunk);
                    }
                    ChildJvm.waitUntil("socket " + i + "'s write queue to fill", 30_000, s::writeQueueFull);
                }
                default -> { } // idle: nothing in flight, so TCP alone would never learn of the death
            }
        }

        DatagramSocket udp = vertx.createDatagramSocket();
        LinkedBlockingQueue<String> datagrams = new LinkedBlockingQueue<>();
        udp.handler(p -> datagrams.add(p.data().toString()));
        udp.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        udp.send("before", 9, SERVER).await(10, TimeUnit.SECONDS); // the UDP echo
        assertEquals("before", datagrams.poll(10, TimeUnit.SECONDS));

        server.kill(); // SIGKILL
        long killed = System.nanoTime();
        long livenessTimeoutMs = FabricGeometry.defaults().heartbeatTimeoutNs() / ChildJvm.MS;
        // Bounded by the liveness timeout and a margin for a loaded machine: far below TCP's retransmission timeout
        // (RFC 6298, Linux's tcp_retries2: some 15 minutes), which the idle sockets would not even start.
        ChildJvm.waitUntil("every NetSocket's close handler", livenessTimeoutMs + 10_000,
                () -> endings.stream().allMatch(e -> e.closed().isDone()));
        System.out.printf("all %d NetSockets closed %d ms after the kill%n", SOCKETS, (System.nanoTime() - killed) / ChildJvm.MS);
        for (int i = 0; i < SOCKETS; i++) {
            Throwable t = endings.get(i).error().get();
            assertNotNull(t, "socket " + i + "'s exception handler ran before its close handler");
            assertInstanceOf(IOException.class, t, "socket " + i);
            assertTrue(t.getMessage().contains("Connection reset") || t.getMessage().contains("No route to host"),
                    "socket " + i + ": " + t);
        }

        // A new connect fails at once: the address is no fabric node's now (EHOSTUNREACH), and no SYN leaves.
        Future<NetSocket> again = nc.connect(7, SERVER);
        ChildJvm.waitUntil("the connect after the death to end", 30_000, again::isComplete);
        assertTrue(again.failed(), "a connect to the dead node's address failed");
        assertInstanceOf(NoRouteToHostException.class, again.cause(), "not the connect timeout: " + again.cause());
        assertTrue(again.cause().getMessage().contains("No route to host"), again.cause().getMessage());

        // UDP: the send succeeds and the datagram is dropped and counted, as Linux's sendto to an on-link host that no
        // longer answers ARP (udp(7)); the socket goes on.
        long dropped = udpDrops(vertx);
        udp.send("after", 9, SERVER).await(10, TimeUnit.SECONDS);
        assertEquals(dropped + 1, udpDrops(vertx), "the datagram to the dead node's address was dropped and counted");
        udp.send("to myself", udp.localAddress().port(), "10.0.0.2").await(10, TimeUnit.SECONDS);
        assertEquals("to myself", datagrams.poll(10, TimeUnit.SECONDS), "the socket goes on");
        udp.close().await(10, TimeUnit.SECONDS);
        nc.close().await(10, TimeUnit.SECONDS);
    }

    /** Datagrams the node's IP did not send: no node holds the address (OUT_NO_ROUTES), or its node is down (OUT_DISCARDS). */
    private static long udpDrops(Vertx v) {
        return NupaVertx.stack(v).ip().counter(IpCounter.OUT_NO_ROUTES) + NupaVertx.stack(v).ip().counter(IpCounter.OUT_DISCARDS);
    }
}
