package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricLayout;

class FloorRingTest {
    private static final int SLOT_BYTES = FabricLayout.slotBytes(9216);

    /** Frames go round both rings many times over; each echo must carry its own position back. */
    @Test
    void framesAreEchoedThroughBothRingsInOrder() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment window = arena.allocate(FloorRing.windowBytes(SLOT_BYTES), 4096);
            MemorySegment frame = arena.allocate(64, 64);
            long n = 10 * FloorRing.SLOTS + 3;
            CompletableFuture<Void> echo = CompletableFuture.runAsync(() -> FloorRing.echo(window, SLOT_BYTES, 0, n));
            Histogram h = LatencyStats.newHistogram();
            assertEquals(n, FloorRing.measure(window, SLOT_BYTES, frame, 64, 0, n, h), "the next position");
            echo.get(30, TimeUnit.SECONDS);
            assertEquals(n, h.getTotalCount(), "every round trip timed");
            // The second run of a measurement continues the positions where the first left them.
            CompletableFuture<Void> more = CompletableFuture.runAsync(() -> FloorRing.echo(window, SLOT_BYTES, n, 5));
            assertEquals(n + 5, FloorRing.measure(window, SLOT_BYTES, frame, 64, n, 5, null));
            more.get(30, TimeUnit.SECONDS);
            long last = FloorRing.BASE + FloorRing.ringBytes(SLOT_BYTES) + FabricLayout.RING_HEADER
                    + ((n + 4) % FloorRing.SLOTS) * SLOT_BYTES;
            assertEquals(n + 4, window.get(ValueLayout.JAVA_LONG_UNALIGNED, last + FabricLayout.SLOT_HEADER),
                    "the last echo's frame holds its position");
        }
    }

    /** A length no slot can hold (only a foreign writer could put it there) is refused by name. */
    @Test
    void anImpossibleLengthIsRefused() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment window = arena.allocate(FloorRing.windowBytes(SLOT_BYTES), 4096);
            long slot = FloorRing.BASE + FabricLayout.RING_HEADER;
            window.set(ValueLayout.JAVA_LONG_UNALIGNED, slot + FabricLayout.S_LENGTH, SLOT_BYTES);
            FabricLayout.LONG.setRelease(window, slot + FabricLayout.S_CTRL, 1L << 2);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> FloorRing.echo(window, SLOT_BYTES, 0, 1));
            assertTrue(e.getMessage().contains("a frame of " + SLOT_BYTES + " bytes"), e.getMessage());
        }
    }
}
