package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricGeometry;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.IpVerticle;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.LinkVerticle;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A {@link TcpSocket} whose node has no buffer memory left for its send buffer: the writes' Futures fail
 * with what to do, nothing reaches the peer, and an end() asked for meanwhile still sends the FIN. Two
 * nodes with real datapath threads; node A's TCP buffers may hold 10,000 bytes together, less than one
 * 64 KiB send buffer.
 */
class TcpSocketBufferShortageTest {
    private final Path path = Path.of("/dev/shm/nupa-tcp-shortage-test-" + UUID.randomUUID());
    private static final TcpConfig CONFIG = TcpConfig.defaults(9000).withBuffers(64 * 1024, 64 * 1024);
    private Vertx vertx;
    private TcpLayer a;
    private TcpLayer b;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        FabricGeometry g = new FabricGeometry(4, 1, 64, 9216, 8, 64 * 1024, 10_000_000L, 1_000_000_000L, 10_000_000_000L);
        a = deploy(0, "10.4.0.1/24", g, 10_000);
        b = deploy(1, "10.4.0.2/24", g, 1 << 30);
    }

    private TcpLayer deploy(int address, String cidr, FabricGeometry g, long bufferMemory) throws Exception {
        LinkVerticle link = new LinkVerticle(path, address, 9000, g, Datapath.Idle.backoff());
        IpVerticle ip = new IpVerticle(link, IpConfig.parse(cidr), List.of());
        TcpVerticle tcp = new TcpVerticle(link, ip, CONFIG, bufferMemory);
        vertx.deployVerticle(link).compose(id -> vertx.deployVerticle(ip)).compose(id -> vertx.deployVerticle(tcp))
                .await(10, TimeUnit.SECONDS);
        return tcp.layer();
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
        Files.deleteIfExists(path);
    }

    @Test
    void writesFailWithTheRemedyAndEndStillSendsTheFin() throws Exception {
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
