package dev.nupa.roce.ring;

import static dev.nupa.roce.ring.WorkRingLayout.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.PeerEvent;
import dev.nupa.device.PeerListener;
import dev.nupa.l2.Datapath;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The proxy's side of a work ring, sans-IO on virtual time: any process that maps the fabric may write a ring, so
 * whatever bytes stand in its WQEs complete (in error where they must) in posting order, and the proxy goes on.
 */
class WorkRingProxyTest {
    private static final int ENTRIES = 16;
    private static final long DATA = 65_536;

    private record Ring(RcPair pair, FabricWindow window, WorkRingProxy proxy, WorkRing poster) implements AutoCloseable {
        void pump() {
            pair.fx.pump();
            proxy.poll(Integer.MAX_VALUE, pair.fx.now);
        }

        @Override
        public void close() {
            proxy.close();
            window.close();
            pair.close();
        }
    }

    private static Ring ring(TransferMode mode) {
        return ring(new RcPair(mode, 4096));
    }

    private static Ring ring(RcPair p) {
        FabricDevice device = p.fx.devices.get(0);
        FabricWindow w = device.exportWindow(windowBytes(ENTRIES, ENTRIES, DATA),
                FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE | FabricWindow.WORK_RING);
        WorkRingProxy.format(w, 0, ENTRIES, ENTRIES, DATA, p.mrB.addr(), p.mrB.length(), p.mrB.rkey(), p.qa.qpNum(), 2, p.qb.qpNum());
        WorkRingProxy proxy = new WorkRingProxy(w, device, p.pdA, p.qa, p.cqA, ENTRIES, 1_000, 0);
        return new Ring(p, w, proxy, WorkRing.of(w));
    }

    /**
     * A proxy that is a source of a real datapath loop, asleep for a minute and with no timer to wake it, takes a WRITE
     * posted from another node as soon as the poster rings the doorbell: whether the post comes while the loop sleeps,
     * or just as it goes to sleep (its look at the proxy's {@code ready} sees the WQE then). 30 s is far less than the
     * loop's sleep, so only the doorbell ends it in time.
     */
    @Test
    void aPostersDoorbellWakesTheSleepingLoopWhoseSourceTakesTheWqe() throws Exception {
        try (Ring r = ring(TransferMode.DIRECT)) {
            RcPair p = r.pair();
            Datapath loop = new Datapath(p.a.link(), new Datapath.Idle(0, 0, TimeUnit.MINUTES.toNanos(1)));
            loop.addSource(r.proxy());
            loop.start();
            try (WorkRing poster = WorkRing.open(p.fx.devices.get(1), p.fx.devices.get(0).address(), 0)) {
                RingCompletion c = new RingCompletion();
                for (int i = 0; i < 4; i++) {
                    Thread.sleep(i % 2 == 0 ? 100 : 0); // asleep for long, or perhaps on its way to sleep
                    poster.data().set(ValueLayout.JAVA_BYTE, 0, (byte) (i + 1));
                    assertTrue(poster.postWrite(i, 0, i, 1, true) >= 0);
                    poster.doorbell();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (poster.poll(c) == 0) {
                        assertTrue(System.nanoTime() < deadline, "post " + i + ": the doorbell woke the loop and the proxy took the WQE");
                        Thread.onSpinWait();
                    }
                    assertEquals(WcStatus.SUCCESS, c.status, c.toString());
                    assertEquals(i, c.wrId);
                    assertEquals(i + 1, p.mrB.memory().get(ValueLayout.JAVA_BYTE, i), "the WRITE landed in the target's region");
                }
            } finally {
                loop.close();
            }
        }
    }

