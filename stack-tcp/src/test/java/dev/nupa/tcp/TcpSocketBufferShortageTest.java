package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A {@link TcpSocket} whose node has no buffer memory left for its send buffer: the writes' Futures fail
 * with what to do, nothing reaches the peer, and end() still sends the FIN. Two
 * nodes with real datapath threads; node A's TCP buffers may hold 10,000 bytes together, less than one
 * 64 KiB send buffer.
 */
class TcpSocketBufferShortageTest {
    private static final TcpConfig CONFIG = TcpConfig.defaults(9000).withBuffers(64 * 1024, 64 * 1024);
    private final VertxTcpNodes nodes = new VertxTcpNodes();

    @AfterEach
    void stop() throws Exception {
        nodes.close();
    }

    @Test
    void writesFailWithTheRemedyAndEndStillSendsTheFin() throws Exception {
        Vertx vertx = nodes.vertx;
        TcpLayer a = nodes.deploy(0, "10.4.0.1/24", CONFIG, 10_000);
        TcpLayer b = nodes.deploy(1, "10.4.0.2/24", CONFIG, 1 << 30);
        Promise<TcpSocket> accepted = Promise.promise();
        TcpServer.create(vertx, b, CONFIG).connectHandler(accepted::tryComplete).listen(7100).await(5, TimeUnit.SECONDS);
        TcpSocket client = TcpSocket.connect(vertx, a, 7100, "10.4.0.2", CONFIG).await(10, TimeUnit.SECONDS);
        TcpSocket server = accepted.future().await(10, TimeUnit.SECONDS);
        StringBuilder got = new StringBuilder();
        Promise<Void> ended = Promise.promise();
        server.handler(buf -> got.append(buf.toString()));
        server.endHandler(v -> ended.tryComplete());

        Throwable t = client.write(Buffer.buffer("lost for want of memory"))
                .transform(ar -> io.vertx.core.Future.succeededFuture(ar.cause())).await(10, TimeUnit.SECONDS);
        assertTrue(t instanceof IOException && t.getMessage().contains("65536-byte TCP buffer")
                && t.getMessage().contains("TcpConfig.withBuffers"), String.valueOf(t));
        assertEquals(0, a.bufferMemoryUsed());

        client.end().await(10, TimeUnit.SECONDS);
        ended.future().await(10, TimeUnit.SECONDS); // the FIN arrived
        assertEquals("", got.toString(), "nothing of the refused write reached the peer");
    }
}
