package dev.nupa.device;

import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.MS;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

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

    /** Starts a thread that sleeps in awaitFrames(timeout) and records what it returned and how long it took. */
    private Thread sleeper(FabricNode node, long timeoutNs, AtomicReference<Boolean> result, AtomicLong tookNs) {
        return sleeper(() -> node.awaitFrames(timeoutNs), result, tookNs);
    }

    private static Thread sleeper(java.util.function.BooleanSupplier sleep, AtomicReference<Boolean> result, AtomicLong tookNs) {
        return Thread.ofPlatform().daemon().name("sleeper").start(() -> {
            long t0 = System.nanoTime();
            boolean r = sleep.getAsBoolean();
            tookNs.set(System.nanoTime() - t0);
            result.set(r);
        });
    }

    /** {@link #sleeper} on the consumer, once it has armed its interrupt and reached the futex. */
    private Thread consumerAsleep(long timeoutNs, AtomicReference<Boolean> result, AtomicLong tookNs) throws InterruptedException {
        Thread t = sleeper(consumer, timeoutNs, result, tookNs);
        FabricFixture.waitUntil("the consumer arms its interrupt", () -> armed(1));
        Thread.sleep(20); // let it reach the futex
        return t;
    }

    @Test
    void aSleepingConsumerIsWokenByAFrame() throws Exception {
        AtomicReference<Boolean> result = new AtomicReference<>();
        AtomicLong took = new AtomicLong();
        Thread t = consumerAsleep(1_000 * MS, result, took);
        assertEquals(OK, send(producer, 1, "wake up"));
        t.join(5_000);
        assertFalse(t.isAlive());
        assertEquals(Boolean.TRUE, result.get(), "awaitFrames reports frames ready");
        assertTrue(took.get() < 900 * MS, "woken by the frame, not by the 1 s timeout (took " + took.get() / MS + " ms)");
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
        AtomicReference<Boolean> result = new AtomicReference<>();
        AtomicLong took = new AtomicLong();
        Thread t = consumerAsleep(1_000 * MS, result, took);
        assertEquals(OK, send(remote, 1, "from afar"));
        t.join(5_000);
        assertEquals(Boolean.TRUE, result.get());
        assertTrue(took.get() < 900 * MS, "took " + took.get() / MS + " ms");
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
        AtomicReference<Boolean> result = new AtomicReference<>();
        AtomicLong took = new AtomicLong();
        Thread t = consumerAsleep(60_000 * MS, result, took);
        consumer.wakeup();
        t.join(30_000);
        assertFalse(t.isAlive(), "the wakeup ended a 60 s sleep");
        assertEquals(Boolean.FALSE, result.get(), "no frames: the sleep just ends");
        assertFalse(armed(1));

        int token = consumer.prepareSleep();
        consumer.wakeup(); // work handed over between the sleeper's last look and its sleep
        Thread prepared = sleeper(() -> consumer.awaitFrames(60_000 * MS, token), result, took);
        prepared.join(30_000);
        assertFalse(prepared.isAlive(), "a 60 s sleep prepared before the wakeup returns at once");
        assertEquals(Boolean.FALSE, result.get());
        assertFalse(armed(1));
    }

    @Test
    void closingTheNodeWakesASleeper() throws Exception {
        AtomicReference<Boolean> result = new AtomicReference<>();
        AtomicLong took = new AtomicLong();
        Thread t = consumerAsleep(10_000 * MS, result, took);
        consumer.close();
        t.join(9_000);
        assertFalse(t.isAlive(), "close wakes the thread sleeping in awaitFrames");
        assertEquals(Boolean.FALSE, result.get());
    }

    @Test
    void backoffIdleStrategySleepsUntilAFrameArrives() throws Exception {
        BackoffIdleStrategy idle = new BackoffIdleStrategy(consumer, 0, 0, 1_000 * MS);
        AtomicLong took = new AtomicLong();
        Thread t = Thread.ofPlatform().daemon().start(() -> {
            long t0 = System.nanoTime();
            idle.idle(0);
            took.set(System.nanoTime() - t0);
        });
        FabricFixture.waitUntil("the consumer arms its interrupt", () -> armed(1));
        Thread.sleep(20);
        assertEquals(OK, send(producer, 1, "x"));
        t.join(5_000);
        assertFalse(t.isAlive());
        assertTrue(took.get() < 900 * MS, "took " + took.get() / MS + " ms");
        assertEquals(1, consumer.poll(new Collector(), 10));
    }
}