    @Test
    void wqesOfRandomBytesCompleteInOrderAndTheProxyGoesOn() {
        Random rnd = new Random(42);
        try (Ring r = ring(TransferMode.DIRECT)) {
            MemorySegment mem = r.window().memory();
            RingCompletion c = new RingCompletion();
            Set<Integer> statuses = Set.of(WcStatus.SUCCESS, WcStatus.LOC_QP_OP_ERR, WcStatus.LOC_PROT_ERR, WcStatus.WR_FLUSH_ERR,
                    WcStatus.REM_ACCESS_ERR, WcStatus.REM_INV_REQ_ERR, WcStatus.LOC_LEN_ERR, WcStatus.REM_OP_ERR);
            int total = 2_000;
            long lastPosition = -1;
            int completions = 0;
            for (long p = 0; p < total; p++) {
                long e = HEADER_BYTES + (p % ENTRIES) * WQE_BYTES;
                while (p - mem.get(ValueLayout.JAVA_LONG, H_SQ_HEAD) >= ENTRIES) { // room, as a poster would wait for it
                    r.pump();
                    while (r.poster().poll(c) == 1) {
                        assertTrue(statuses.contains(c.status), c.toString());
                        assertTrue(c.sqPosition > lastPosition, "completions in posting order: " + c.sqPosition + " after " + lastPosition);
                        lastPosition = c.sqPosition;
                        completions++;
                    }
                }
                byte[] junk = new byte[WQE_BYTES - 4];
                rnd.nextBytes(junk);
                if (rnd.nextBoolean()) { // half of them plausible: version 1, a known opcode, this ring's data area
                    junk[W_VERSION - 4] = VERSION;
                    junk[W_OPCODE - 4] = (byte) rnd.nextInt(5);
                    MemorySegment.copy(MemorySegment.ofArray(new int[] {r.window().id(), r.window().key()}), 0,
                            MemorySegment.ofArray(junk), W_LOCAL_WINDOW - 4, 8);
                }
                MemorySegment.copy(MemorySegment.ofArray(junk), 0, mem, e + 4, junk.length);
                mem.set(ValueLayout.JAVA_INT, e + W_SEQ, (int) (p + 1));
                r.pump();
            }
            for (int i = 0; i < 100; i++) {
                r.pump();
                while (r.poster().poll(c) == 1) {
                    completions++;
                }
            }
            assertEquals(total, mem.get(ValueLayout.JAVA_LONG, H_SQ_HEAD), "every WQE was taken");
            assertEquals(total, r.proxy().executed() + r.proxy().failed(), "every WQE ended, executed or failed");
            assertTrue(r.proxy().failed() > total / 2, "junk fails: " + r.proxy().failed());
            assertTrue(completions >= r.proxy().failed(), "every failure completed: " + completions + " of " + r.proxy().failed());
        }
    }

