package dev.nupa.roce.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.MemoryWindow;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.MwType;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/**
 * A bound memory window in the target's directory and guard window, as a direct requester sees it: an entry of its
 * own naming the region's fabric window with the bound range, and a stamp; invalidation withdraws both and waits for a
 * copy announced on it, as deregistration does. The requester caught mid-copy is a test node that announces a copy
 * ({@link VerbsDirectory#enter}) and does not end it.
 */
class WindowInvalidateDrainTest {

    private static void post(RcPair p, SendWorkRequest wr) {
        p.qb.postSend(wr.sendFlags(SendFlags.SIGNALED));
        p.fx.pump();
        RdmaFixture.assertStatus(WcStatus.SUCCESS, RdmaFixture.poll(p.cqB));
    }

    @Test
    void invalidationWithdrawsTheWindowsEntryAndWaitsForACopyOnIt() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.DIRECT, 1024);
            MemoryRegion mr = p.pdB.allocMr(64 * 1024, RcPair.ALL | Access.MW_BIND);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            post(p, new SendWorkRequest().opcode(WrOpcode.BIND_MW).bindMw(MemoryWindow.incRkey(mw.rkey()), mr, mr.addr() + 4096,
                    8192, Access.REMOTE_WRITE));
            int key = mw.rkey();

            FabricDevice requester = fx.fabric.attach(3);
            VerbsDirectory peer = VerbsDirectory.open(requester.openDirectory(2), requester);
            long e = peer.mrEntry(key);
            assertTrue(e >= 0, "the bound window has an entry");
            long region = peer.mrEntry(mr.rkey());
            assertEquals(peer.mrWindowId(region), peer.mrWindowId(e), "in the region's fabric window");
            assertEquals(mr.addr() + 4096, peer.mrAddr(e));
            assertEquals(8192, peer.mrLength(e));
            assertEquals(4096, peer.mrOffset(e));
            assertEquals(0, peer.mrOffset(region));
            assertEquals(Access.REMOTE_WRITE, peer.mrAccess(e));
            int slot = key >>> 8;
            int stamp = peer.stamp(slot);
            assertNotEquals(0, stamp);
            assertNotEquals(peer.stamp(mr.rkey() >>> 8), stamp, "a stamp of its own");
            assertTrue(peer.enter(slot, stamp), "a copy announced on the bound window");
            int windows = requester.openWindowsOf(2, 0).size();

            // LOCAL_INV waits while the requester's node is up, up to the heartbeat timeout, then completes.
            post(p, new SendWorkRequest().opcode(WrOpcode.LOCAL_INV).invalidate(key));
            assertEquals(1, p.b.counter(RdmaCounter.DEREG_DRAIN_TIMEOUTS));
            assertEquals(-1, peer.mrEntry(key), "withdrawn from the directory");
            assertEquals(0, peer.stamp(slot), "its stamp cleared");
            assertFalse(mw.bound());

            mr.close(); // the window's copy still holds the region's fabric window: held back
            assertEquals(windows, requester.openWindowsOf(2, 0).size(), "the region's window is still exported");
            peer.leave();
            assertFalse(peer.enter(slot, stamp), "a copy announced after the invalidation is refused");
            fx.now += 200 * RdmaFixture.MS; // held-back windows are looked at ten times a second
            p.b.poll(fx.now);
            assertEquals(windows - 1, requester.openWindowsOf(2, 0).size(), "the region's window closed once the copy ended");
            requester.close();
        }
    }

    @Test
    void aWindowWithNoCopyInFlightIsInvalidatedAtOnceAndItsRegionsWindowClosesOnDeregistration() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.DIRECT, 1024);
            MemoryRegion mr = p.pdB.allocMr(64 * 1024, RcPair.ALL | Access.MW_BIND);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            post(p, new SendWorkRequest().opcode(WrOpcode.BIND_MW).bindMw(MemoryWindow.incRkey(mw.rkey()), mr, mr.addr(), 4096,
                    Access.REMOTE_WRITE));
            FabricDevice reader = fx.fabric.attach(3);
            int windows = reader.openWindowsOf(2, 0).size();
            post(p, new SendWorkRequest().opcode(WrOpcode.LOCAL_INV).invalidate(mw.rkey()));
            assertEquals(0, p.b.counter(RdmaCounter.DEREG_DRAIN_TIMEOUTS));
            assertEquals(windows, reader.openWindowsOf(2, 0).size(), "invalidation closes no fabric window");
            mr.close();
            assertEquals(windows - 1, reader.openWindowsOf(2, 0).size());
            reader.close();
        }
    }
}
