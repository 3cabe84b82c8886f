package dev.nupa.device;

import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.MS;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.nupa.device.FabricFixture.Collector;

/** Sleeping on the doorbell: a consumer that waits is woken by a frame, by its own process's wakeup(), or by closing. */
@Timeout(30)
class AwaitFramesTest {
    private final FabricFixture fx = new FabricFixture();
    private Fabric fabric;
    private FabricNode producer;
    private FabricNode consumer;

    @BeforeEach
    void setUp() {
        fabric = fx.create(FabricFixture.small());
        producer = fx.attach(fabric, 0);
        consumer = fx.attach(fabric, 1);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private boolean armed(int address) {
        return (int) FabricLayout.INT.getVolatile(fabric.mem, fabric.nodeOffset(address) + FabricLayout.N_ARMED) != 0;
    }

    /** Every sleep here is asked for a minute: one that ends within {@link Sleeper#ended}'s 20 s was woken. */
    private static final long MINUTE = 60_000 * MS;

    /** A thread sleeping in awaitFrames (or an idle strategy), and what the call returned once it has. */
    private record Sleeper(Thread thread, AtomicReference<Boolean> result) {
        /** Waits up to 20 s for the minute's sleep to end, fails with {@code why} if it has not, and returns its result. */
        Boolean ended(String why) throws InterruptedException {
            thread.join(20_000);
            assertFalse(thread.isAlive(), why);
            return result.get();
        }
    }

    private static Sleeper sleeper(BooleanSupplier sleep) {
        AtomicReference<Boolean> result = new AtomicReference<>();
        Thread t = Thread.ofPlatform().daemon().name("sleeper").start(() -> result.set(sleep.getAsBoolean()));
        return new Sleeper(t, result);
    }

    /** {@code sleep} on a thread of its own, once the consumer has armed its interrupt and reached the futex. */
    private Sleeper consumerAsleep(BooleanSupplier sleep) throws InterruptedException {
        Sleeper s = sleeper(sleep);
        FabricFixture.waitUntil("the consumer arms its interrupt", () -> armed(1));
        Thread.sleep(20); // let it reach the futex
        return s;
    }

    private Sleeper consumerAsleep() throws InterruptedException {
        return consumerAsleep(() -> consumer.awaitFrames(MINUTE));
    }

    @Test
    void aSleepingConsumerIsWokenByAFrame() throws Exception {
        Sleeper s = consumerAsleep();
        assertEquals(OK, send(producer, 1, "wake up"));
        assertEquals(Boolean.TRUE, s.ended("woken by the frame, not by the minute's timeout"), "awaitFrames reports frames ready");
        assertFalse(armed(1), "the interrupt is disarmed after waking");
        Collector c = new Collector();
        assertEquals(1, consumer.poll(c, 10));
        assertEquals(List.of("wake up"), c.texts());
        assertEquals(1, consumer.counters().wakeups());
    }

    @Test
    void aFrameFromAnotherMappingWakesTheConsumer() throws Exception {
        Fabric other = fx.join();
        FabricNode remote = fx.attach(other, 2);
        Sleeper s = consumerAsleep();
        assertEquals(OK, send(remote, 1, "from afar"));
        assertEquals(Boolean.TRUE, s.ended("woken by the other mapping's frame"));
        Collector c = new Collector();
        assertEquals(1, consumer.poll(c, 10));
        assertEquals(2, c.frames.getFirst().source());
    }

    @Test
    void returnsAtOnceWhenAFrameIsAlreadyReady() {
        assertEquals(OK, send(producer, 1, "ready"));
        assertTrue(consumer.awaitFrames(10_000 * MS));
        assertFalse(armed(1));
        assertEquals(1, consumer.poll(new Collector(), 10));
    }

    @Test
    void returnsFalseWhenNothingArrives() {
        assertFalse(consumer.awaitFrames(20 * MS));
        assertFalse(armed(1));
        assertEquals(0, consumer.counters().wakeups());
    }

    @Test
    void wakeupFromAnotherThreadEndsASleepWithoutFrames() throws Exception {
        Sleeper s = consumerAsleep();
        consumer.wakeup();
        assertEquals(Boolean.FALSE, s.ended("the wakeup ended a 60 s sleep"), "no frames: the sleep just ends");
        assertFalse(armed(1));

        int token = consumer.prepareSleep();
        consumer.wakeup(); // work handed over between the sleeper's last look and its sleep
        Sleeper prepared = sleeper(() -> consumer.awaitFrames(MINUTE, token));
        assertEquals(Boolean.FALSE, prepared.ended("a 60 s sleep prepared before the wakeup returns at once"));
        assertFalse(armed(1));
    }

    @Test
    void closingTheNodeWakesASleeper() throws Exception {
        Sleeper s = consumerAsleep();
        consumer.close();
        assertEquals(Boolean.FALSE, s.ended("close wakes the thread sleeping in awaitFrames"));
    }
}
