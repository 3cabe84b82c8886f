package dev.nupa.device;

import static dev.nupa.device.FabricLayout.*;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FabricLayoutTest {
    private final FabricFixture fx = new FabricFixture();

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void magicSpellsNupaFab1InLittleEndian() {
        byte[] bytes = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(MAGIC).array();
        assertEquals("NUPAFAB1", new String(bytes, StandardCharsets.US_ASCII));
    }

    @Test
    void fabricFileStartsWithTheMagicAndVersion() throws Exception {
        fx.create(FabricFixture.small());
        byte[] file = Files.readAllBytes(fx.path);
        assertEquals("NUPAFAB1", new String(file, 0, 8, StandardCharsets.US_ASCII));
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(VERSION, b.getInt((int) H_VERSION));
        assertEquals(PAGE, b.getInt((int) H_HEADER_BYTES));
        assertEquals(file.length, b.getLong((int) H_TOTAL_BYTES));
    }

    @Test
    void createThenJoinReadsTheSameGeometry() {
        FabricGeometry g = new FabricGeometry(3, 2, 16, 200, 5, 3 * PAGE, 7 * FabricFixture.MS,
                50 * FabricFixture.MS, 33 * FabricFixture.MS);
        Fabric created = fx.create(g);
        Fabric joined = fx.join();
        Fabric inspected = fx.track(ShmFabric.inspect(fx.path));
        assertEquals(g, created.geometry());
        assertEquals(g, joined.geometry());
        assertEquals(g, inspected.geometry());
        assertEquals(created.createdMillis(), joined.createdMillis());
        assertTrue(joined.createdMillis() > 0);
        assertEquals(g.totalBytes(), joined.mem.byteSize());
        assertEquals(slotBytes(200), joined.slotBytes);
        assertEquals(ringBytes(16, 200), joined.ringBytes);
    }

    @Test
    void headerRoundTripOfDefaultGeometry() throws Exception {
        FabricGeometry g = FabricGeometry.defaults().withWindows(4, 4 * PAGE);
        fx.create(g);
        assertEquals(g, fx.join().geometry());
        assertEquals(g.totalBytes(), Files.size(fx.path));
    }

    @Test
    void regionsAreAlignedAndDoNotOverlap() {
        int[][] shapes = {{1, 1, 2, 64, 1}, {4, 1, 8, 256, 8}, {3, 2, 16, 200, 5}, {64, 1, 256, 9216, 256},
            {1024, 16, 2, 64, 65536}, {5, 3, 32, 1500, 3}};
        for (int[] s : shapes) {
            int nodes = s[0], rings = s[1], slots = s[2], frame = s[3], windows = s[4];
            long windowBytes = 5L * PAGE;
            String shape = Arrays.toString(s);
            int slot = slotBytes(frame);
            assertEquals(0, slot % LINE, shape + ": slot size is whole cache lines");
            assertTrue(slot >= SLOT_HEADER + frame, shape + ": a slot holds its header and the largest frame");
            long ring = ringBytes(slots, frame);
            assertEquals(0, ring % LINE, shape);
            assertEquals(RING_HEADER + (long) slots * slot, ring, shape);

            long nodeTable = nodeTableOffset();
            long ringsAt = ringsOffset(nodes);
            long windowTable = windowTableOffset(nodes, rings, slots, frame);
            long windowArea = windowAreaOffset(nodes, rings, slots, frame, windows);
            long total = totalBytes(nodes, rings, slots, frame, windows, windowBytes);
            for (long off : new long[] {nodeTable, ringsAt, windowTable, windowArea}) {
                assertEquals(0, off % PAGE, shape + ": region at " + off + " is page aligned");
            }
            assertTrue(nodeTable >= PAGE, shape + ": node table after the header page");
            assertTrue(ringsAt >= nodeTable + (long) nodes * NODE_BYTES, shape + ": rings after the node table");
            assertTrue(windowTable >= ringsAt + (long) nodes * rings * ring, shape + ": window table after the rings");
            assertTrue(windowArea >= windowTable + (long) windows * WINDOW_ENTRY, shape + ": window area after the table");
            assertEquals(windowArea + windowBytes, total, shape);
        }
    }

    @Test
    void headerOffsetsStoredInTheFileMatchTheLayoutFunctions() {
        FabricGeometry g = new FabricGeometry(3, 2, 16, 200, 5, 3 * PAGE, 10 * FabricFixture.MS,
                100 * FabricFixture.MS, 50 * FabricFixture.MS);
        Fabric f = fx.create(g);
        assertEquals(nodeTableOffset(), f.mem.get(ValueLayout.JAVA_LONG, H_NODE_TABLE));
        assertEquals(ringsOffset(3), f.mem.get(ValueLayout.JAVA_LONG, H_RINGS));
        assertEquals(windowTableOffset(3, 2, 16, 200), f.mem.get(ValueLayout.JAVA_LONG, H_WINDOW_TABLE));
        assertEquals(windowAreaOffset(3, 2, 16, 200, 5), f.mem.get(ValueLayout.JAVA_LONG, H_WINDOW_AREA));
        assertEquals(NODE_BYTES, f.mem.get(ValueLayout.JAVA_LONG, H_NODE_BYTES));
        // Every ring of every node lies inside the ring region and rings do not overlap.
        long end = f.windowTable;
        long prev = -1;
        for (int a = 0; a < 3; a++) {
            for (int r = 0; r < 2; r++) {
                long base = f.ringOffset(a, r);
                assertEquals(0, base % LINE);
                assertTrue(base >= f.rings && base + f.ringBytes <= end);
                assertTrue(prev < 0 || base >= prev + f.ringBytes);
                prev = base;
            }
        }
    }

    @Test
    void headerFieldsFitTheHeaderPageWithoutOverlap() {
        long[][] fields = {
            {H_MAGIC, 8}, {H_VERSION, 4}, {H_HEADER_BYTES, 4}, {H_TOTAL_BYTES, 8}, {H_MAX_NODES, 4},
            {H_RINGS_PER_NODE, 4}, {H_RING_SLOTS, 4}, {H_SLOT_BYTES, 4}, {H_MAX_FRAME, 4}, {H_MAX_WINDOWS, 4},
            {H_WINDOW_BYTES, 8}, {H_NODE_TABLE, 8}, {H_RINGS, 8}, {H_WINDOW_TABLE, 8}, {H_WINDOW_AREA, 8},
            {H_HEARTBEAT_PERIOD_NS, 8}, {H_HEARTBEAT_TIMEOUT_NS, 8}, {H_STALL_TIMEOUT_NS, 8},
            {H_CREATED_MILLIS, 8}, {H_NODE_BYTES, 8}, {H_RING_BYTES, 8}, {H_LOCK, 8}};
        assertNoOverlap("header", fields, PAGE);
        assertEquals(0, H_LOCK % LINE, "the control lock starts a cache line");
        for (long[] f : fields) {
            if (f[0] != H_LOCK) {
                assertTrue(f[0] + f[1] <= H_LOCK, "read-mostly header fields stay off the lock's line");
            }
        }
    }

    @Test
    void nodeEntryFieldsDoNotOverlapAndSharedWordsAreOnTheirOwnLines() {
        long[][] fields = {
            {N_STATE, 4}, {N_GENERATION, 4}, {N_PID, 8}, {N_HOST_ID, 8}, {N_JOINED_MILLIS, 8}, {N_HEARTBEAT, 8},
            {N_ARMED, 4}, {N_DOORBELL, 4}, {N_FRAMES_SENT, 8}, {N_BYTES_SENT, 8}, {N_BACK_PRESSURED, 8},
            {N_PEER_DOWN, 8}, {N_LATE_DROPS, 8}, {N_FRAMES_RECEIVED, 8}, {N_BYTES_RECEIVED, 8},
            {N_STALL_SKIPS, 8}, {N_WAKEUPS, 8}, {N_DISCARDED, 8}, {N_HANDLER_ERRORS, 8}, {N_CORRUPT, 8},
            {N_ATTR_VERSION, 8}, {N_ATTRS, ATTR_BYTES}};
        assertNoOverlap("node entry", fields, NODE_BYTES);
        assertEquals(NODE_BYTES, N_ATTRS + ATTR_BYTES, "attributes fill the rest of the entry");
        assertEquals(N_STATE + 4, N_GENERATION, "state and generation form one u64");
        assertEquals(0, N_STATE % 8);
        assertEquals(0, N_HEARTBEAT % LINE);
        assertEquals(0, N_ARMED % LINE);
        assertEquals(0, N_DOORBELL % 4, "a futex word must be 4-byte aligned");
        assertEquals(0, N_FRAMES_SENT % LINE, "producer counters start a line");
        assertEquals(0, N_FRAMES_RECEIVED % LINE, "consumer counters start a line");
        assertTrue(N_LATE_DROPS + 8 <= N_FRAMES_RECEIVED, "producer and consumer counters on different lines");
        assertEquals(0, NODE_BYTES % LINE);
    }

    @Test
    void ringSlotAndWindowEntryFieldsDoNotOverlap() {
        assertNoOverlap("ring header", new long[][] {{R_TAIL, 8}, {R_HEAD, 8}}, RING_HEADER);
        assertTrue(R_HEAD - R_TAIL >= LINE, "producers' tail and consumer's head on different lines");
        assertNoOverlap("slot header", new long[][] {{S_CTRL, 8}, {S_LENGTH, 4}, {S_SOURCE, 2}, {S_SOURCE_GEN, 2}},
                SLOT_HEADER);
        assertNoOverlap("window entry", new long[][] {{W_STATE, 4}, {W_OWNER, 4}, {W_OWNER_GEN, 4}, {W_KEY, 4},
            {W_OFFSET, 8}, {W_LENGTH, 8}, {W_ACCESS, 4}}, WINDOW_ENTRY);
        assertEquals(0, W_OFFSET % 8);
        assertEquals(0, W_LENGTH % 8);
    }

    @Test
    void alignRoundsUpToPowersOfTwo() {
        assertEquals(0, align(0, PAGE));
        assertEquals(PAGE, align(1, PAGE));
        assertEquals(PAGE, align(PAGE, PAGE));
        assertEquals(2 * PAGE, align(PAGE + 1, PAGE));
        assertEquals(64, slotBytes(48));
        assertEquals(128, slotBytes(49));
    }

    private static void assertNoOverlap(String what, long[][] fields, long size) {
        List<long[]> sorted = new ArrayList<>(Arrays.asList(fields));
        sorted.sort(Comparator.comparingLong(f -> f[0]));
        long end = 0;
        for (long[] f : sorted) {
            assertTrue(f[0] >= end, what + ": field at " + f[0] + " overlaps the one ending at " + end);
            assertEquals(0, f[0] % Math.min(f[1], 8), what + ": field at " + f[0] + " is naturally aligned");
            end = f[0] + f[1];
        }
        assertTrue(end <= size, what + ": fields end at " + end + ", beyond " + size);
    }
}
