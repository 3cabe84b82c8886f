package dev.nupa.roce.ring;

import static dev.nupa.roce.ring.WorkRingLayout.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.RdmaException;
import dev.nupa.roce.TransferMode;
import dev.nupa.roce.WcStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.Set;
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
            proxy.poll(pair.fx.now);
        }

        @Override
        public void close() {
            proxy.close();
            window.close();
            pair.close();
        }
    }

    private static Ring ring(TransferMode mode) {
        RcPair p = new RcPair(mode, 4096);
        FabricDevice device = p.fx.devices.get(0);
        FabricWindow w = device.exportWindow(windowBytes(ENTRIES, ENTRIES, DATA),
                FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE | FabricWindow.WORK_RING);
        WorkRingProxy.format(w, 0, ENTRIES, ENTRIES, DATA, p.mrB.addr(), p.mrB.length(), p.mrB.rkey(), p.qa.qpNum(), 2, p.qb.qpNum());
        WorkRingProxy proxy = new WorkRingProxy(w, device, p.pdA, p.qa, p.cqA, ENTRIES, 1_000, 0);
        return new Ring(p, w, proxy, WorkRing.of(w));
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
            r.proxy().poll(r.pair().fx.now); // taken and sent as packets; no pump, so no ACK comes back
            r.pair().fx.devices.get(1).close(); // the target's node leaves the fabric
            long deadline = System.nanoTime() + 10_000_000_000L; // liveness runs on real time (a 10 ms heartbeat)
            while (poster.state() != CLOSED && System.nanoTime() < deadline) {
                r.pair().a.poll(r.pair().fx.now); // virtual time stands still: only the target's death ends the WQEs
                r.proxy().poll(r.pair().fx.now);
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
            r.proxy().poll(r.pair().fx.now);
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

    @Test
    void closingFlushesWhatWasTakenAndThePosterLearnsTheRingClosed() {
        try (Ring r = ring(TransferMode.PACKET)) {
            WorkRing poster = r.poster();
            for (int i = 0; i < 4; i++) {
                assertTrue(poster.postWrite(i, 0, (long) i * 1024, 1024, true) >= 0);
            }
            r.proxy().poll(r.pair().fx.now); // taken and sent as packets; no pump, so no ACK comes back
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
