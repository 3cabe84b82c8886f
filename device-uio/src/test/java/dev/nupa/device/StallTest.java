package dev.nupa.device;

import static dev.nupa.device.FabricDevice.LATE;
import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.MS;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.nupa.device.FabricFixture.Collector;

/**
 * A producer that claims a slot and never publishes must not block the ring forever: after the stall
 * timeout the consumer skips it, and the late publish fails visibly.
 */
@Timeout(30)
class StallTest {
    private static final int STALLER = 0;
    private static final int OTHER = 1;
    private static final int CONSUMER = 2;
    private final FabricFixture fx = new FabricFixture();
    private FabricNode staller;
    private FabricNode other;
    private FabricNode consumer;

    @BeforeEach
    void setUp() {
        Fabric fabric = fx.create(FabricFixture.small().withRing(4, 256).withTimeouts(10 * MS, 100 * MS, 50 * MS));
        staller = fx.attach(fabric, STALLER);
        other = fx.attach(fabric, OTHER);
        consumer = fx.attach(fabric, CONSUMER);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private FrameClaim stalledClaim() {
        FrameClaim claim = new FrameClaim();
        assertEquals(OK, staller.tryClaim(CONSUMER, 32, claim));
        claim.memory().asSlice(claim.offset(), 5).copyFrom(FabricFixture.seg("stale"));
        return claim;
    }

    @Test
    void aFrameBehindAStalledClaimIsDeliveredAfterTheStallTimeout() {
        FrameClaim stale = stalledClaim();
        assertEquals(OK, send(other, CONSUMER, "after the stall"));
        Collector c = new Collector();
        assertEquals(0, consumer.poll(c, 10), "the frame waits behind the unpublished claim");

        FabricFixture.receive(consumer, c, 1);
        assertEquals(List.of("after the stall"), c.texts());
        assertEquals(OTHER, c.frames.getFirst().source());
        assertEquals(1, consumer.counters().stallSkips());

        assertEquals(LATE, stale.publish(), "the stale claim was skipped");
        assertEquals(1, staller.counters().lateDrops());
        assertEquals(0, staller.counters().framesSent());
        assertEquals(0, consumer.poll(c, 10), "a late frame is never delivered");

        assertEquals(OK, send(staller, CONSUMER, "staller recovers"));
        assertEquals(1, consumer.poll(c, 10));
        assertEquals(List.of("after the stall", "staller recovers"), c.texts());
        assertEquals(1, consumer.counters().stallSkips());
        assertEquals(2, consumer.counters().framesReceived());
    }

    @Test
    void aConsumerThatOnlySleepsStillSkipsTheStalledClaim() {
        stalledClaim();
        assertEquals(OK, send(other, CONSUMER, "behind"));
        long deadline = System.nanoTime() + 5_000 * MS;
        boolean ready = false;
        while (!ready && System.nanoTime() < deadline) {
            ready = consumer.awaitFrames(1_000 * MS);
        }
        assertTrue(ready, "awaitFrames notices the stall while idle and reports the ring ready");
        Collector c = new Collector();
        assertEquals(1, consumer.poll(c, 10));
        assertEquals(List.of("behind"), c.texts());
        assertEquals(1, consumer.counters().stallSkips());
    }

    @Test
    void aClaimPublishedBeforeTheTimeoutIsNotSkipped() {
        FrameClaim slow = stalledClaim();
        assertEquals(OK, send(other, CONSUMER, "second"));
        assertEquals(0, consumer.poll(new Collector(), 10));
        assertEquals(OK, slow.publish());
        Collector c = new Collector();
        assertEquals(2, consumer.poll(c, 10));
        assertEquals("stale", c.frames.get(0).text().substring(0, 5));
        assertEquals("second", c.frames.get(1).text());
        assertEquals(0, consumer.counters().stallSkips());
    }

    @Test
    void anAbortAfterTheTimeoutIsHarmless() {
        FrameClaim stale = stalledClaim();
        assertEquals(OK, send(other, CONSUMER, "x"));
        Collector c = new Collector();
        FabricFixture.receive(consumer, c, 1);
        stale.abort();
        assertEquals(0, consumer.poll(c, 10));
        assertEquals(OK, send(other, CONSUMER, "y"));
        assertEquals(1, consumer.poll(c, 10));
        assertEquals(List.of("x", "y"), c.texts());
    }

    /**
     * The stale slot is reused once the ring laps it. A late publish must then fail without touching
     * the frame that now occupies the slot.
     */
    @Test
    void aLatePublishDoesNotCorruptTheFrameInTheReusedSlot() {
        FrameClaim stale = new FrameClaim();
        assertEquals(OK, staller.tryClaim(CONSUMER, 200, stale)); // position 0, slot 0
        assertEquals(OK, send(other, CONSUMER, "p1"));             // position 1
        Collector c = new Collector();
        FabricFixture.receive(consumer, c, 1);                      // skips position 0, head = 2
        assertEquals(OK, send(other, CONSUMER, "p2"));
        assertEquals(OK, send(other, CONSUMER, "p3"));
        assertEquals(OK, send(other, CONSUMER, "p4"));             // position 4 reuses slot 0
        assertEquals(LATE, stale.publish());
        assertEquals(3, consumer.poll(c, 10));
        assertEquals(List.of("p1", "p2", "p3", "p4"), c.texts());
        for (FabricFixture.Received r : c.frames) {
            assertEquals(OTHER, r.source(), "source of " + r.text());
        }
    }

    /**
     * An offer whose source segment is too short fails; it must not leave behind a claimed slot
     * that blocks the destination ring until the stall timeout.
     */
    @Test
    void aFailedOfferDoesNotBlockTheRing() {
        MemorySegment tooShort = MemorySegment.ofArray(new byte[8]);
        assertThrows(RuntimeException.class, () -> other.offer(CONSUMER, tooShort, 0, 64));
        assertEquals(OK, send(other, CONSUMER, "next"));
        Collector c = new Collector();
        assertEquals(1, consumer.poll(c, 10), "the next frame is not stuck behind the failed offer");
        assertEquals(List.of("next"), c.texts());
        assertEquals(0, consumer.counters().stallSkips());
    }

    @Test
    void theStalledSlotsBytesAreNeverHandedToTheConsumer() {
        FrameClaim stale = stalledClaim();
        stale.memory().set(ValueLayout.JAVA_BYTE, stale.offset() + 31, (byte) 0x7F);
        assertEquals(OK, send(other, CONSUMER, "only"));
        Collector c = new Collector();
        FabricFixture.receive(consumer, c, 1);
        assertEquals(1, c.frames.size());
        assertEquals("only", c.frames.getFirst().text());
    }
}
