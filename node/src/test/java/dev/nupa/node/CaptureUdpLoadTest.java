package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

import dev.nupa.device.CaptureObserver;
import dev.nupa.device.CaptureRing;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricCounters;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;

/**
 * A node under UDP load, watched by an observer whose capture ring is too small: every frame the node sends and
 * receives is recorded or counted dropped, and the observer takes no node address.
 */
public class CaptureUdpLoadTest {
    static final int DATAGRAMS = 20_000;

    public static void waitUntil(String what, BooleanSupplier done, java.util.function.Supplier<String> state) throws InterruptedException {
        waitUntil(what, 30, done, state);
    }

    /**
     * Waits for a condition, failing with {@code state} after {@code seconds}. The condition lives in another process
     * or in fabric memory, which nothing signals here, so it is looked at every millisecond: the sleep is the look's
     * interval, not a time the test relies on.
     */
    public static void waitUntil(String what, long seconds, BooleanSupplier done, java.util.function.Supplier<String> state)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting until " + what + ": " + state.get());
            }
            Thread.sleep(1);
        }
    }

    @Test
    void recordedPlusDroppedIsEveryFrameTheNodeSentAndReceived() throws Exception {
        Path path = Path.of("/dev/shm/nupa-test-capture-udp-" + UUID.randomUUID());
        NupaNode server = null;
        NupaNode client = null;
        try {
            server = NupaNode.create(NodeConfig.defaults(path, 0)).await(10, TimeUnit.SECONDS);
            AtomicLong atServer = new AtomicLong();
            AtomicLong echoesRefused = new AtomicLong(); // a ring full past the send wait, on a loaded machine
            DatagramSocket echo = server.vertx().createDatagramSocket();
            echo.handler(p -> {
                atServer.incrementAndGet();
                echo.send(p.data(), p.sender().port(), p.sender().host()).onFailure(e -> echoesRefused.incrementAndGet());
            });
            echo.listen(7, "0.0.0.0").await(5, TimeUnit.SECONDS);
            client = NupaNode.create(NodeConfig.defaults(path, 1)).await(10, TimeUnit.SECONDS);
            AtomicLong atClient = new AtomicLong();
            DatagramSocket socket = client.vertx().createDatagramSocket();
            socket.handler(p -> atClient.incrementAndGet());
            socket.listen(4000, "0.0.0.0").await(5, TimeUnit.SECONDS);

            try (Fabric f = ShmFabric.join(path); CaptureObserver o = CaptureObserver.start(f, new int[] {0}, 4096, 128)) {
                List<Integer> addresses = f.nodes().stream().map(NodeInfo::address).toList();
                waitUntil("node 0 attaches", () -> o.attached(0) != 0, () -> "not attached");
                FabricCounters before = f.counters(0);
                long[] read = {0};
                AtomicBoolean stop = new AtomicBoolean();
                Thread reader = Thread.ofPlatform().start(() -> {
                    while (atServer.get() < DATAGRAMS / 4 && !stop.get()) {
                        Thread.onSpinWait(); // the first quarter finds nobody reading the capture ring: some drop
                    }
                    while (!stop.get()) {
                        if (o.poll((ts, out, src, dst, len, mem, off, captured) -> read[0]++, 64) == 0) {
                            Thread.onSpinWait();
                        }
                    }
                });
                Buffer payload = Buffer.buffer(new byte[100]);
                long sent = 0;
                for (int i = 0; i < DATAGRAMS; i++) {
                    if (socket.send(payload, 7, "10.0.0.1").transform(ar -> io.vertx.core.Future.succeededFuture(ar.succeeded()))
                            .await(10, TimeUnit.SECONDS)) {
                        sent++;
                    }
                }
                long sentDatagrams = sent;
                waitUntil("the echoes are back",
                        () -> atServer.get() == sentDatagrams && atClient.get() + echoesRefused.get() == sentDatagrams,
                        () -> "server got " + atServer.get() + ", client " + atClient.get() + " of " + sentDatagrams
                                + " (echoes refused " + echoesRefused.get() + ")");
                waitUntil("recorded + dropped is every frame node 0 saw", () -> {
                    FabricCounters c = f.counters(0);
                    long saw = c.framesSent() - before.framesSent() + c.framesReceived() - before.framesReceived();
                    return o.recorded(0) + o.dropped(0) == saw;
                }, () -> "recorded " + o.recorded(0) + ", dropped " + o.dropped(0) + ", node 0 counted "
                        + (f.counters(0).framesSent() - before.framesSent()) + " sent, "
                        + (f.counters(0).framesReceived() - before.framesReceived()) + " received");
                stop.set(true);
                reader.join(10_000);
                assertFalse(reader.isAlive());
                o.poll((ts, out, src, dst, len, mem, off, captured) -> read[0]++, Integer.MAX_VALUE);
                FabricCounters c = f.counters(0);
                long saw = c.framesSent() - before.framesSent() + c.framesReceived() - before.framesReceived();
                System.out.println("capture of a node under UDP load: " + sentDatagrams + " datagrams echoed; node 0 saw " + saw
                        + " frames; recorded " + o.recorded(0) + ", dropped " + o.dropped(0) + ", read " + read[0]);
                assertEquals(saw, o.recorded(0) + o.dropped(0));
                assertTrue(saw >= 2L * sentDatagrams, "each datagram in and its echo out: " + saw);
                assertTrue(o.dropped(0) > 0, "the small ring dropped some");
                assertEquals(o.recorded(0), read[0], "every recorded frame was read");
                assertEquals(addresses, f.nodes().stream().map(NodeInfo::address).toList(), "the observer holds no node address");
            }
        } finally {
            if (client != null) {
                client.close().await(10, TimeUnit.SECONDS);
            }
            if (server != null) {
                server.close().await(10, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(path);
        }
    }
}
