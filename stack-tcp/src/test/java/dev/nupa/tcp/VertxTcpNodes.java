package dev.nupa.tcp;

import dev.nupa.device.FabricGeometry;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.IpVerticle;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.LinkVerticle;
import io.vertx.core.Vertx;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Test support for {@link TcpSocket} and {@link TcpServer}: a Vert.x instance and nodes on a fresh fabric
 * file, each with link, IP and TCP verticles and a real datapath thread. {@link #close} undeploys them and
 * removes the file.
 */
final class VertxTcpNodes implements AutoCloseable {
    final Vertx vertx = Vertx.vertx();
    private final Path path = Path.of("/dev/shm/nupa-tcp-nodes-test-" + UUID.randomUUID());
    private final FabricGeometry geometry =
            new FabricGeometry(4, 1, 64, 9216, 8, 64 * 1024, 10_000_000L, 1_000_000_000L, 10_000_000_000L);

    /** Deploys node {@code address} with IPv4 {@code cidr}; its connections' buffers may hold {@code bufferMemory} bytes together. */
    TcpLayer deploy(int address, String cidr, TcpConfig config, long bufferMemory) throws Exception {
        LinkVerticle link = new LinkVerticle(path, address, 9000, geometry, Datapath.Idle.backoff());
        IpVerticle ip = new IpVerticle(link, IpConfig.parse(cidr), List.of());
        TcpVerticle tcp = new TcpVerticle(link, ip, config, bufferMemory);
        vertx.deployVerticle(link).compose(id -> vertx.deployVerticle(ip)).compose(id -> vertx.deployVerticle(tcp))
                .await(10, TimeUnit.SECONDS);
        return tcp.layer();
    }

    @Override
    public void close() throws Exception {
        try {
            vertx.close().await(10, TimeUnit.SECONDS);
        } finally {
            Files.deleteIfExists(path);
        }
    }
}
