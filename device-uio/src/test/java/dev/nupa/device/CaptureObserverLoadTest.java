package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node under load, watched by an observer whose capture ring is too small to keep up: every frame the node sends
 * and receives is either recorded or counted dropped, and the observer holds no node address.
 */
class CaptureObserverLoadTest {
    static final int FRAMES = 20_000;
    static final int ECHO_EVERY = 10;
    final FabricFixture fx = new FabricFixture();

    @AfterEach
    void close() {
        fx.close();
    }

    static long[] stateWords(Fabric f) {
        long[] w = new long[f.geometry().maxNodes()];
        for (int a = 0; a < w.length; a++) {
            w[a] = f.stateWord(a);
        }
        return w;
    }

    @Test
    void recordedPlusDroppedIsEveryFrameTheNodeSawAndTheObserverTookNoAddress() throws Exception {
        FabricGeometry g = new FabricGeometry(8, 1, 256, 256, 8, 64 * 1024, 10 * FabricFixture.MS,
                1_000 * FabricFixture.MS, 10_000 * FabricFixture.MS);
        Fabric f = fx.create(g);
        FabricNode sender = fx.attach(f, 0);
        FabricNode watched = fx.attach(f, 1);
        long[] before = stateWords(f);
        Fabric observerView = fx.join(); // the observer maps the fabric as `nupa capture` does: no attach
        CaptureObserver o = fx.track(CaptureObserver.start(observerView, new int[] {1}, 4096, 96));
        FabricFixture.waitUntil("node 1 attaches", () -> o.attached(0) == watched.generation());
        assertArrayEquals(before, stateWords(f), "the observer holds no node address");

        AtomicLong received = new AtomicLong();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        MemorySegment echo = Arena.ofAuto().allocate(16);
        Thread receiver = Thread.ofPlatform().start(() -> {
            try {
                FrameHandler h = (src, mem, off, len) -> {
                    if (received.incrementAndGet() % ECHO_EVERY == 0) {
                        while (watched.offer(src, echo, 0, 16) == FabricDevice.BACK_PRESSURED) {
                            Thread.onSpinWait();
                        }
                    }
                };
                while (received.get() < FRAMES) {
                    if (watched.poll(h, 64) == 0) {
                        watched.awaitFrames(FabricFixture.MS);
                    }
                }
            } catch (Throwable t) {
                failed.set(t);
            }
        });
        MemorySegment frame = Arena.ofAuto().allocate(200);
        long[] echoes = {0};
        FrameHandler drain = (src, mem, off, len) -> echoes[0]++;
        long[] records = {0};
        long[] sizesWrong = {0};
        CaptureRing.RecordHandler count = (ts, out, src, dst, len, mem, off, captured) -> {
            records[0]++;
            if (captured != Math.min(len, 96) || (out ? src != 1 : dst != 1)) {
                sizesWrong[0]++;
            }
        };
        for (int i = 0; i < FRAMES; i++) {
            frame.set(ValueLayout.JAVA_INT, 0, i);
            int len = 40 + i % 160;
            while (sender.offer(1, frame, 0, len) != FabricDevice.OK) {
                sender.poll(drain, 64);
                o.poll(count, 64);
            }
            sender.poll(drain, 64);
            if (i >= FRAMES / 4) { // the first quarter finds nobody reading the capture ring: it fills, and drops
                o.poll(count, 64);
            }
        }
        receiver.join(10_000);
        assertFalse(receiver.isAlive(), "the receiver got " + received.get() + " of " + FRAMES);
        if (failed.get() != null) {
            throw new AssertionError(failed.get());
        }
        FabricFixture.waitUntil("the echoes are back", () -> {
            sender.poll(drain, 64);
            return echoes[0] == FRAMES / ECHO_EVERY;
        });
        FabricCounters c = watched.counters();
        long saw = c.framesSent() + c.framesReceived();
        assertEquals(FRAMES + FRAMES / ECHO_EVERY, saw);
        while (o.poll(count, 1_000) > 0) {
            // drain what is left
        }
        long recorded = o.recorded(0);
        long dropped = o.dropped(0);
        System.out.println("capture under load: node 1 saw " + saw + " frames; recorded " + recorded + ", dropped " + dropped
                + ", read by the observer " + records[0]);
        assertEquals(records[0], recorded, "every recorded frame was read");
        assertEquals(saw, recorded + dropped);
        assertTrue(dropped > 0, "the small ring must have dropped some");
        assertTrue(recorded > 0);
        assertEquals(0, sizesWrong[0]);
        assertFalse(o.broken(0));
        assertArrayEquals(before, stateWords(f), "the observer holds no node address");
        o.close();
        assertFalse(Files.exists(o.file()));
        FabricFixture.waitUntil("node 1 lets go", () -> watched.captureObservers() == 0);
    }
}
