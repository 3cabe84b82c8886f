package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class FabricGeometryTest {
    private static final long MS = FabricFixture.MS;
    private final FabricGeometry base = FabricFixture.small();

    private static void rejected(String expected, Executable e) {
        FabricException ex = assertThrows(FabricException.class, e);
        assertTrue(ex.getMessage().startsWith("bad fabric geometry"), ex.getMessage());
        assertTrue(ex.getMessage().contains(expected), "message '" + ex.getMessage() + "' should name " + expected);
    }

    @Test
    void defaultsAreValid() {
        FabricGeometry d = FabricGeometry.defaults();
        assertEquals(64, d.maxNodes());
        assertEquals(256, d.ringSlots());
        assertEquals(9216, d.maxFrame());
        assertEquals(d.totalBytes(), FabricLayout.totalBytes(64, 1, 256, 9216, 256, 64L << 20));
    }

    @Test
    void ringSlotsMustBeAPowerOfTwo() {
        rejected("ring slots 6", () -> base.withRing(6, 256));
        rejected("ring slots 3", () -> base.withRing(3, 256));
        rejected("ring slots 1", () -> base.withRing(1, 256));
        rejected("ring slots 131072", () -> base.withRing(131072, 256));
        assertEquals(2, base.withRing(2, 256).ringSlots());
        assertEquals(65536, base.withRing(65536, 64).ringSlots());
    }

    @Test
    void nodeCountIsBounded() {
        rejected("max nodes 1025", () -> base.withMaxNodes(FabricGeometry.MAX_NODES + 1));
        rejected("max nodes 0", () -> base.withMaxNodes(0));
        assertEquals(1024, base.withMaxNodes(1024).maxNodes());
    }

    @Test
    void otherBoundsAreChecked() {
        rejected("rings per node 0", () -> base.withRingsPerNode(0));
        rejected("rings per node 17", () -> base.withRingsPerNode(17));
        rejected("max frame 63", () -> base.withRing(8, 63));
        rejected("max frame 16777217", () -> base.withRing(8, (16 << 20) + 1));
        rejected("max windows 0", () -> base.withWindows(0, 0));
        rejected("window space 100", () -> base.withWindows(1, 100));
        rejected("window space -4096", () -> base.withWindows(1, -4096));
        rejected("heartbeat period", () -> base.withTimeouts(999_999, 10 * MS, 10 * MS));
        rejected("heartbeat timeout", () -> base.withTimeouts(10 * MS, 19 * MS, 10 * MS));
        rejected("stall timeout", () -> base.withTimeouts(10 * MS, 20 * MS, 999_999));
        rejected("too large", () -> new FabricGeometry(1024, 16, 65536, 16 << 20, 1, 0, 100 * MS, 1000 * MS, 1000 * MS));
    }

    @Test
    void withersChangeOnlyTheirFields() {
        FabricGeometry g = base.withTimeouts(20 * MS, 200 * MS, 70 * MS);
        assertEquals(new FabricGeometry(4, 1, 8, 256, 8, 64 * 1024, 20 * MS, 200 * MS, 70 * MS), g);
        assertEquals(new FabricGeometry(4, 3, 8, 256, 8, 64 * 1024, 10 * MS, 100 * MS, 10_000 * MS),
                base.withRingsPerNode(3));
        assertEquals(new FabricGeometry(4, 1, 8, 256, 2, 8192, 10 * MS, 100 * MS, 10_000 * MS), base.withWindows(2, 8192));
    }
}
