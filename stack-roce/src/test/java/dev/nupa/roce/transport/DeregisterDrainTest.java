package dev.nupa.roce.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.RdmaCounter;
import org.junit.jupiter.api.Test;

/**
 * Deregistration against a requester caught mid-copy, played by a test node that announces a copy in the target's
 * guard window ({@link VerbsDirectory#enter}) and does not end it: the region's window is held back, its memory and
 * slot not handed out again, until the copy ends; a copy announced after the withdrawal is refused.
 */
class DeregisterDrainTest {
    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;

    private static int windowsOf(FabricDevice reader, int owner) {
        return reader.openWindowsOf(owner, 0).size();
    }

    /** Node {@code requester} announces a copy into {@code mr} (of node 2) and does not end it; returns its view. */
    private static VerbsDirectory copyUnderWay(FabricDevice requester, MemoryRegion mr) {
        VerbsDirectory peer = VerbsDirectory.open(requester.openDirectory(2), requester);
        assertNotNull(peer, "the target's directory and guard window");
        int slot = mr.rkey() >>> 8;
        assertNotEquals(0, peer.stamp(slot));
        assertTrue(peer.enter(slot, peer.stamp(slot)), "a copy announced on a live registration");
        return peer;
    }

    @Test
    void aRegionAStalledCopyStillNamesIsHeldBackUntilTheCopyEnds() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext b = fx.node(2);
            ProtectionDomain pd = b.allocPd();
            MemoryRegion mr = pd.allocMr(4096, ACCESS);
            FabricDevice requester = fx.fabric.attach(3);
            VerbsDirectory peer = copyUnderWay(requester, mr);
            int slot = mr.rkey() >>> 8;
            int stamp = peer.stamp(slot);
            int windows = windowsOf(requester, 2);

            mr.close(); // waits while the requester's node is up, up to the heartbeat timeout, then holds the window back
            assertEquals(1, b.counter(RdmaCounter.DEREG_DRAIN_TIMEOUTS));
            assertEquals(windows, windowsOf(requester, 2), "the region's window is still exported");
            MemoryRegion next = pd.allocMr(4096, ACCESS);
            assertNotEquals(mr.addr(), next.addr(), "the held-back memory is not handed out again");
            assertNotEquals(slot, next.rkey() >>> 8, "the held-back slot is not reused");

            peer.leave();
            assertFalse(peer.enter(slot, stamp), "a copy announced after the withdrawal is refused");
            b.poll(fx.now);
            assertEquals(windows, windowsOf(requester, 2), "the held-back window closed once the copy ended, the new one open");
            requester.close();
        }
    }

    @Test
    void aCopyAnnouncedByANodeThatIsGoneIsNotWaitedForAndItsWindowIsHeldBack() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext b = fx.node(2);
            ProtectionDomain pd = b.allocPd();
            MemoryRegion mr = pd.allocMr(4096, ACCESS);
            FabricDevice requester = fx.fabric.attach(3);
            copyUnderWay(requester, mr);
            requester.close(); // died mid-copy: its busy word stays

            mr.close();
            assertEquals(1, b.counter(RdmaCounter.DEREG_DRAIN_TIMEOUTS));
            FabricDevice reader = fx.fabric.attach(1);
            int held = windowsOf(reader, 2);
            b.poll(fx.now);
            assertEquals(held, windowsOf(reader, 2), "still held: the dead node's word never clears");
            assertTrue(reader.openWindowsOf(2, FabricWindow.REMOTE_WRITE).size() >= 2, "the held window and the guard window");
            reader.close();
        }
    }
}
