package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricGeometry;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpCounter;
import dev.nupa.tcp.TcpError;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.tcp.TcpState;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.StackConfig;

/**
 * A client node process holding a few hundred TCP connections to a server node in this JVM is killed with SIGKILL:
 * within the fabric's liveness timeout the server has ended every one of them, its application saw each reset, their
 * buffers are back in the budget, and no segment to the dead node is tried any more.
 */
@Tag("process")
class PeerDeathTest {
    private static final int PORT = 7400;
    private static final int CONNECTIONS = Integer.getInteger("nupa.peerDeathConnections", 300);
    private static final long MS = 1_000_000L;

    private final Path fabric = ChildJvm.newFabricPath();
    private FabricStack server;
    private ChildJvm client;

    @AfterEach
    void cleanUp() throws Exception {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
        Files.deleteIfExists(fabric);
    }

    /** What the server's connections tried to send: not the resets it answers strays with. */
    private long sent(TcpLayer tcp) {
        return server.link().call(() -> tcp.counter(TcpCounter.SEGMENTS_OUT) - tcp.counter(TcpCounter.RESETS_SENT)
                + tcp.counter(TcpCounter.SEND_FAILURES) + tcp.counter(TcpCounter.SEND_DEFERRED));
    }

    private static void await(String what, long timeoutMs, java.util.function.BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * MS;
        while (!done.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, what + " did not happen within " + timeoutMs + " ms");
            Thread.sleep(20); // a pause between looks at a condition, not a timing
        }
    }

    @Test
    void aKilledClientsConnectionsAreResetWithinTheLivenessTimeoutAndNothingMoreIsSentToIt() throws Exception {
        server = FabricStack.open(StackConfig.defaults(fabric, 0));
        TcpLayer tcp = server.tcp();
        AtomicInteger resets = new AtomicInteger();
        AtomicInteger otherEnds = new AtomicInteger();
        AtomicLong ticks = new AtomicLong();
        MemorySegment data = MemorySegment.ofArray(new byte[64 * 1024]);
        TcpConnection.Events events = new TcpConnection.Events() {
            @Override
            public void onClosed(TcpConnection c, TcpError error) {
                (error == TcpError.RESET ? resets : otherEnds).incrementAndGet();
            }
        };
        // The loop's own clock, ticking every 10 ms: "nothing more is sent" is judged over loop time, not a sleep.
        server.datapath().addTimer(now -> {
            ticks.incrementAndGet();
            return now + 10 * MS;
        });
        server.datapath().start();
        server.link().call(() -> {
            tcp.listen(PORT, 1024, tcp.defaults(), c -> {
                tcp.setEvents(c, events);
                c.write(data, 0, (int) data.byteSize(), server.link().now()); // the client reads nothing: data waits
            });
            return null;
        });
        client = ChildJvm.start("peer-death-client", PeerConnectMain.class, fabric, 1, CONNECTIONS, "10.0.0.1", PORT);
        client.awaitLine("READY", 120_000);
        await("the server's " + CONNECTIONS + " connections", 60_000,
                () -> tcp.states().getOrDefault(TcpState.ESTABLISHED, 0) == CONNECTIONS);
        assertTrue(tcp.bufferMemoryUsed() > 0);

        client.process.destroyForcibly(); // SIGKILL: nothing of the client says goodbye
        assertTrue(client.process.waitFor(30, TimeUnit.SECONDS));
        long livenessTimeoutMs = FabricGeometry.defaults().heartbeatTimeoutNs() / MS;
        await("the end of the dead client's connections", livenessTimeoutMs + 10_000, () -> tcp.connections() == 0);

        assertEquals(CONNECTIONS, resets.get(), "the application saw every connection reset");
        assertEquals(0, otherEnds.get());
        assertEquals(CONNECTIONS, (long) server.link().call(() -> tcp.counter(TcpCounter.PEER_DOWN_RESETS)));
        assertEquals(0, tcp.bufferMemoryUsed(), "their buffers are back in the budget");

        long before = sent(tcp);
        long from = ticks.get();
        await("20 ticks of the server's loop", 30_000, () -> ticks.get() >= from + 20);
        assertEquals(before, sent(tcp), "nothing is tried toward the dead node any more");
    }
}
