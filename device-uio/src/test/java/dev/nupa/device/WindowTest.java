package dev.nupa.device;

import static dev.nupa.device.FabricWindow.REMOTE_READ;
import static dev.nupa.device.FabricWindow.REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Windows: fabric memory a node exports for its peers to read and write in place. */
class WindowTest {
    private static final int PAGE = FabricLayout.PAGE;
    private final FabricFixture fx = new FabricFixture();
    private Fabric fabric;
    private FabricNode a;
    private FabricNode b;

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private void start(int windows, long bytes) {
        fabric = fx.create(FabricFixture.small().withWindows(windows, bytes));
        a = fx.attach(fabric, 0);
        b = fx.attach(fabric, 1);
    }

    private static void assertMessage(FabricException e, String... fragments) {
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "message '" + e.getMessage() + "' should contain '" + f + "'");
        }
    }

    @Test
    void aPublishedCounterTableIsReadFromTheFabricAlone() {
        start(8, 16L * PAGE);
        String[] names = {"rx_frames", "a_name_longer_than_its_twenty_four_bytes", "drops"};
        FabricWindow w = a.exportWindow(CounterTable.bytes(names.length), REMOTE_READ | FabricWindow.COUNTERS);
        a.exportWindow(64, REMOTE_READ); // a window of another kind is not read as counters
        CounterTable.format(w.memory(), "gateway tap0 192.168.77.2/24", names);
        CounterTable.set(w.memory(), 0, 7);
        CounterTable.set(w.memory(), 2, -1);
        List<Fabric.PublishedCounters> published = fabric.publishedCounters();
        assertEquals(1, published.size());
        assertEquals(0, published.getFirst().owner());
        assertEquals("gateway tap0 192.168.77.2/24", published.getFirst().title());
        assertEquals(List.of("rx_frames", "a_name_longer_than_its_t", "drops"), List.copyOf(published.getFirst().counters().keySet()),
                "names in order, cut to 24 bytes");
        assertEquals(List.of(7L, 0L, -1L), List.copyOf(published.getFirst().counters().values()));
        assertNull(CounterTable.title(b.exportWindow(64, REMOTE_READ).memory()), "no table in a fresh window");
        assertMessage(assertThrows(FabricException.class, () -> CounterTable.format(MemorySegment.ofArray(new byte[16]), "t", names)),
                "needs " + CounterTable.bytes(3) + " bytes");
        w.close();
        assertTrue(fabric.publishedCounters().isEmpty(), "withdrawn with its window");
    }

    @Test
    void exportOpenWriteAndReadBothWays() {
        start(8, 16L * PAGE);
        FabricWindow exported = a.exportWindow(5000, REMOTE_READ | REMOTE_WRITE);
        assertEquals(2L * PAGE, exported.length(), "rounded up to whole pages");
        assertEquals(0, exported.owner());
        assertTrue(exported.isValid());
        FabricWindow opened = b.openWindow(exported.id(), exported.key());
        assertEquals(exported.id(), opened.id());
        assertEquals(exported.length(), opened.length());
        assertEquals(0, opened.owner());
        assertEquals(REMOTE_READ | REMOTE_WRITE, opened.access());
        assertFalse(opened.memory().isReadOnly());
        assertTrue(opened.isValid());

        exported.memory().set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
        assertEquals(0x1122334455667788L, opened.memory().get(ValueLayout.JAVA_LONG, 0));
        opened.memory().set(ValueLayout.JAVA_LONG, 2L * PAGE - 8, 42L);
        assertEquals(42L, exported.memory().get(ValueLayout.JAVA_LONG, 2L * PAGE - 8));

        List<WindowInfo> infos = fabric.windows();
        assertEquals(1, infos.size());
        assertEquals(new WindowInfo(exported.id(), 0, a.generation(), infos.getFirst().offset(), 2L * PAGE,
                REMOTE_READ | REMOTE_WRITE), infos.getFirst());
        assertEquals(0, infos.getFirst().offset() % PAGE);
    }

    @Test
    void aWindowOpensFromAnotherMappingAndSeesTheSameBytes() {
        start(8, 16L * PAGE);
        FabricNode c = fx.attach(fx.join(), 2);
        FabricWindow w = a.exportWindow(PAGE, REMOTE_WRITE);
        FabricWindow far = c.openWindow(w.id(), w.key());
        far.memory().setString(0, "placed directly");
        assertEquals("placed directly", w.memory().getString(0));
    }

    @Test
    void aWrongKeyOrIdIsRefused() {
        start(8, 16L * PAGE);
        FabricWindow w = a.exportWindow(PAGE, REMOTE_READ);
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(w.id(), w.key() ^ 0x10)),
                "window " + w.id(), "not exported");
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(w.id(), 0)), "not exported");
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(w.id() + 1, w.key())), "not exported");
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(8, w.key())), "window id 8", "outside");
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(-1, w.key())), "window id -1");
        assertNotEquals(0, w.key());
    }

    @Test
    void aClosedWindowCannotBeOpenedAndPeersSeeItInvalid() {
        start(8, 16L * PAGE);
        FabricWindow w = a.exportWindow(PAGE, REMOTE_READ | REMOTE_WRITE);
        FabricWindow peer = b.openWindow(w.id(), w.key());
        w.close();
        assertFalse(w.isValid());
        assertFalse(peer.isValid(), "a peer learns the window was withdrawn");
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(w.id(), w.key())), "not exported");
        assertTrue(fabric.windows().isEmpty());
        peer.close();
        w.close(); // idempotent
    }

    @Test
    void aPeerClosingItsViewLeavesTheWindowExported() {
        start(8, 16L * PAGE);
        FabricWindow w = a.exportWindow(PAGE, REMOTE_READ);
        FabricWindow peer = b.openWindow(w.id(), w.key());
        peer.close();
        assertFalse(peer.isValid());
        assertTrue(w.isValid());
        assertEquals(1, fabric.windows().size());
        assertNotNull(b.openWindow(w.id(), w.key()));
    }

    @Test
    void aWindowWithoutRemoteWriteOpensReadOnly() {
        start(8, 16L * PAGE);
        FabricWindow w = a.exportWindow(PAGE, REMOTE_READ);
        w.memory().set(ValueLayout.JAVA_INT, 0, 77);
        FabricWindow peer = b.openWindow(w.id(), w.key());
        assertTrue(peer.memory().isReadOnly());
        assertEquals(77, peer.memory().get(ValueLayout.JAVA_INT, 0));
        assertThrows(IllegalArgumentException.class, () -> peer.memory().set(ValueLayout.JAVA_INT, 0, 1),
                "a read-only segment refuses writes");
        assertEquals(77, w.memory().get(ValueLayout.JAVA_INT, 0));
        assertFalse(w.memory().isReadOnly(), "the owner may always write its window");
    }

    @Test
    void aWindowWithoutRemoteAccessCannotBeOpened() {
        start(8, 16L * PAGE);
        FabricWindow w = a.exportWindow(PAGE, 0);
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(w.id(), w.key())), "grants no remote access");
        w.memory().set(ValueLayout.JAVA_INT, 0, 5); // private to its owner, still usable
    }

    @Test
    void badExportArgumentsAreRefused() {
        start(8, 16L * PAGE);
        assertMessage(assertThrows(FabricException.class, () -> a.exportWindow(0, REMOTE_READ)), "positive");
        assertMessage(assertThrows(FabricException.class, () -> a.exportWindow(-5, REMOTE_READ)), "positive");
        assertMessage(assertThrows(FabricException.class, () -> a.exportWindow(PAGE, 32)), "access flags 0x20");
        assertTrue(fabric.windows().isEmpty());
    }

    @Test
    void aNodesDirectoryIsFoundByOwnerAndIsUnique() {
        start(8, 16L * PAGE);
        assertNull(b.openDirectory(a.address()), "no directory exported yet");
        a.exportWindow(PAGE, REMOTE_READ); // an ordinary window is not a directory
        FabricWindow dir = a.exportWindow(PAGE, REMOTE_READ | FabricWindow.DIRECTORY);
        dir.memory().set(ValueLayout.JAVA_INT, 0, 42);
        FabricWindow seen = b.openDirectory(a.address());
        assertEquals(dir.id(), seen.id());
        assertEquals(42, seen.memory().get(ValueLayout.JAVA_INT, 0));
        assertMessage(assertThrows(FabricException.class, () -> a.exportWindow(PAGE, REMOTE_READ | FabricWindow.DIRECTORY)),
                "already exports a directory");
        dir.close();
        assertNull(b.openDirectory(a.address()), "withdrawn");
    }

    @Test
    void runningOutOfWindowSpaceIsAnError() {
        start(8, 4L * PAGE);
        FabricWindow first = a.exportWindow(3L * PAGE, REMOTE_READ);
        assertMessage(assertThrows(FabricException.class, () -> b.exportWindow(2L * PAGE, REMOTE_READ)),
                "no " + 2 * PAGE + " contiguous bytes", "window space");
        FabricWindow last = b.exportWindow(PAGE, REMOTE_READ);
        assertThrows(FabricException.class, () -> a.exportWindow(1, REMOTE_READ), "the space is full");
        assertThrows(FabricException.class, () -> a.exportWindow(5L * PAGE, REMOTE_READ), "larger than all the space");
        first.close();
        assertEquals(3L * PAGE, b.exportWindow(3L * PAGE, REMOTE_READ).length(), "freed space is reused");
        assertTrue(last.isValid());
    }

    @Test
    void runningOutOfWindowEntriesIsAnError() {
        start(2, 16L * PAGE);
        FabricWindow first = a.exportWindow(PAGE, REMOTE_READ);
        b.exportWindow(PAGE, REMOTE_READ);
        assertMessage(assertThrows(FabricException.class, () -> a.exportWindow(PAGE, REMOTE_READ)),
                "no free window entry", "all 2");
        first.close();
        FabricWindow again = a.exportWindow(PAGE, REMOTE_READ);
        assertEquals(first.id(), again.id(), "the freed entry is reused");
        assertNotEquals(first.key(), again.key(), "with a fresh key");
        assertThrows(FabricException.class, () -> b.openWindow(first.id(), first.key()), "the old key is stale");
    }

    @Test
    void aNewWindowFillsAHoleAndNeverShowsOldBytes() {
        start(8, 16L * PAGE);
        FabricWindow w0 = a.exportWindow(PAGE, REMOTE_READ);
        FabricWindow w1 = a.exportWindow(PAGE, REMOTE_READ);
        FabricWindow w2 = a.exportWindow(PAGE, REMOTE_READ);
        long hole = fabric.windows().stream().filter(i -> i.id() == w1.id()).findFirst().orElseThrow().offset();
        w1.memory().fill((byte) 0xEE);
        w1.close();
        FabricWindow fresh = b.exportWindow(PAGE, REMOTE_READ);
        WindowInfo info = fabric.windows().stream().filter(i -> i.id() == fresh.id()).findFirst().orElseThrow();
        assertEquals(hole, info.offset(), "first fit");
        assertEquals(1, info.owner());
        for (long i = 0; i < PAGE; i += 8) {
            assertEquals(0L, fresh.memory().get(ValueLayout.JAVA_LONG, i), "byte " + i + " of the new window");
        }
        // The windows do not overlap.
        List<WindowInfo> all = fabric.windows();
        for (WindowInfo x : all) {
            for (WindowInfo y : all) {
                if (x.id() != y.id()) {
                    assertTrue(x.offset() + x.length() <= y.offset() || y.offset() + y.length() <= x.offset(),
                            x + " overlaps " + y);
                }
            }
        }
        assertTrue(w0.isValid() && w2.isValid());
    }

    @Test
    void aNodesWindowsAreFreedWhenItCloses() {
        start(4, 5L * PAGE);
        FabricWindow w1 = a.exportWindow(2L * PAGE, REMOTE_READ | REMOTE_WRITE);
        FabricWindow w2 = a.exportWindow(2L * PAGE, REMOTE_READ);
        FabricWindow kept = b.exportWindow(1, REMOTE_READ);
        FabricWindow peer = b.openWindow(w1.id(), w1.key());
        assertThrows(FabricException.class, () -> b.exportWindow(PAGE, REMOTE_READ), "no room before the close");
        a.close();
        assertEquals(List.of(kept.id()), fabric.windows().stream().map(WindowInfo::id).toList());
        assertFalse(peer.isValid());
        assertFalse(w1.isValid());
        assertFalse(w2.isValid());
        assertThrows(FabricException.class, () -> b.openWindow(w1.id(), w1.key()));
        assertThrows(FabricException.class, () -> b.openWindow(w2.id(), w2.key()));
        assertEquals(2L * PAGE, b.exportWindow(2L * PAGE, REMOTE_READ).length(), "its space is free again");
        w1.close(); // closing an already reclaimed window is harmless
        assertTrue(kept.isValid());
    }

    @Test
    void spaceOfAClosedOwnerIsZeroedBeforeItIsExportedAgain() {
        start(8, 16L * PAGE);
        FabricWindow w = a.exportWindow(PAGE, REMOTE_READ | REMOTE_WRITE);
        MemorySegment peerBytes = b.openWindow(w.id(), w.key()).memory();
        peerBytes.set(ValueLayout.JAVA_INT, 0, 0xABCD);
        a.close();
        FabricWindow fresh = b.exportWindow(PAGE, REMOTE_READ);
        assertNotEquals(w.key(), fresh.key());
        assertEquals(0, peerBytes.get(ValueLayout.JAVA_INT, 0), "the reused space was zeroed for its new owner");
    }

    @Test
    void windowEntriesWithForeignBytesAreNeverFollowed() {
        start(4, 16L * PAGE);
        FabricWindow good = a.exportWindow(PAGE, REMOTE_READ | REMOTE_WRITE);
        FabricWindow victim = a.exportWindow(PAGE, REMOTE_READ | REMOTE_WRITE);
        long e = fabric.windowEntry(victim.id());
        // A range past the window area and an owner that is no node, as any process mapping the fabric can write.
        fabric.mem.set(java.lang.foreign.ValueLayout.JAVA_LONG, e + FabricLayout.W_OFFSET, 1L << 40);
        fabric.mem.set(java.lang.foreign.ValueLayout.JAVA_INT, e + FabricLayout.W_OWNER, 9999);
        assertMessage(assertThrows(FabricException.class, () -> b.openWindow(victim.id(), victim.key())), "foreign bytes");
        assertTrue(fabric.windows().stream().noneMatch(w -> w.id() == victim.id()), "the tools do not show it");
        assertTrue(b.openWindowsOf(0, REMOTE_READ).stream().noneMatch(w -> w.id() == victim.id()));
        assertTrue(fabric.corruptWindowEntries() > 0, "counted");
        // Two more exports fit: the entry with foreign bytes is taken back, and its bogus range holds no space.
        FabricWindow w2 = b.exportWindow(PAGE, REMOTE_READ);
        FabricWindow w3 = b.exportWindow(PAGE, REMOTE_READ);
        assertTrue(w2.id() == victim.id() || w3.id() == victim.id(), "the foreign entry is free again");
        assertEquals(good.id(), b.openWindow(good.id(), good.key()).id(), "a good window still opens");
    }
}