    @Test
    void aRingWhoseTargetDiedCompletesWhatItTookAndStopsInsteadOfFailingEveryLaterWqe() throws InterruptedException {
        try (Ring r = ring(TransferMode.PACKET)) {
            // Node 1's liveness must have seen the target (node 2) up, or it has nothing to see go down: it reports a
            // peer UP on its first heartbeat after the peer attached, which this listener hears or which came already.
            java.util.concurrent.CountDownLatch up = new java.util.concurrent.CountDownLatch(1);
            r.pair().fx.devices.get(0).addPeerListener(e -> {
                if (e.kind() == dev.nupa.device.PeerEvent.Kind.UP && e.address() == 2) {
                    up.countDown();
                }
            });
            up.await(1, java.util.concurrent.TimeUnit.SECONDS);
            WorkRing poster = r.poster();
            for (int i = 0; i < 4; i++) {
                assertTrue(poster.postWrite(i, 0, (long) i * 1024, 1024, true) >= 0);
            }
            r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now); // taken and sent as packets; no pump, so no ACK comes back
            r.pair().fx.devices.get(1).close(); // the target's node leaves the fabric
            long deadline = System.nanoTime() + 10_000_000_000L; // liveness runs on real time (a 10 ms heartbeat)
            while (poster.state() != CLOSED && System.nanoTime() < deadline) {
                r.pair().a.poll(r.pair().fx.now); // virtual time stands still: only the target's death ends the WQEs
                r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now);
                Thread.onSpinWait();
            }
            assertEquals(CLOSED, poster.state(), "the proxy stopped serving a ring whose target died");
            RingCompletion c = new RingCompletion();
            for (int i = 0; i < 4; i++) {
                assertEquals(1, poster.poll(c));
                assertEquals(i, c.wrId);
                assertEquals(i == 0 ? WcStatus.RETRY_EXC_ERR : WcStatus.WR_FLUSH_ERR, c.status, c.toString());
            }
            assertEquals(4, r.proxy().failed());
            poster.postWrite(9, 0, 0, 1024, true); // a poster that did not look: not taken, not failed
            r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now);
            assertEquals(4, r.window().memory().get(ValueLayout.JAVA_LONG, H_SQ_HEAD));
            assertEquals(4, r.proxy().failed());
            RdmaException closed = assertThrows(RdmaException.class, () -> {
                for (int i = 0; i < 2_048; i++) { // a poster that finds no completion checks the ring now and then
                    poster.poll(c);
                }
            });
            assertTrue(closed.getMessage().contains("is closed: its proxy stopped serving it"), closed.getMessage());
        }
    }

    /** Node 1's peer events about node 2, from now on (the liveness thread's, or those a test fires). */
    private static BlockingQueue<PeerEvent> eventsOf2(FabricDevice node1) {
        BlockingQueue<PeerEvent> events = new LinkedBlockingQueue<>();
        node1.addPeerListener(e -> {
            if (e.address() == 2) {
                events.add(e);
            }
        });
        return events;
    }

    private static PeerEvent await(BlockingQueue<PeerEvent> events, String what, Predicate<PeerEvent> p) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L; // liveness runs on real time (a 10 ms heartbeat)
        for (PeerEvent e; (e = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) != null; ) {
            if (p.test(e)) {
                return e;
            }
        }
        throw new AssertionError("node 1 never saw " + what);
    }

    /**
     * Posts 4 WRITEs that the proxy takes and sends (no pump, so no ACK comes back), lets {@code kill} end the target's
     * life, then serves the ring until it is CLOSED: the oldest ends RETRY_EXC_ERR, the rest flushed, once; a WQE
     * posted after is neither taken nor failed, however often the proxy is polled.
     */
    private static void assertStopsOnceWhenTheTargetsLifeEnds(Ring r, Runnable kill) {
        WorkRing poster = r.poster();
        for (int i = 0; i < 4; i++) {
            assertTrue(poster.postWrite(i, 0, (long) i * 1024, 1024, true) >= 0);
        }
        r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now);
        kill.run();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (poster.state() != CLOSED && System.nanoTime() < deadline) {
            r.pair().a.poll(r.pair().fx.now); // virtual time stands still: only the target's end ends the WQEs
            r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now);
            Thread.onSpinWait();
        }
        assertEquals(CLOSED, poster.state(), "the proxy stopped serving the ring; its failures: " + r.proxy().failed());
        RingCompletion c = new RingCompletion();
        for (int i = 0; i < 4; i++) {
            assertEquals(1, poster.poll(c));
            assertEquals(i, c.wrId);
            assertEquals(i == 0 ? WcStatus.RETRY_EXC_ERR : WcStatus.WR_FLUSH_ERR, c.status, c.toString());
        }
        assertEquals(4, r.proxy().failed());
        for (int i = 0; i < 8; i++) { // posters that did not look
            poster.postWrite(10 + i, 0, 0, 1024, true);
            r.pair().a.poll(r.pair().fx.now);
            r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now);
        }
        assertEquals(4, r.window().memory().get(ValueLayout.JAVA_LONG, H_SQ_HEAD), "nothing more was taken");
        assertEquals(4, r.proxy().failed(), "the failures stopped growing");
        assertEquals(CLOSED, poster.state());
    }

    @Test
    void aRingWhoseTargetRestartedAtItsAddressStopsOnceAsForADeadOne() throws InterruptedException {
        RdmaFixture fx = new RdmaFixture();
        RdmaContext a = fx.node(1);
        BlockingQueue<PeerEvent> events = eventsOf2(fx.devices.get(0)); // before node 2 attaches: its UP is heard
        try (Ring r = ring(new RcPair(fx, a, fx.node(2)))) {
            await(events, "node 2 up", e -> e.kind() == PeerEvent.Kind.UP); // else it has nothing to see restart
            FabricDevice[] again = new FabricDevice[1];
            try {
                assertStopsOnceWhenTheTargetsLifeEnds(r, () -> {
                    fx.devices.get(1).close(); // the target's node dies, and a new one takes its address at once
                    again[0] = fx.fabric.attach(2);
                    try {
                        // Node 1 knows the new incarnation (RESTARTED, or DOWN then UP, as its heartbeats fell) before
                        // the proxy looks again: the target is up, at the same address, but it is not the same node.
                        await(events, "node 2's new generation", e -> e.kind() != PeerEvent.Kind.DOWN
                                && e.generation() == again[0].generation());
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    assertTrue(fx.devices.get(0).isUp(2));
                });
            } finally {
                if (again[0] != null) {
                    again[0].close();
                }
            }
        }
    }

    @Test
    void aRestartedEventForTheTargetStopsTheRingOnce() {
        // Node 1's device, with a hand on its peer listeners: the test tells them node 2 RESTARTED, as the liveness
        // thread would on a heartbeat that finds a new generation in node 2's entry (node 2 itself goes on here).
        List<PeerListener> listeners = new CopyOnWriteArrayList<>();
        RdmaFixture fx = new RdmaFixture();
        RcPair p = new RcPair(fx, fx.node(1, d -> withListeners(d, listeners)), fx.node(2));
        try (Ring r = ring(p)) {
            int generation = fx.devices.get(1).generation() + 1;
            assertStopsOnceWhenTheTargetsLifeEnds(r, () -> {
                for (PeerListener l : listeners) {
                    l.onPeerEvent(new PeerEvent(PeerEvent.Kind.RESTARTED, 2, generation));
                }
            });
            assertTrue(fx.devices.get(0).isUp(2), "the target's address is up all along");
        }
    }

    /** {@code inner}, whose added peer listeners also go into {@code listeners}. */
    private static FabricDevice withListeners(FabricDevice inner, List<PeerListener> listeners) {
        return (FabricDevice) Proxy.newProxyInstance(FabricDevice.class.getClassLoader(), new Class<?>[] {FabricDevice.class},
                (self, m, args) -> {
                    switch (m.getName()) {
                        case "addPeerListener" -> listeners.add((PeerListener) args[0]);
                        case "removePeerListener" -> listeners.remove(args[0]);
                        default -> { }
                    }
                    try {
                        return m.invoke(inner, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Test
    void closingFlushesWhatWasTakenAndThePosterLearnsTheRingClosed() {
        try (Ring r = ring(TransferMode.PACKET)) {
            WorkRing poster = r.poster();
            for (int i = 0; i < 4; i++) {
                assertTrue(poster.postWrite(i, 0, (long) i * 1024, 1024, true) >= 0);
            }
            r.proxy().poll(Integer.MAX_VALUE, r.pair().fx.now); // taken and sent as packets; no pump, so no ACK comes back
            r.proxy().close();
            RingCompletion c = new RingCompletion();
            for (int i = 0; i < 4; i++) {
                assertEquals(1, poster.poll(c));
                assertEquals(i, c.wrId);
                assertEquals(WcStatus.WR_FLUSH_ERR, c.status, c.toString());
            }
            assertEquals(CLOSED, poster.state());
            RdmaException closed = assertThrows(RdmaException.class, () -> {
                for (int i = 0; i < 2_048; i++) {
                    poster.poll(c);
                }
            });
            assertTrue(closed.getMessage().contains("is closed: its proxy stopped serving it"), closed.getMessage());
        }
    }
}
