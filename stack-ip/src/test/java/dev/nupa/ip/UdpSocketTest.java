package dev.nupa.ip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricGeometry;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.LinkVerticle;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;

/** The Vert.x-style UDP socket and its RxJava adapter over real datapath threads (two nodes in one JVM). */
class UdpSocketTest {
    private final Path path = Path.of("/dev/shm/nupa-udp-test-" + UUID.randomUUID());
    private Vertx vertx;
    private Ipv4Stack a;
    private Ipv4Stack b;

    @BeforeEach
    void start() throws Exception {
        vertx = Vertx.vertx();
        FabricGeometry g = new FabricGeometry(4, 1, 64, 9216, 8, 64 * 1024, 10_000_000L, 1_000_000_000L, 10_000_000_000L);
        a = deploy(0, "10.1.0.1/24", g);
        b = deploy(1, "10.1.0.2/24", g);
    }

    private Ipv4Stack deploy(int address, String cidr, FabricGeometry g) throws Exception {
        LinkVerticle link = new LinkVerticle(path, address, 9000, g, Datapath.Idle.backoff());
        IpVerticle ip = new IpVerticle(link, IpConfig.parse(cidr), List.of());
        vertx.deployVerticle(link).compose(id -> vertx.deployVerticle(ip)).await(10, TimeUnit.SECONDS);
        return ip.stack();
    }

    @AfterEach
    void stop() throws Exception {
        vertx.close().await(10, TimeUnit.SECONDS);
        Files.deleteIfExists(path);
    }

    @Test
    void echoOfAThousandDatagramsOfRandomSizesUpToSixtyThousandBytesLosesNothing() throws Exception {
        UdpSocket server = UdpSocket.create(vertx, b);
        server.handler(d -> server.send(d.data(), d.senderPort(), d.senderHost()));
        server.listen(7, "0.0.0.0").await(5, TimeUnit.SECONDS);

        UdpSocket client = UdpSocket.create(vertx, a);
        int count = 1000;
        ConcurrentHashMap<Integer, byte[]> sent = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(count);
        ConcurrentHashMap<Integer, Boolean> mismatches = new ConcurrentHashMap<>();
        Random rnd = new Random(7);
        int[] next = {0};
        Runnable[] sendOne = new Runnable[1];
        sendOne[0] = () -> {
            int i = next[0]++;
            if (i >= count) {
                return;
            }
            byte[] data = new byte[4 + rnd.nextInt(60_000 - 4)];
            rnd.nextBytes(data);
            java.nio.ByteBuffer.wrap(data).putInt(0, i);
            sent.put(i, data);
            client.send(Buffer.buffer(data), 7, "10.1.0.2").onFailure(t -> mismatches.put(-1 - i, true));
        };
        client.handler(d -> {
            int i = d.data().getInt(0);
            if (!java.util.Arrays.equals(sent.get(i), d.data().getBytes())) {
                mismatches.put(i, true);
            }
            done.countDown();
            sendOne[0].run();
        });
        client.listen(0, "0.0.0.0").await(5, TimeUnit.SECONDS);
        // A window of 16 datagrams in flight: enough to overlap, within the rings' 64 slots.
        vertx.runOnContext(v -> {
            for (int w = 0; w < 16; w++) {
                sendOne[0].run();
            }
        });
        assertTrue(done.await(60, TimeUnit.SECONDS), "echoes missing: " + done.getCount() + "; " + a.counters());
        assertTrue(mismatches.isEmpty(), () -> mismatches.size() + " changed or failed, e.g. " + mismatches.keySet().iterator().next());
        assertEquals(0, b.counter(IpCounter.UDP_RCVBUF_ERRORS));
        assertEquals(0, a.counter(IpCounter.REASM_FAILS));
    }

    @Test
    void rxFlowableDeliversOnlyWhatIsRequestedAndAFullQueueCountsDrops() throws Exception {
        UdpSocket server = UdpSocket.create(vertx, b, 5);
        server.listen(9, "10.1.0.2").await(5, TimeUnit.SECONDS);
        var subscriber = RxStreams.datagrams(server).test(2);
        UdpSocket client = UdpSocket.create(vertx, a);
        for (int i = 0; i < 20; i++) {
            client.send("m" + i, 9, "10.1.0.2").await(5, TimeUnit.SECONDS);
        }
        subscriber.awaitCount(2);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (b.counter(IpCounter.UDP_IN_DATAGRAMS) < 20 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        // The socket counts a drop on the datapath right after IP counted the datagram in: read the count there,
        // once the datapath is done with the last frame, so it is final.
        long dropped = b.link().call(() -> b.counter(IpCounter.UDP_RCVBUF_ERRORS));
        assertEquals(2, subscriber.values().size(), "only the requested two arrive");
        assertEquals("m0", subscriber.values().get(0).data().toString());
        // At most 5 wait in the queue beside the 2 requested; the rest were dropped and counted.
        assertTrue(dropped >= 13 && dropped <= 15, "dropped " + dropped);
        subscriber.requestMore(100);
        subscriber.awaitCount((int) (20 - dropped));
        Thread.sleep(50);
        assertEquals(20 - dropped, subscriber.values().size(), "every queued datagram is delivered once asked for");
        subscriber.cancel();
    }

    @Test
    void misuseFailsWithTheReason() throws Exception {
        UdpSocket s1 = UdpSocket.create(vertx, a);
        s1.listen(53, "0.0.0.0").await(5, TimeUnit.SECONDS);
        Future<UdpSocket> taken = UdpSocket.create(vertx, a).listen(53, "0.0.0.0");
        assertTrue(taken.failed() && taken.cause().getMessage().contains("53 is already in use"), String.valueOf(taken.cause()));
        Future<UdpSocket> foreign = UdpSocket.create(vertx, a).listen(54, "10.1.0.2");
        assertTrue(foreign.failed() && foreign.cause().getMessage().contains("this node is 10.1.0.1"));
        Future<Void> unreachable = s1.send("x", 7, "10.1.0.77"); // sent on the loop: the Future fails from there
        try {
            unreachable.await(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            // the cause is asserted below
        }
        assertTrue(unreachable.failed() && unreachable.cause().getMessage().contains("host unreachable"),
                String.valueOf(unreachable.cause()));
        // A closed port answers with ICMP port unreachable, reported to the socket's exception handler.
        CountDownLatch error = new CountDownLatch(1);
        String[] message = new String[1];
        s1.exceptionHandler(t -> {
            message[0] = t.getMessage();
            error.countDown();
        });
        s1.send("x", 4444, "10.1.0.2");
        assertTrue(error.await(5, TimeUnit.SECONDS));
        assertEquals("port unreachable from 10.1.0.2:4444", message[0]);
    }
}
