package dev.nupa.tests;

import static dev.nupa.tests.ChildJvm.num;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Four producer JVMs send 250,000 frames each into one consumer JVM's ring: per producer, every
 * frame arrives exactly once, in order and checksum-equal, and the consumer's running hash over
 * each producer's frames equals that producer's. Two producers write in place (tryClaim), two copy
 * (offer), so both send paths share the ring. Producers leave as soon as they have sent: frames
 * already published survive their sender's departure.
 */
@Timeout(180)
@Tag("process")
class ManyProducersTest {
    static final int PRODUCERS = 4;
    static final long FRAMES = 250_000;
    static final int CONSUMER = 0;

    private final Path path = ChildJvm.newFabricPath();
    private final List<ChildJvm> children = new ArrayList<>();
    private Fabric fabric;

    @AfterEach
    void cleanup() throws IOException {
        for (ChildJvm c : children) {
            c.close();
        }
        if (fabric != null) {
            fabric.close();
        }
        Files.deleteIfExists(path);
    }

    @Test
    void fourProducersIntoOneConsumerLoseDuplicateReorderAndCorruptNothing() {
        fabric = ShmFabric.create(path, TwoProcessExchangeTest.GEOMETRY);
        long t0 = System.nanoTime();
        ChildJvm consumer = ChildJvm.start("consumer", ConsumerMain.class, path, CONSUMER, PRODUCERS, FRAMES, 300, 150_000);
        children.add(consumer);
        List<ChildJvm> producers = new ArrayList<>();
        for (int i = 0; i < PRODUCERS; i++) {
            ChildJvm p = ChildJvm.start("producer-" + i, ProducerMain.class, path, CONSUMER + 1 + i, CONSUMER, i, FRAMES,
                    1_000L + i, i % 2 == 0 ? "claim" : "offer", 0, 150_000, -1);
            children.add(p);
            producers.add(p);
        }
        List<Map<String, String>> sent = new ArrayList<>();
        for (ChildJvm p : producers) {
            sent.add(p.awaitResult(170_000));
        }
        Map<String, String> got = consumer.awaitResult(60_000);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        StringBuilder report = new StringBuilder("ManyProducersTest: " + ms + " ms in all\n  consumer: " + got);
        sent.forEach(r -> report.append("\n  producer: ").append(r));
        System.out.println(report);

        assertEquals("none", got.get("error"), "consumer: " + got);
        assertEquals("false", got.get("timedOut"), "consumer: " + got);
        for (int i = 0; i < PRODUCERS; i++) {
            Map<String, String> p = sent.get(i);
            String who = "producer " + i + ": " + p + "\nconsumer: " + got;
            assertEquals("none", p.get("error"), who);
            assertEquals(FRAMES, num(p, "sent"), who);
            assertEquals(0, num(p, "lates"), who);
            String k = "p" + i + ".";
            assertEquals(FRAMES, num(got, k + "received"), "frames lost or duplicated; " + who);
            assertEquals(0, num(got, k + "gaps"), "frames lost or reordered; " + who);
            assertEquals(0, num(got, k + "duplicates"), "frames duplicated or reordered; " + who);
            assertEquals(0, num(got, k + "badCrc"), "frames corrupted; " + who);
            assertEquals(0, num(got, k + "tooShort"), who);
            assertEquals(0, num(got, k + "wrongSender"), "frames credited to the wrong source; " + who);
            assertEquals(num(p, "hash"), num(got, k + "hash"), "what arrived differs from what was sent; " + who);
        }
        assertEquals(0, num(got, "strangers"), "frames from unknown sources: " + got);
        assertEquals(PRODUCERS * FRAMES, num(got, "framesReceived"), "the consumer node's own count: " + got);
        assertEquals(0, num(got, "corrupt"), got.toString());
        assertEquals(0, num(got, "handlerErrors"), got.toString());
        assertEquals(0, num(got, "stallSkips"), got.toString());
    }
}
