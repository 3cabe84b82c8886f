package dev.nupa.device;

import static dev.nupa.device.FabricDevice.DETACHED;
import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.MS;
import static dev.nupa.device.FabricFixture.awaitEvent;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.nupa.device.PeerEvent.Kind;

/** Heartbeats, peer events, eviction, and the reclaiming of dead nodes, all in one JVM. */
@Timeout(30)
@Tag("process")
class LivenessTest {
    private final FabricFixture fx = new FabricFixture();
    private Fabric fabric;

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private Fabric start(FabricGeometry g) {
        fabric = fx.create(g);
        return fabric;
    }

    private static BlockingQueue<PeerEvent> listen(FabricNode node) {
        BlockingQueue<PeerEvent> q = new LinkedBlockingQueue<>();
        node.addPeerListener(q::add);
        return q;
    }

    private static PeerEvent expect(BlockingQueue<PeerEvent> q, Kind kind, int address) {
        List<PeerEvent> skipped = new ArrayList<>();
        PeerEvent e = awaitEvent(q, ev -> ev.kind() == kind && ev.address() == address, skipped);
        return e;
    }

    /** Writes a node table entry as if a node (maybe in another process or host) held the address. */
    private void fakeNode(int address, int generation, long hostId, long pid) {
        long n = fabric.nodeOffset(address);
        fabric.mem.set(ValueLayout.JAVA_LONG, n + FabricLayout.N_PID, pid);
        fabric.mem.set(ValueLayout.JAVA_LONG, n + FabricLayout.N_HOST_ID, hostId);
        fabric.mem.set(ValueLayout.JAVA_LONG, n + FabricLayout.N_HEARTBEAT, 1L);
        setState(address, FabricLayout.STATE_UP, generation);
    }

    private void setState(int address, int state, int generation) {
        FabricLayout.LONG.setRelease(fabric.mem, fabric.nodeOffset(address) + FabricLayout.N_STATE,
                Fabric.word(state, generation));
    }

    private static long deadPid() throws Exception {
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        return p.pid();
    }

    private NodeInfo info(int address) {
        return fabric.nodes().stream().filter(n -> n.address() == address).findFirst().orElseThrow();
    }

