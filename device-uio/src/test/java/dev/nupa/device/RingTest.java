package dev.nupa.device;

import static dev.nupa.device.FabricDevice.BACK_PRESSURED;
import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricFixture.Collector;

/** Sending and receiving through one node's rings. */
class RingTest {
    private static final int SLOTS = 8;
    private final FabricFixture fx = new FabricFixture();
    private Fabric fabric;
    private FabricNode a;
    private FabricNode b;

    @BeforeEach
    void setUp() {
        fabric = fx.create(FabricFixture.small().withRingsPerNode(2));
        a = fx.attach(fabric, 0);
        b = fx.attach(fabric, 1);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void framesArriveInOrderWithTheirSourceAndBytes() {
        for (int i = 0; i < 5; i++) {
            assertEquals(OK, send(a, 1, "frame-" + i));
        }
        Collector c = new Collector();
        assertEquals(5, b.poll(c, 100));
        assertEquals(List.of("frame-0", "frame-1", "frame-2", "frame-3", "frame-4"), c.texts());
        assertTrue(c.frames.stream().allMatch(r -> r.source() == 0));
        assertEquals(0, b.poll(c, 100), "each frame is delivered once");
    }

    @Test
    void offerCopiesFromAnOffsetInTheSource() {
        byte[] src = "xxxxHELLOyyyy".getBytes();
        assertEquals(OK, a.offer(1, MemorySegment.ofArray(src), 4, 5));
        Collector c = new Collector();
        assertEquals(1, b.poll(c, 10));
        assertEquals("HELLO", c.frames.getFirst().text());
    }

    @Test
    void zeroLengthAndMaximumLengthFramesArrive() {
        byte[] big = new byte[b.maxFrame()];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 31 + 7);
        }
        assertEquals(OK, a.offer(1, MemorySegment.ofArray(new byte[0]), 0, 0));
        assertEquals(OK, a.offer(1, MemorySegment.ofArray(big), 0, big.length));
        Collector c = new Collector();
        assertEquals(2, b.poll(c, 10));
        assertEquals(0, c.frames.get(0).data().length);
        assertArrayEquals(big, c.frames.get(1).data());
    }

    @Test
    void wrapsAroundOverManyLaps() {
        Collector c = new Collector();
        int total = 0;
        int sent = 0;
        // Batches of 3, 5 and 8 keep the positions out of step with the slot count.
        int[] batches = {3, 5, 8, 1, 7};
        for (int lap = 0; total < 10 * SLOTS * 3; lap++) {
            int batch = batches[lap % batches.length];
            for (int i = 0; i < batch; i++) {
                byte[] frame = pattern(sent, 1 + (sent * 37) % 250);
                assertEquals(OK, a.offer(1, MemorySegment.ofArray(frame), 0, frame.length), "frame " + sent);
                sent++;
            }
            total += b.poll(c, 100);
            assertEquals(sent, total, "all sent frames received after lap " + lap);
        }
        for (int i = 0; i < sent; i++) {
            assertArrayEquals(pattern(i, 1 + (i * 37) % 250), c.frames.get(i).data(), "frame " + i);
        }
        assertEquals(sent, b.counters().framesReceived());
        assertEquals(sent, a.counters().framesSent());
    }

    @Test
    void fullRingBackPressuresAndLosesNothing() {
        int seq = 0;
        for (; seq < SLOTS; seq++) {
            assertEquals(OK, send(a, 1, "m" + seq));
        }
        assertEquals(BACK_PRESSURED, send(a, 1, "m" + seq), "a full ring refuses the frame");
        assertEquals(BACK_PRESSURED, send(b, 1, "from-b"), "for every producer");
        FrameClaim claim = new FrameClaim();
        assertEquals(BACK_PRESSURED, a.tryClaim(1, 10, claim));
        assertEquals(2, a.counters().backPressured());
        assertEquals(1, b.counters().backPressured());

        Collector c = new Collector();
        assertEquals(3, b.poll(c, 3));
        for (int i = 0; i < 3; i++, seq++) {
            assertEquals(OK, send(a, 1, "m" + seq), "room for three again");
        }
        assertEquals(BACK_PRESSURED, send(a, 1, "m" + seq));
        while (b.poll(c, 100) > 0) {
            // drain
        }
        assertEquals(OK, send(a, 1, "m" + seq));
        seq++;
        assertEquals(1, b.poll(c, 100));
        assertEquals(IntStream.range(0, seq).mapToObj(i -> "m" + i).toList(), c.texts(),
                "every accepted frame exactly once, in order");
        assertEquals(seq, a.counters().framesSent());
    }

    @Test
    void pollHonoursItsLimit() {
        for (int i = 0; i < 7; i++) {
            assertEquals(OK, send(a, 1, "f" + i));
        }
        Collector c = new Collector();
        assertEquals(0, b.poll(c, 0));
        assertEquals(3, b.poll(c, 3));
        assertEquals(List.of("f0", "f1", "f2"), c.texts());
        assertEquals(1, b.poll(c, 1));
        assertEquals(3, b.poll(c, 100));
        assertEquals(List.of("f0", "f1", "f2", "f3", "f4", "f5", "f6"), c.texts());
    }

    @Test
    void eachRingIsSeparateAndAllArePolled() {
        assertEquals(OK, a.offer(1, 1, FabricFixture.seg("ring1-a"), 0, 7));
        assertEquals(OK, a.offer(1, 0, FabricFixture.seg("ring0-a"), 0, 7));
        // Fill ring 0: ring 1 must still accept.
        for (int i = 1; i < SLOTS; i++) {
            assertEquals(OK, send(a, 1, "ring0-" + i));
        }
        assertEquals(BACK_PRESSURED, send(a, 1, "x"));
        assertEquals(OK, a.offer(1, 1, FabricFixture.seg("ring1-b"), 0, 7));
        Collector c = new Collector();
        assertEquals(SLOTS + 2, b.poll(c, 100));
        List<String> texts = c.texts();
        assertEquals(List.of("ring1-a", "ring1-b"), texts.stream().filter(t -> t.startsWith("ring1")).toList());
        assertEquals("ring0-a", texts.stream().filter(t -> t.startsWith("ring0")).findFirst().orElseThrow());
    }

    @Test
    void countersTrackFramesAndBytes() {
        send(a, 1, "12345");
        send(a, 1, "123");
        send(b, 1, "1");
        b.poll(new Collector(), 100);
        FabricCounters ca = a.counters();
        FabricCounters cb = b.counters();
        assertEquals(2, ca.framesSent());
        assertEquals(8, ca.bytesSent());
        assertEquals(1, cb.framesSent());
        assertEquals(3, cb.framesReceived());
        assertEquals(9, cb.bytesReceived());
        assertEquals(0, ca.framesReceived());
        assertEquals(cb, fabric.counters(1), "the fabric reads the same counters from the node table");
    }

    @Test
    void aThrowingHandlerIsCountedAndTheRingMovesOn() {
        for (int i = 0; i < 4; i++) {
            send(a, 1, "f" + i);
        }
        List<String> seen = new ArrayList<>();
        int n = b.poll((src, mem, off, len) -> {
            String s = new String(mem.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE));
            seen.add(s);
            if (s.equals("f1")) {
                throw new IllegalStateException("handler bug");
            }
            if (s.equals("f2")) {
                throw new StackOverflowError("a handler out of stack");
            }
        }, 10);
        assertEquals(4, n);
        assertEquals(List.of("f0", "f1", "f2", "f3"), seen);
        assertEquals(2, b.counters().handlerErrors());
        assertEquals(0, b.poll(new Collector(), 10), "the failing frame is not redelivered");

        // An error outside those the ring counts ends the poll, but nothing handed over comes again.
        for (int i = 4; i < 7; i++) {
            send(a, 1, "f" + i);
        }
        seen.clear();
        class Fatal extends Error {
        }
        assertThrows(Fatal.class, () -> b.poll((src, mem, off, len) -> {
            String s = new String(mem.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE));
            seen.add(s);
            if (s.equals("f5")) {
                throw new Fatal();
            }
        }, 10));
        assertEquals(List.of("f4", "f5"), seen);
        Collector rest = new Collector();
        assertEquals(1, b.poll(rest, 10));
        assertEquals(List.of("f6"), rest.texts(), "f4 and f5 are not handed over again");
    }

    @Test
    void aFrameLargerThanMaxFrameIsRefused() {
        MemorySegment big = MemorySegment.ofArray(new byte[a.maxFrame() + 1]);
        FabricException e = assertThrows(FabricException.class, () -> a.offer(1, big, 0, a.maxFrame() + 1));
        assertTrue(e.getMessage().contains(String.valueOf(a.maxFrame() + 1)), e.getMessage());
        assertTrue(e.getMessage().contains("maximum " + a.maxFrame()), e.getMessage());
        assertThrows(FabricException.class, () -> a.tryClaim(1, a.maxFrame() + 1, new FrameClaim()));
        assertThrows(FabricException.class, () -> a.offer(1, big, 0, -1));
        assertEquals(0, b.poll(new Collector(), 10), "nothing was sent");
        assertEquals(OK, send(a, 1, "still fine"));
        assertEquals(1, b.poll(new Collector(), 10));
    }

    @Test
    void aRingOutsideTheGeometryIsRefused() {
        FabricException e = assertThrows(FabricException.class, () -> a.offer(1, 2, FabricFixture.seg("x"), 0, 1));
        assertTrue(e.getMessage().contains("ring 2"), e.getMessage());
        assertThrows(FabricException.class, () -> a.offer(1, -1, FabricFixture.seg("x"), 0, 1));
    }

    @Test
    void aNodeMaySendToItself() {
        assertEquals(OK, send(a, 0, "loopback"));
        Collector c = new Collector();
        assertEquals(1, a.poll(c, 10));
        assertEquals("loopback", c.frames.getFirst().text());
        assertEquals(0, c.frames.getFirst().source());
    }

    @Test
    void describeNamesEveryCode() {
        assertEquals("ok", FabricDevice.describe(OK));
        assertTrue(FabricDevice.describe(BACK_PRESSURED).contains("back-pressured"));
        assertTrue(FabricDevice.describe(FabricDevice.PEER_DOWN).contains("peer down"));
        assertTrue(FabricDevice.describe(FabricDevice.LATE).contains("late"));
        assertTrue(FabricDevice.describe(FabricDevice.DETACHED).contains("detached"));
        assertTrue(FabricDevice.describe(42).contains("42"));
    }

    static byte[] pattern(int seed, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (seed * 131 + i * 7);
        }
        return b;
    }
}
