package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The observer table in the fabric header (docs/fabric-layout.md 12.1), and a node's handling of its slots. */
@Tag("process")
class ObserverTableTest {
    final FabricFixture fx = new FabricFixture();
    final Path stray = Path.of("/dev/shm/nupa-test-observer-" + UUID.randomUUID());

    @AfterEach
    void close() throws Exception {
        fx.close();
        Files.deleteIfExists(stray);
    }

    static long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        return p.pid();
    }

    /** Writes slot {@code i} by hand, as a foreign or dead process would have left it. */
    static void forge(Fabric f, int i, long pid, int state, byte[] path, int pathLength, int... nodes) {
        long s = ObserverTable.slot(i);
        f.mem.set(ValueLayout.JAVA_LONG, s + ObserverTable.O_HOST_ID, Fabric.HOST_ID);
        f.mem.asSlice(s + ObserverTable.O_PATH, ObserverTable.PATH_BYTES).fill((byte) 0);
        MemorySegment.copy(MemorySegment.ofArray(path), 0, f.mem, s + ObserverTable.O_PATH,
                Math.min(path.length, ObserverTable.PATH_BYTES));
        f.mem.set(ValueLayout.JAVA_INT, s + ObserverTable.O_PATH_LENGTH, pathLength);
        for (int a : nodes) {
            f.mem.set(ValueLayout.JAVA_BYTE, s + ObserverTable.O_NODES + a / 8, (byte) (1 << (a % 8)));
        }
        f.mem.set(ValueLayout.JAVA_LONG, s + ObserverTable.O_WORD, ObserverTable.word(pid, 1, state));
    }

    @Test
    void claimFillsASlotThatToolsListAndReleaseFreesIt() {
        Fabric f = fx.create(FabricFixture.small());
        long epoch = f.epoch();
        try (CaptureObserver o = CaptureObserver.start(f, new int[] {1, 3}, 4096, 256)) {
            assertTrue(Files.exists(o.file()));
            assertTrue(f.epoch() > epoch, "a claim moves the epoch");
            List<ObserverTable.Observer> list = ObserverTable.list(f);
            assertEquals(1, list.size());
            assertEquals(ProcessHandle.current().pid(), list.get(0).pid());
            assertEquals(o.file().toString(), list.get(0).file());
            assertEquals(List.of(1, 3), list.get(0).nodes());
            assertTrue(o.holdsSlot());
        }
        assertEquals(List.of(), ObserverTable.list(f));
        assertEquals(ObserverTable.FREE, ObserverTable.state(ObserverTable.load(f.mem, 0)));
    }

    @Test
    void aNodeAttachesToAnObserverThatNamesItAndLetsGoWhenItLeaves() {
        Fabric f = fx.create(FabricFixture.small());
        FabricNode n1 = fx.attach(f, 1);
        CaptureObserver o = CaptureObserver.start(f, new int[] {1}, 4096, 256);
        FabricFixture.waitUntil("node 1 attaches", () -> o.attached(0) == n1.generation());
        assertEquals(1, n1.captureObservers());
        o.close();
        FabricFixture.waitUntil("node 1 lets go", () -> n1.captureObservers() == 0);
        assertFalse(Files.exists(o.file()));
    }

    @Test
    void aDeadObserversSlotIsFreedAndItsFileRemovedByANode() throws Exception {
        Fabric f = fx.create(FabricFixture.small());
        Files.write(stray, new byte[] {1});
        forge(f, 2, deadPid(), ObserverTable.ACTIVE, stray.toString().getBytes(StandardCharsets.US_ASCII),
                stray.toString().length(), 1);
        fx.attach(f, 1);
        FabricFixture.waitUntil("a node frees the dead observer's slot",
                () -> ObserverTable.state(ObserverTable.load(f.mem, 2)) == ObserverTable.FREE);
        assertFalse(Files.exists(stray), "the dead observer's capture file is removed");
    }

    @Test
    void aLiveObserversSlotIsNotFreed() throws Exception {
        Fabric f = fx.create(FabricFixture.small());
        forge(f, 0, ProcessHandle.current().pid(), ObserverTable.ACTIVE, "/dev/shm/x".getBytes(StandardCharsets.US_ASCII), 10, 3);
        long before = ObserverTable.load(f.mem, 0);
        assertFalse(ObserverTable.reclaimIfDead(f, 0));
        assertEquals(before, ObserverTable.load(f.mem, 0));
    }

    @Test
    void garbageInASlotIsNeverOpened() throws Exception {
        Fabric f = fx.create(FabricFixture.small());
        long me = ProcessHandle.current().pid();
        Path link = Path.of("/dev/shm/nupa-test-observer-link-" + UUID.randomUUID());
        Files.createSymbolicLink(link, Path.of("/etc/hostname"));
        try {
            String[] paths = {"/etc/passwd", "/dev/shm/../etc/passwd", "/dev/shm/", "/dev/shm/a/b", link.toString()};
            FabricNode n1 = fx.attach(f, 1);
            for (int k = 0; k < paths.length; k++) {
                byte[] p = paths[k].getBytes(StandardCharsets.US_ASCII);
                forge(f, k, me, ObserverTable.ACTIVE, p, p.length, 1);
            }
            byte[] p = "/dev/shm/nupa-x".getBytes(StandardCharsets.US_ASCII);
            forge(f, 5, me, ObserverTable.ACTIVE, p, 200, 1); // a length past the field
            forge(f, 6, me, ObserverTable.ACTIVE, p, 4, 1); // a length that leaves no NUL after the name
            forge(f, 7, me, 77, p, p.length, 1); // no state at all
            for (int k = 0; k < 4; k++) {
                assertNull(ObserverTable.path(f.mem, k), paths[k]);
            }
            assertEquals(link.toString(), ObserverTable.path(f.mem, 4), "a valid name: the file itself is checked");
            assertNull(ObserverTable.path(f.mem, 5));
            assertNull(ObserverTable.path(f.mem, 6));
            n1.checkObservers();
            assertEquals(0, n1.captureObservers());
            assertNotNull(n1.captureRefusal());
            assertEquals("/etc/hostname", Files.readSymbolicLink(link).toString());
            assertEquals(List.of(), ObserverTable.list(f).stream().filter(o -> o.file() != null && !o.file().equals(link.toString())).toList());
            for (int k = 0; k < 7; k++) {
                assertNotEquals(ObserverTable.FREE, ObserverTable.state(ObserverTable.load(f.mem, k)), "a live pid's slot stays");
            }
        } finally {
            Files.deleteIfExists(link);
        }
    }

    @Test
    void aFileOfTheWrongShapeIsRefused() throws Exception {
        Fabric f = fx.create(FabricFixture.small());
        Files.write(stray, new byte[8192]); // no capture header
        FabricNode n1 = fx.attach(f, 1);
        byte[] p = stray.toString().getBytes(StandardCharsets.US_ASCII);
        forge(f, 0, ProcessHandle.current().pid(), ObserverTable.ACTIVE, p, p.length, 1);
        n1.checkObservers();
        assertEquals(0, n1.captureObservers());
        assertTrue(n1.captureRefusal().contains("no capture header"), n1.captureRefusal());
    }
}