    @Test
    void aListenerSeesPeersComeUpAndGoDown() {
        start(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = listen(a);
        FabricNode b = fx.attach(fabric, 1);
        assertEquals(new PeerEvent(Kind.UP, 1, b.generation()), expect(events, Kind.UP, 1));
        b.close();
        assertEquals(new PeerEvent(Kind.DOWN, 1, b.generation()), expect(events, Kind.DOWN, 1));
        FabricNode b2 = fx.attach(fabric, 1);
        assertEquals(new PeerEvent(Kind.UP, 1, b.generation() + 1), expect(events, Kind.UP, 1));
        assertEquals(b.generation() + 1, b2.generation());
        assertTrue(events.stream().noneMatch(e -> e.address() == 0), "a node never reports itself: " + events);
    }

    @Test
    void peersAlreadyUpAreReportedOnTheFirstHeartbeat() {
        // A slow heartbeat, so the listener is surely added before the first one.
        start(FabricFixture.small().withTimeouts(200 * MS, 2_000 * MS, 10_000 * MS));
        FabricNode b = fx.attach(fabric, 1);
        FabricNode c = fx.attach(fabric, 3);
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = listen(a);
        assertEquals(new PeerEvent(Kind.UP, 1, b.generation()), expect(events, Kind.UP, 1));
        assertEquals(new PeerEvent(Kind.UP, 3, c.generation()), expect(events, Kind.UP, 3));
    }

    @Test
    void heartbeatsAdvance() throws Exception {
        start(FabricFixture.small());
        fx.attach(fabric, 2);
        long first = fabric.heartbeat(2);
        FabricFixture.waitUntil("the heartbeat moves", () -> fabric.heartbeat(2) > first + 2);
    }

    @Test
    void aReclaimedNodeIsEvictedAndItsSendsAreDetached() {
        start(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> aEvents = listen(a);
        FabricNode b = fx.attach(fabric, 1);
        BlockingQueue<PeerEvent> bEvents = listen(b);
        expect(aEvents, Kind.UP, 1);
        assertEquals(OK, send(b, 0, "before"));
        FabricWindow window = b.exportWindow(FabricLayout.PAGE, FabricWindow.REMOTE_READ);

        assertTrue(fabric.reclaim(1, fabric.stateWord(1)), "the test takes B's entry away");

        assertEquals(new PeerEvent(Kind.EVICTED, 1, b.generation()), expect(bEvents, Kind.EVICTED, 1));
        assertEquals(DETACHED, send(b, 0, "after"));
        assertEquals(DETACHED, b.tryClaim(0, 4, new FrameClaim()));
        assertEquals(0, b.poll(new FabricFixture.Collector(), 10));
        assertFalse(b.awaitFrames(MS));
        FabricException e = assertThrows(FabricException.class, () -> b.exportWindow(FabricLayout.PAGE, 0));
        assertTrue(e.getMessage().contains("evicted"), e.getMessage());
        assertFalse(window.isValid(), "its windows were reclaimed");
        assertEquals(new PeerEvent(Kind.DOWN, 1, b.generation()), expect(aEvents, Kind.DOWN, 1));

        b.close();
        assertEquals("FREE", info(1).state());
        assertEquals(b.generation() + 1, fx.attach(fabric, 1).generation());
        FabricFixture.Collector c = new FabricFixture.Collector();
        assertEquals(1, a.poll(c, 10));
        assertEquals(List.of("before"), c.texts());
    }

    @Test
    void reclaimOnlyWinsFromTheWordItSaw() {
        start(FabricFixture.small());
        FabricNode b = fx.attach(fabric, 1);
        long stale = Fabric.word(FabricLayout.STATE_UP, b.generation() - 1);
        assertFalse(fabric.reclaim(1, stale), "a reclaimer with an old word loses");
        assertEquals("UP", info(1).state());
        assertTrue(b.isUp(1));
    }

    @Test
    void aPeerRestartedBetweenHeartbeatsIsReportedRestarted() {
        assumeTrue(Fabric.HOST_ID != 0, "needs a host id to mark the fake node alive");
        start(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = listen(a);
        // A node of this very process: provably alive, so never reclaimed by the watcher.
        fakeNode(3, 5, Fabric.HOST_ID, ProcessHandle.current().pid());
        assertEquals(new PeerEvent(Kind.UP, 3, 5), expect(events, Kind.UP, 3));
        setState(3, FabricLayout.STATE_UP, 6);
        assertEquals(new PeerEvent(Kind.RESTARTED, 3, 6), expect(events, Kind.RESTARTED, 3));
        setState(3, FabricLayout.STATE_FREE, 6);
        assertEquals(new PeerEvent(Kind.DOWN, 3, 6), expect(events, Kind.DOWN, 3));
    }

    @Test
    void aWatcherReclaimsAForeignNodeWhoseHeartbeatStoodStill() {
        start(FabricFixture.small().withTimeouts(10 * MS, 500 * MS, 10_000 * MS));
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = listen(a);
        fakeNode(3, 5, Fabric.HOST_ID + 1, 1);
        assertEquals(new PeerEvent(Kind.UP, 3, 5), expect(events, Kind.UP, 3));
        // Frames queued for it are discarded when it is reclaimed. (Sent right after UP, well within the 500 ms timeout.)
        assertEquals(OK, send(a, 3, "lost 1"));
        assertEquals(OK, send(a, 3, "lost 2"));
        assertEquals(new PeerEvent(Kind.DOWN, 3, 5), expect(events, Kind.DOWN, 3));
        NodeInfo i = info(3);
        assertEquals("FREE", i.state());
        assertEquals(5, i.generation());
        assertEquals(0, i.ringOccupancy());
        assertEquals(2, i.counters().discarded());
        assertEquals(FabricDevice.PEER_DOWN, send(a, 3, "too late"));
    }

    @Test
    void aWatcherReclaimsANodeOfThisHostWhoseProcessIsGone() throws Exception {
        assumeTrue(Fabric.HOST_ID != 0, "needs a host id to tell a dead process");
        // A long heartbeat timeout: only the dead process can explain a fast reclaim.
        start(FabricFixture.small().withTimeouts(10 * MS, 60_000 * MS, 10_000 * MS));
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = listen(a);
        // Written without the epoch bump a real join makes, so the reclaim may come before any scan saw it UP:
        // the reclaimer reports it UP and then DOWN all the same.
        fakeNode(2, 9, Fabric.HOST_ID, deadPid());
        assertEquals(new PeerEvent(Kind.UP, 2, 9), expect(events, Kind.UP, 2));
        assertEquals(new PeerEvent(Kind.DOWN, 2, 9), expect(events, Kind.DOWN, 2));
        assertEquals("FREE", info(2).state());
    }

    @Test
    void aLiveButSilentNodeOfThisHostIsNotReclaimed() throws Exception {
        assumeTrue(Fabric.HOST_ID != 0, "needs a host id to tell a live process");
        start(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> events = listen(a);
        // Our own pid, heartbeat never moving: like a SIGSTOPped process.
        fakeNode(2, 4, Fabric.HOST_ID, ProcessHandle.current().pid());
        expect(events, Kind.UP, 2);
        Thread.sleep(400); // four heartbeat timeouts
        assertEquals("UP", info(2).state());
        assertTrue(events.stream().noneMatch(e -> e.kind() == Kind.DOWN), "no DOWN: " + events);
    }

    @Test
    void attachTakesOverAnEntryWhoseProcessIsGone() throws Exception {
        assumeTrue(Fabric.HOST_ID != 0, "needs a host id to tell a dead process");
        start(FabricFixture.small().withTimeouts(10 * MS, 60_000 * MS, 10_000 * MS));
        FabricNode a = fx.attach(fabric, 0);
        fakeNode(1, 7, Fabric.HOST_ID, deadPid());
        assertEquals(OK, send(a, 1, "to the dead"));
        FabricNode b = fx.attach(fabric, 1);
        assertEquals(8, b.generation(), "a restarted node comes back with the next generation");
        assertEquals(0, b.poll(new FabricFixture.Collector(), 10), "the dead node's frames are not delivered");
    }

    @Test
    void attachTakesOverAForeignEntryAfterTheHeartbeatTimeout() {
        start(FabricFixture.small());
        fakeNode(1, 3, Fabric.HOST_ID + 1, 12345);
        FabricNode b = fx.attach(fabric, 1);
        assertEquals(4, b.generation());
        assertEquals("UP", info(1).state());
        assertEquals(ProcessHandle.current().pid(), info(1).pid());
    }

    @Test
    void aListenerThatThrowsDoesNotStopOthers() {
        start(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        a.addPeerListener(e -> {
            throw new IllegalStateException("listener bug");
        });
        BlockingQueue<PeerEvent> events = listen(a);
        FabricNode b = fx.attach(fabric, 1);
        expect(events, Kind.UP, 1);
        b.close();
        expect(events, Kind.DOWN, 1);
    }

    @Test
    void aRemovedListenerHearsNothingMore() throws Exception {
        start(FabricFixture.small());
        FabricNode a = fx.attach(fabric, 0);
        BlockingQueue<PeerEvent> removed = new LinkedBlockingQueue<>();
        PeerListener l = removed::add;
        a.addPeerListener(l);
        BlockingQueue<PeerEvent> kept = listen(a);
        a.removePeerListener(l);
        fx.attach(fabric, 2);
        expect(kept, Kind.UP, 2);
        assertTrue(removed.isEmpty(), "removed listener got " + removed);
    }

    @Test
    void eachNodeWatchesTwoSuccessorsAndARunOfDeadNodesIsWatchedWhole() throws Exception {
        start(FabricFixture.small().withMaxNodes(32));
        List<FabricNode> nodes = new ArrayList<>();
        for (int a = 0; a < 8; a++) {
            nodes.add(fx.attach(fabric, a));
        }
        long dead = deadPid();
        for (int a = 10; a < 22; a++) {
            fakeNode(a, 3, Fabric.HOST_ID, dead); // twelve nodes in a row whose process is gone
        }
        FabricFixture.waitUntil("the whole run is reclaimed", () -> {
            for (int a = 10; a < 22; a++) {
                if (Fabric.state(fabric.stateWord(a)) != FabricLayout.STATE_FREE) {
                    return false;
                }
            }
            return true;
        });
        // Settled: a node whose two successors are live reads just those two (not all 31 other entries).
        FabricFixture.waitUntil("the watches settle", () -> nodes.get(3).lastWatchReads() == 2);
        assertEquals(2, nodes.get(0).lastWatchReads());
        // The last one walks past the FREE entries to wrap round to nodes 0 and 1: 24 FREE, then 2.
        FabricFixture.waitUntil("node 7 wraps round", () -> nodes.get(7).lastWatchReads() == 26);
    }
}
