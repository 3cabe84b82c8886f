package dev.nupa.device;

import static dev.nupa.device.FabricDevice.DETACHED;
import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.nupa.device.FabricFixture.Collector;

/**
 * What a foreign hand can do to a live node's part of the fabric: random bytes over its own table entry (it writes
 * its entry back and stays reachable), and its fabric file truncated, removed or replaced under it (it stops
 * cleanly: nothing more touches the mapping, listeners hear why, and close returns).
 */
@Timeout(30)
class HostileEntryTest {
    private final FabricFixture fx = new FabricFixture();

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void aNodeWritesItsOwnEntryBackOverRandomBytesAndStaysReachable() {
        Fabric fabric = fx.create(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        FabricNode b = fx.attach(fabric, 1);
        MemorySegment attrs = MemorySegment.ofArray("attributes of b".getBytes());
        b.publishAttributes(attrs);
        long entry = fabric.nodeOffset(1);
        byte[] junk = new byte[(int) FabricLayout.N_ATTR_VERSION + 64];
        new Random(42).nextBytes(junk);
        junk[0] = 7; // a state no node writes (random bytes are one with odds of 2^32 to 4)
        MemorySegment.copy(junk, 0, fabric.mem, ValueLayout.JAVA_BYTE, entry, junk.length);

        FabricFixture.waitUntil("b's entry written back", () -> fabric.stateWord(1) == Fabric.word(FabricLayout.STATE_UP, b.generation())
                && b.entryRepairs() >= 2);
        assertFalse(b.isEvicted(), "a foreign state word is not a peer's reclaim");
        assertEquals(ProcessHandle.current().pid(), fabric.mem.get(ValueLayout.JAVA_LONG, entry + FabricLayout.N_PID));
        MemorySegment back = MemorySegment.ofArray(new byte[(int) attrs.byteSize()]);
        FabricFixture.waitUntil("b's attributes written back", () -> a.readAttributes(1, back) && back.mismatch(attrs) < 0);
        FabricFixture.waitUntil("a sees b up", () -> a.isUp(1));
        assertEquals(OK, send(a, 1, "still here"));
        Collector c = new Collector();
        FabricFixture.waitUntil("the frame arrives", () -> b.poll(c, 10) > 0 || !c.frames.isEmpty());
        assertEquals("still here", c.frames.getLast().text());
    }

    @Test
    void anEntryWithForeignBytesIsAbsentFromTheSnapshots() {
        Fabric fabric = fx.create(FabricFixture.small()); // no node yet, so no liveness takes the entry back meanwhile
        byte[] junk = new byte[FabricLayout.NODE_BYTES];
        new Random(3).nextBytes(junk);
        junk[0] = 5; // no node writes state 5
        MemorySegment.copy(junk, 0, fabric.mem, ValueLayout.JAVA_BYTE, fabric.nodeOffset(3), junk.length);
        assertEquals(java.util.List.of(3), fabric.corruptEntries());
        assertEquals(java.util.List.of(), fabric.nodes(), "absent from the snapshot the tools print: never a source of numbers");
        fx.attach(fabric, 0);
        FabricFixture.waitUntil("a node's liveness takes the entry back, as a dead node's",
                () -> fabric.corruptEntries().isEmpty() && Fabric.state(fabric.stateWord(3)) == FabricLayout.STATE_FREE);
    }

    @Test
    void aNodeWhoseFileShrinksStopsAndSaysWhy() throws Exception {
        Fabric fabric = fx.create(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = new LinkedBlockingQueue<>();
        a.addPeerListener(events::add);
        long size = Files.size(fx.path);
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.setLength(4096);
        }
        FabricFixture.waitUntil("the node notices", () -> a.lostReason() != null);
        assertEquals("fabric file " + fx.path + " shrank from " + size + " to 4096 bytes", a.lostReason());
        assertTrue(events.stream().anyMatch(e -> e.kind() == PeerEvent.Kind.EVICTED && e.address() == 0), events.toString());
        assertEquals(DETACHED, send(a, 0, "into lost memory"), "nothing touches the mapping any more");
        assertEquals(0, a.poll(new Collector(), 10));
        a.close(); // returns, and leaves the lost memory alone
    }

    @Test
    void aNodeWhoseFileIsRemovedOrReplacedStops() throws Exception {
        Fabric fabric = fx.create(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        Files.delete(fx.path);
        FabricFixture.waitUntil("the node notices the removal", () -> a.lostReason() != null);
        assertEquals("fabric file " + fx.path + " was removed", a.lostReason());

        Fabric second = fx.create(FabricFixture.small());
        FabricNode b = fx.attach(second, 0);
        java.nio.file.Path other = fx.path.resolveSibling(fx.path.getFileName() + ".other");
        Files.copy(fx.path, other);
        Files.move(other, fx.path, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        FabricFixture.waitUntil("the node notices the replacement", () -> b.lostReason() != null);
        assertEquals("fabric file " + fx.path + " was replaced by another file", b.lostReason());
    }

    @Test
    void aFaultOnTheMappingIsSurvivableForTheLoop() throws Exception {
        Fabric fabric = fx.create(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        try (RandomAccessFile f = new RandomAccessFile(fx.path.toFile(), "rw")) {
            f.setLength(4096);
        }
        InternalError fault = null;
        try {
            fabric.mem.get(ValueLayout.JAVA_LONG, fabric.ringOffset(0, 0));
        } catch (InternalError e) {
            fault = e;
        }
        assertTrue(fault != null && DatapathErrors.survivable(fault), "a SIGBUS on the mapping reaches Java as " + fault
                + " and a datapath loop goes on from it");
        FabricFixture.waitUntil("the node notices", () -> a.lostReason() != null);
    }
}
