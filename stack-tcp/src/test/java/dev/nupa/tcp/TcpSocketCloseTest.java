package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;

/**
 * How a {@link TcpSocket} tells its connection that the application closed fully ({@link TcpSocket#close()})
 * or only half ({@link TcpSocket#end()}), end to end over two nodes with real datapath threads: the
 * FIN-WAIT-2 timeout applies to the first only, and a connection it resets leaves the layer's table
 * and is counted. The peer's application never closes, so its end stays in CLOSE-WAIT.
 */
class TcpSocketCloseTest {
    static final long FIN_WAIT_2_TIMEOUT_NS = 300_000_000L;

    private VertxTcpNodes nodes;
    private Vertx vertx;
    private TcpLayer a;
    private TcpLayer b;

    @BeforeEach
    void start() throws Exception {
        nodes = new VertxTcpNodes();
        vertx = nodes.vertx;
        a = nodes.deploy(0, "10.3.0.1/24", config(), BufferBudget.jvmDefault());
        b = nodes.deploy(1, "10.3.0.2/24", config(), BufferBudget.jvmDefault());
    }

    private static TcpConfig config() {
        return TcpConfig.defaults(9000).withFinWait2Timeout(FIN_WAIT_2_TIMEOUT_NS);
    }

    @AfterEach
    void stop() throws Exception {
        nodes.close();
    }

    /** Connects A to a server on B whose application accepts and then does nothing; returns both sockets. */
    private TcpSocket[] connectToIdleServer(int port) throws Exception {
        Promise<TcpSocket> accepted = Promise.promise();
        TcpServer.create(vertx, b, config()).connectHandler(accepted::tryComplete).listen(port).await(5, TimeUnit.SECONDS);
        TcpSocket client = TcpSocket.connect(vertx, a, port, "10.3.0.2", config()).await(10, TimeUnit.SECONDS);
        return new TcpSocket[] {client, accepted.future().await(10, TimeUnit.SECONDS)};
    }

    @Test
    void closeBoundsFinWait2TheConnectionIsResetFreedAndCounted() throws Exception {
        TcpSocket[] s = connectToIdleServer(7001);
        Promise<Void> clientClosed = Promise.promise();
        Promise<Throwable> clientError = Promise.promise();
        Promise<Throwable> serverError = Promise.promise();
        s[0].closeHandler(v -> clientClosed.tryComplete()).exceptionHandler(clientError::tryComplete);
        s[1].exceptionHandler(serverError::tryComplete);
        long closedAt = System.nanoTime();
        s[0].close();
        clientClosed.future().await(10, TimeUnit.SECONDS);
        assertTrue(System.nanoTime() - closedAt >= FIN_WAIT_2_TIMEOUT_NS, "not before the timeout");
        assertTrue(clientError.future().await(1, TimeUnit.SECONDS).getMessage().contains("FIN-WAIT-2"));
        assertTrue(serverError.future().await(10, TimeUnit.SECONDS).getMessage().contains("reset"),
                "the peer's connection learned of it by the reset");
        assertEquals(1, a.counter(TcpCounter.FIN_WAIT_2_TIMEOUTS));
        assertEquals(0, a.connections(), "nothing left in the client's table");
        waitFor(() -> b.connections() == 0);
    }

    @Test
    void endLeavesAHalfClosedSocketReadingInFinWait2BeyondTheTimeout() throws Exception {
        TcpSocket[] s = connectToIdleServer(7002);
        Buffer received = Buffer.buffer();
        Promise<Void> ended = Promise.promise();
        s[0].handler(received::appendBuffer).endHandler(v -> ended.tryComplete());
        s[0].end();
        waitFor(() -> Map.of(TcpState.FIN_WAIT_2, 1).equals(a.states()));
        Thread.sleep(3 * FIN_WAIT_2_TIMEOUT_NS / 1_000_000L);
        assertEquals(Map.of(TcpState.FIN_WAIT_2, 1), a.states(), "still waiting for the peer, as RFC 9293 allows");
        assertEquals(0, a.counter(TcpCounter.FIN_WAIT_2_TIMEOUTS));
        s[1].write(Buffer.buffer("late reply"));
        s[1].end();
        ended.future().await(10, TimeUnit.SECONDS);
        assertEquals("late reply", received.toString());
    }

    private static void waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached in 10 s");
            }
            Thread.sleep(10);
        }
    }
}
