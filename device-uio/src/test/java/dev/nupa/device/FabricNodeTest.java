package dev.nupa.device;

import static dev.nupa.device.FabricDevice.DETACHED;
import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricDevice.PEER_DOWN;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;

import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricFixture.Collector;

/** Attaching, detaching, generations, and sends to nodes that are not there. */
class FabricNodeTest {
    private final FabricFixture fx = new FabricFixture();
    private Fabric fabric;

    @BeforeEach
    void setUp() {
        fabric = fx.create(FabricFixture.small());
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private NodeInfo info(int address) {
        return fabric.nodes().stream().filter(n -> n.address() == address).findFirst().orElseThrow();
    }

    @Test
    void attachMarksTheEntryUp() {
        assertTrue(fabric.nodes().isEmpty(), "a new fabric lists no nodes");
        FabricNode a = fx.attach(fabric, 2);
        assertEquals(2, a.address());
        assertEquals(1, a.generation());
        assertEquals(FabricFixture.small(), a.geometry());
        NodeInfo i = info(2);
        assertEquals("UP", i.state());
        assertEquals(1, i.generation());
        assertEquals(ProcessHandle.current().pid(), i.pid());
        assertTrue(i.joinedMillis() > 0);
        assertTrue(a.isUp(2));
        assertFalse(a.isUp(1));
    }

    @Test
    void sendingToANodeThatIsNotUpReturnsPeerDown() {
        FabricNode a = fx.attach(fabric, 0);
        assertEquals(PEER_DOWN, send(a, 3, "nobody"));
        assertEquals(PEER_DOWN, a.tryClaim(3, 10, new FrameClaim()));
        assertEquals(2, a.counters().sendsToDownPeers());
        assertEquals(0, a.counters().framesSent());
        FabricNode b = fx.attach(fabric, 3);
        assertEquals(0, b.poll(new Collector(), 10), "nothing was queued for it");
        assertEquals(OK, send(a, 3, "now"));
        b.close();
        assertEquals(PEER_DOWN, send(a, 3, "gone"));
        assertEquals(3, a.counters().sendsToDownPeers());
    }

    @Test
    void closeFreesTheAddressAndAReattachGetsTheNextGeneration() {
        FabricNode a = fx.attach(fabric, 0);
        FabricNode b = fx.attach(fabric, 1);
        int gen = b.generation();
        b.close();
        assertEquals("FREE", info(1).state());
        assertEquals(gen, info(1).generation(), "a freed entry keeps its generation");
        assertFalse(a.isUp(1));
        FabricNode again = fx.attach(fabric, 1);
        assertEquals(gen + 1, again.generation());
        assertEquals("UP", info(1).state());
        again.close();
        assertEquals(gen + 2, fx.attach(fabric, 1).generation());
    }

    @Test
    void framesQueuedForAClosedNodeAreNotSeenByItsNextIncarnation() {
        FabricNode a = fx.attach(fabric, 0);
        FabricNode b = fx.attach(fabric, 1);
        for (int i = 0; i < 5; i++) {
            assertEquals(OK, send(a, 1, "old-" + i));
        }
        b.close();
        assertEquals(0, info(1).ringOccupancy(), "closing drains the node's rings");
        FabricNode b2 = fx.attach(fabric, 1);
        Collector c = new Collector();
        assertEquals(0, b2.poll(c, 100));
        assertEquals(OK, send(a, 1, "new"));
        assertEquals(1, b2.poll(c, 100));
        assertEquals(List.of("new"), c.texts());
        // The ring is usable to its full capacity again.
        for (int i = 0; i < 8; i++) {
            assertEquals(OK, send(a, 1, "fill-" + i));
        }
        assertEquals(FabricDevice.BACK_PRESSURED, send(a, 1, "over"));
    }

    @Test
    void aClosedNodeIsDetached() {
        FabricNode a = fx.attach(fabric, 0);
        FabricNode b = fx.attach(fabric, 1);
        send(b, 0, "pending");
        a.close();
        a.close(); // idempotent
        assertEquals(DETACHED, send(a, 1, "x"));
        assertEquals(DETACHED, a.tryClaim(1, 1, new FrameClaim()));
        assertEquals(0, a.poll(new Collector(), 10));
        assertFalse(a.awaitFrames(FabricFixture.MS));
        FabricException e = assertThrows(FabricException.class, () -> a.exportWindow(4096, FabricWindow.REMOTE_READ));
        assertTrue(e.getMessage().contains("detached"), e.getMessage());
        assertThrows(FabricException.class, () -> a.publishAttributes(FabricFixture.seg("x")));
        assertEquals(OK, send(b, 1, "b still works"));
        assertEquals(1, b.poll(new Collector(), 10));
    }

    @Test
    void addressesOutsideTheFabricAreRefused() {
        for (int bad : new int[] {-1, 4, 1000}) {
            FabricException e = assertThrows(FabricException.class, () -> fabric.attach(bad));
            assertTrue(e.getMessage().contains("node address " + bad), e.getMessage());
            assertTrue(e.getMessage().contains("outside 0..3"), e.getMessage());
        }
        assertTrue(fabric.nodes().isEmpty());
        FabricNode a = fx.attach(fabric, 0);
        FabricException e = assertThrows(FabricException.class, () -> send(a, 4, "x"));
        assertTrue(e.getMessage().contains("node address 4"), e.getMessage());
        assertThrows(FabricException.class, () -> a.tryClaim(-1, 1, new FrameClaim()));
        assertThrows(FabricException.class, () -> a.isUp(4));
        assertThrows(FabricException.class, () -> a.readAttributes(4, java.lang.foreign.MemorySegment.ofArray(new byte[8])));
        assertEquals(0, a.counters().sendsToDownPeers());
    }

    @Test
    void anAddressHeldByALiveNodeIsRefused() {
        FabricNode a = fx.attach(fabric, 1);
        FabricException e = assertThrows(FabricException.class, () -> fabric.attach(1));
        assertTrue(e.getMessage().contains("node address 1"), e.getMessage());
        assertTrue(e.getMessage().contains("taken by a live node"), e.getMessage());
        assertTrue(e.getMessage().contains("generation " + a.generation()), e.getMessage());
        // The holder is untouched.
        assertEquals("UP", info(1).state());
        assertEquals(a.generation(), info(1).generation());
        FabricNode b = fx.attach(fabric, 0);
        assertEquals(OK, send(b, 1, "still here"));
        assertEquals(1, a.poll(new Collector(), 10));
        // Also through a second mapping of the same file.
        Fabric other = fx.join();
        assertThrows(FabricException.class, () -> other.attach(1));
    }

    @Test
    void attachAnyTakesTheLowestFreeAddress() {
        fx.attach(fabric, 0);
        fx.attach(fabric, 2);
        assertEquals(1, fx.track(fabric.attachAny()).address());
        assertEquals(3, fx.track(fabric.attachAny()).address());
        FabricException e = assertThrows(FabricException.class, fabric::attachAny);
        assertTrue(e.getMessage().contains("no free node address"), e.getMessage());
    }

    @Test
    void nodesOnDifferentMappingsTalk() {
        Fabric other = fx.join();
        FabricNode a = fx.attach(fabric, 0);
        FabricNode b = fx.attach(other, 1);
        assertTrue(a.isUp(1));
        assertTrue(b.isUp(0));
        assertEquals(OK, send(a, 1, "across mappings"));
        Collector c = new Collector();
        assertEquals(1, b.poll(c, 10));
        assertEquals("across mappings", c.frames.getFirst().text());
    }
}
