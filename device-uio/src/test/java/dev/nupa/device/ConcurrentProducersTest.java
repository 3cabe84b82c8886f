package dev.nupa.device;

import static dev.nupa.device.FabricDevice.BACK_PRESSURED;
import static dev.nupa.device.FabricDevice.OK;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.function.IntFunction;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many producers, one consumer: no frame lost, none duplicated, each producer's order kept, every
 * checksum equal. The stall timeout is long so a descheduled producer is never skipped.
 */
@Timeout(120)
class ConcurrentProducersTest {
    private static final int PRODUCERS = 4;
    private static final int FRAMES = 5_000;
    private static final int CONSUMER = 4;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private final FabricFixture fx = new FabricFixture();

    /** Five nodes, a 16-slot ring of 256-byte frames, long stall timeout. */
    private static FabricGeometry geometry() {
        return FabricFixture.small().withMaxNodes(5).withRing(16, 256);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void producersOnOneMapping() throws Exception {
        Fabric fabric = fx.create(geometry());
        FabricNode consumer = fx.attach(fabric, CONSUMER);
        List<FabricNode> producers = new ArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            producers.add(fx.attach(fabric, p));
        }
        run(consumer, producers::get, p -> p);
        for (FabricNode p : producers) {
            assertEquals(FRAMES, p.counters().framesSent());
        }
    }

    @Test
    void producersEachMappingTheSamePath() throws Exception {
        fx.create(geometry());
        FabricNode consumer = fx.track(ShmFabric.attach(fx.path, CONSUMER, geometry()));
        List<FabricNode> producers = new ArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            producers.add(fx.track(ShmFabric.attach(fx.path, p, geometry())));
        }
        run(consumer, producers::get, p -> p);
    }

    @Test
    void threadsSharingOneNode() throws Exception {
        Fabric fabric = fx.create(geometry());
        FabricNode consumer = fx.attach(fabric, CONSUMER);
        FabricNode shared = fx.attach(fabric, 0);
        run(consumer, p -> shared, p -> 0);
        assertEquals((long) PRODUCERS * FRAMES, shared.counters().framesSent());
    }

    /**
     * Producer thread p sends through {@code nodeOf(p)}; frames carry [thread, seq, payload length,
     * payload, crc32 of all before it]. The consumer checks each frame as it arrives.
     */
    private void run(FabricNode consumer, IntFunction<FabricNode> nodeOf, IntFunction<Integer> sourceOf)
            throws Exception {
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            int id = p;
            FabricNode node = nodeOf.apply(p);
            threads.add(Thread.ofPlatform().daemon().name("producer-" + p).start(() -> {
                try {
                    start.await();
                    SplittableRandom rnd = new SplittableRandom(id);
                    MemorySegment buf = MemorySegment.ofArray(new byte[256]);
                    for (int seq = 0; seq < FRAMES; seq++) {
                        int payload = rnd.nextInt(0, 256 - 20 + 1);
                        buf.set(INT, 0, id);
                        buf.set(INT, 4, seq);
                        buf.set(INT, 8, payload);
                        for (int i = 0; i < payload; i++) {
                            buf.set(ValueLayout.JAVA_BYTE, 12 + i, (byte) rnd.nextInt());
                        }
                        buf.set(LONG, 12 + payload, crc(buf, 12 + payload));
                        int length = 20 + payload;
                        int rc;
                        while ((rc = node.offer(CONSUMER, buf, 0, length)) == BACK_PRESSURED) {
                            Thread.yield();
                        }
                        if (rc != OK) {
                            errors.add("producer " + id + " frame " + seq + ": " + FabricDevice.describe(rc));
                            return;
                        }
                    }
                } catch (Throwable t) {
                    errors.add("producer " + id + ": " + t);
                }
            }));
        }

        int[] next = new int[PRODUCERS];
        long[] received = {0};
        FrameHandler check = (source, mem, off, len) -> {
            received[0]++;
            if (len < 20) {
                errors.add("short frame of " + len + " bytes");
                return;
            }
            int id = mem.get(INT, off);
            int seq = mem.get(INT, off + 4);
            int payload = mem.get(INT, off + 8);
            if (id < 0 || id >= PRODUCERS || payload != len - 20) {
                errors.add("bad frame header: id " + id + " payload " + payload + " length " + len);
                return;
            }
            if (source != sourceOf.apply(id)) {
                errors.add("frame of producer " + id + " has source " + source);
            }
            MemorySegment frame = mem.asSlice(off, len);
            if (frame.get(LONG, 12 + payload) != crc(frame, 12 + payload)) {
                errors.add("checksum mismatch in producer " + id + " frame " + seq);
            }
            if (seq != next[id]) {
                errors.add("producer " + id + ": expected seq " + next[id] + ", got " + seq);
            }
            next[id] = seq + 1;
        };

        start.countDown();
        long total = (long) PRODUCERS * FRAMES;
        long deadline = System.nanoTime() + 90_000 * FabricFixture.MS;
        while (received[0] < total && errors.size() < 20) {
            if (consumer.poll(check, 32) == 0) {
                if (System.nanoTime() > deadline) {
                    break;
                }
                consumer.awaitFrames(2 * FabricFixture.MS);
            }
        }
        for (Thread t : threads) {
            t.join(10_000);
        }
        assertEquals(List.of(), List.copyOf(errors));
        assertEquals(total, received[0], "every frame arrived");
        for (int p = 0; p < PRODUCERS; p++) {
            assertEquals(FRAMES, next[p], "producer " + p + " complete");
        }
        assertEquals(0, consumer.poll(check, 32), "no duplicates after the last frame");
        assertEquals(total, consumer.counters().framesReceived());
        assertEquals(0, consumer.counters().stallSkips());
    }

    private static long crc(MemorySegment s, int length) {
        CRC32 c = new CRC32();
        c.update(s.asSlice(0, length).asByteBuffer());
        return c.getValue();
    }
}
