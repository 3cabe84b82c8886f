package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;

/** The embedding API of docs/embedding.md: two nodes in one application, a UDP echo service and a client. */
class NupaNodeTest {

    @Test
    void embeddedUdpEchoServiceAnswersAClientOnAnotherNode() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-node-test-" + UUID.randomUUID());
        try {
            // --- as in docs/embedding.md ---
            NupaNode server = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            DatagramSocket echo = server.vertx().createDatagramSocket();
            echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
            echo.listen(7, "0.0.0.0").await(5, TimeUnit.SECONDS);

            NupaNode client = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(10, TimeUnit.SECONDS);
            DatagramSocket socket = client.vertx().createDatagramSocket();
            Promise<String> reply = Promise.promise();
            socket.handler(p -> reply.tryComplete(p.data().toString()));
            socket.send(Buffer.buffer("hello, fabric"), 7, "10.0.0.1");
            // --- end ---
            assertEquals("hello, fabric", reply.future().await(10, TimeUnit.SECONDS));
            assertEquals("node 1 10.0.0.2/24 mtu 9000", client.toString());
            assertTrue(server.tcp().bufferMemoryLimit() > 0, "the default TCP buffer memory bound: 3/4 of the JVM's");

            NupaNode bounded = NupaNode.create(NodeConfig.defaults(fabric, 2).withTcpBufferMemory(1 << 20))
                    .await(10, TimeUnit.SECONDS);
            assertEquals(1 << 20, bounded.tcp().bufferMemoryLimit(), "--tcp-buffer-memory reaches the TCP layer");
            bounded.close().await(10, TimeUnit.SECONDS);
            client.close().await(10, TimeUnit.SECONDS);
            server.close().await(10, TimeUnit.SECONDS);

            // Closed, the node left the fabric: its address is free for the next one.
            NupaNode again = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            assertEquals(0, again.link().address());
            again.close().await(10, TimeUnit.SECONDS);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void misconfigurationFailsTheStartWithTheReasonAndLeavesNoNodeBehind() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-node-test-" + UUID.randomUUID());
        try {
            Throwable t = failure(NupaNode.create(NodeConfig.defaults(fabric, 0)
                    .withIp(IpConfig.parse("10.0.0.1/24")).withRoutes(List.of(Route.parse("default via 192.168.9.1")))));
            assertTrue(t != null && t.getMessage().contains("is not on-link"), String.valueOf(t));
            // A capture that cannot be written fails the start after the stack is up: it is taken down again.
            t = failure(NupaNode.create(NodeConfig.defaults(fabric, 0).withCapture(Path.of("/nonexistent-dir/x.pcap"))));
            assertTrue(t != null && t.getMessage().contains("cannot write capture /nonexistent-dir/x.pcap"), String.valueOf(t));
            // The address is free again: a correct node takes it.
            NupaNode ok = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            ok.close().await(10, TimeUnit.SECONDS);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    private static Throwable failure(Future<NupaNode> f) throws Exception {
        return f.transform(ar -> Future.succeededFuture(ar.cause())).await(10, TimeUnit.SECONDS);
    }
}
