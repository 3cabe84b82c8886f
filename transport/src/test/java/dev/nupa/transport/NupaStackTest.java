package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The node's one builder: stacks for every loop, then the layers in order; the transport takes the built node, and
 * as each loop ends the layers let go of it (last built first) on that loop's thread before its stack closes. A
 * layer that fails to build leaves nothing behind.
 */
class NupaStackTest {
    private final Path fabric = Path.of("/dev/shm/nupa-test-builder-" + UUID.randomUUID());
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final Thread testThread = Thread.currentThread();

    @AfterEach
    void deleteFabric() throws Exception {
        Files.deleteIfExists(fabric);
    }

    /** A layer that records what happens to it: its opening, and each close with the loop and the thread it ran on. */
    private final class Recorder implements NodeLayer {
        final String name;

        Recorder(String name, NupaStack node) {
            this.name = name;
            events.add("open " + name + " over " + node.stacks().size() + " loops, started " + node.primary().datapath().isRunning());
        }

        @Override
        public void close(FabricStack loop) {
            String where = Thread.currentThread() == testThread ? " on the builder's thread"
                    : loop.link().isOwner() ? " on its thread" : " elsewhere";
            events.add("close " + name + " loop " + loop.loop() + where);
        }
    }

    @Test
    void layersAreBuiltInOrderBeforeTheLoopsRunAndLetGoOfEachLoopOnItsThreadLastFirst() throws Exception {
        NupaStack node = NupaStack.builder(StackConfig.defaults(fabric, 0).withLoops(2))
                .layer(n -> new Recorder("a", n)).layer(n -> new Recorder("b", n)).open();
        assertEquals(List.of("open a over 2 loops, started false", "open b over 2 loops, started false"), events);
        assertTrue(node.layer(Recorder.class).name.equals("a"), "the first layer of the type");
        Vertx vertx = NupaVertx.create(node, new VertxOptions(), null);
        assertSame(node, NupaVertx.node(vertx));
        assertEquals(node.stacks(), NupaVertx.stacks(vertx));
        vertx.close().await(10, TimeUnit.SECONDS);
        for (int loop = 0; loop < 2; loop++) {
            List<String> mine = events.stream().filter(e -> e.startsWith("close")).filter(e -> e.contains("loop ")).toList();
            int b = mine.indexOf("close b loop " + loop + " on its thread");
            int a = mine.indexOf("close a loop " + loop + " on its thread");
            assertTrue(b >= 0 && a > b, "loop " + loop + ": b, then a, each on the loop's thread: " + events);
        }
        assertEquals(6, events.size(), "two opens and a close per layer per loop: " + events);
        // The node left the fabric: its address is free again.
        NupaStack again = NupaStack.builder(StackConfig.defaults(fabric, 0)).open();
        again.close();
    }

    @Test
    void aLayerThatFailsClosesTheLayersBeforeItAndTheStacks() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> NupaStack.builder(StackConfig.defaults(fabric, 0))
                .layer(n -> new Recorder("a", n)).layer(n -> {
                    throw new IllegalStateException("no TAP device");
                }).open());
        assertEquals("no TAP device", e.getMessage());
        assertEquals(List.of("open a over 1 loops, started false", "close a loop 0 on the builder's thread"), events);
        NupaStack again = NupaStack.builder(StackConfig.defaults(fabric, 0)).open(); // address 0 was given back
        again.close();
    }
}
