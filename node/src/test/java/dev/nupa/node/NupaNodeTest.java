package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricGeometry;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.IpVerticle;
import dev.nupa.ip.Route;
import dev.nupa.ip.UdpSocket;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkVerticle;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpVerticle;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;

/** The embedding API of docs/embedding.md: two nodes in one application, a UDP echo service and a client. */
class NupaNodeTest {

    @Test
    void embeddedUdpEchoServiceAnswersAClientOnAnotherNode() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-node-test-" + UUID.randomUUID());
        Vertx vertx = Vertx.vertx();
        try {
            // --- as in docs/embedding.md ---
            NupaNode server = NupaNode.start(vertx, NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            UdpSocket echo = server.createUdpSocket();
            echo.handler(d -> echo.send(d.data(), d.senderPort(), d.senderHost()));
            echo.listen(7, "0.0.0.0").await(5, TimeUnit.SECONDS);

            NupaNode client = NupaNode.start(vertx, NodeConfig.defaults(fabric, 1)).await(10, TimeUnit.SECONDS);
            UdpSocket socket = client.createUdpSocket();
            var reply = io.vertx.core.Promise.<String>promise();
            socket.handler(d -> reply.tryComplete(d.data().toString()));
            socket.send(Buffer.buffer("hello, fabric"), 7, "10.0.0.1");
            // --- end ---
            assertEquals("hello, fabric", reply.future().await(10, TimeUnit.SECONDS));
            assertEquals("node 1 10.0.0.2/24 mtu 9000", client.toString());
            assertTrue(server.tcp().bufferMemoryLimit() > 0, "the default TCP buffer memory bound: 3/4 of the JVM's");

            NupaNode bounded = NupaNode.start(vertx, NodeConfig.defaults(fabric, 2).withTcpBufferMemory(1 << 20))
                    .await(10, TimeUnit.SECONDS);
            assertEquals(1 << 20, bounded.tcp().bufferMemoryLimit(), "--tcp-buffer-memory reaches the TCP layer");
            bounded.close().await(10, TimeUnit.SECONDS);
            client.close().await(10, TimeUnit.SECONDS);
            server.close().await(10, TimeUnit.SECONDS);
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void ipAndTcpVerticlesTakeBackWhatTheyRegisteredWhenUndeployed() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-test-redeploy-" + UUID.randomUUID());
        Vertx vertx = Vertx.vertx();
        try {
            LinkVerticle link = new LinkVerticle(fabric, 0, Link.DEFAULT_MTU, FabricGeometry.defaults(), Datapath.Idle.backoff());
            vertx.deployVerticle(link).await(10, TimeUnit.SECONDS);
            for (int round = 0; round < 2; round++) { // the second round finds the link and IP free again
                IpVerticle ip = new IpVerticle(link, NodeConfig.defaultIp(0), List.of());
                String ipId = vertx.deployVerticle(ip).await(10, TimeUnit.SECONDS);
                TcpVerticle tcp = new TcpVerticle(link, ip, TcpConfig.defaults(Link.DEFAULT_MTU));
                String tcpId = vertx.deployVerticle(tcp).await(10, TimeUnit.SECONDS);
                vertx.undeploy(tcpId).await(10, TimeUnit.SECONDS);
                vertx.undeploy(ipId).await(10, TimeUnit.SECONDS);
            }
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void misconfigurationFailsTheStartWithTheReasonAndLeavesNoNodeBehind() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-node-test-" + UUID.randomUUID());
        Vertx vertx = Vertx.vertx();
        try {
            Future<NupaNode> bad = NupaNode.start(vertx, NodeConfig.defaults(fabric, 0)
                    .withIp(IpConfig.parse("10.0.0.1/24")).withRoutes(List.of(Route.parse("default via 192.168.9.1"))));
            Throwable t = bad.transform(ar -> Future.succeededFuture(ar.cause())).await(10, TimeUnit.SECONDS);
            assertTrue(t != null && t.getMessage().contains("is not on-link"), String.valueOf(t));
            // The address is free again: a correct node takes it.
            NupaNode ok = NupaNode.start(vertx, NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            ok.close().await(10, TimeUnit.SECONDS);
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
            Files.deleteIfExists(fabric);
        }
    }
}
