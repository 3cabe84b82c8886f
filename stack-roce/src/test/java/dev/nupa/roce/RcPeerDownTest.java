package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.PeerEvent;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * An RC QP whose peer's fabric node dies (or restarts) ends at once, as rxe ends one whose retries ran out: the
 * request in flight completes with IBV_WC_RETRY_EXC_ERR, the rest and the receives with IBV_WC_WR_FLUSH_ERR, and the
 * QP is in ERR; it does not wait (here: forever, RNR retry 7) for an answer that cannot come.
 */
class RcPeerDownTest {

    /** Node 1 sends to node 2, which posted no receive: with RNR retry 7, node 1's requester retries forever. */
    private static RcPair stuckSend(RdmaFixture fx) {
        return stuckSend(new RcPair(fx, TransferMode.PACKET, 1024, 7, 7));
    }

    private static RcPair stuckSend(RcPair p) {
        p.qa.postRecv(new RecvWorkRequest().wrId(20).local(p.mrA, 4096, 64));
        SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 64);
        p.qa.postSend(s.wrId(1));
        p.qa.postSend(s.wrId(2));
        p.fx.pump();
        assertEquals(0, p.cqA.size(), "RNR-NAKed, waiting: nothing completed");
        return p;
    }

    private static void assertEndedByPeerDeath(RcPair p) {
        assertEquals(QpState.ERR, p.qa.state());
        WorkCompletion first = poll(p.cqA);
        assertStatus(WcStatus.RETRY_EXC_ERR, first);
        assertEquals(1, first.wrId);
        WorkCompletion second = poll(p.cqA);
        assertStatus(WcStatus.WR_FLUSH_ERR, second);
        assertEquals(2, second.wrId);
        WorkCompletion recv = poll(p.cqA);
        assertStatus(WcStatus.WR_FLUSH_ERR, recv);
        assertEquals(20, recv.wrId);
        assertEquals(0, p.cqA.size());
        assertEquals(1, p.a.counter(RdmaCounter.PEER_DOWN_QP_ERRORS));
    }

    @Test
    void theFabricsLivenessPutsAQpWhosePeerDiedInErrWithRetryExceededAndFlushes() throws InterruptedException {
        try (RdmaFixture fx = new RdmaFixture()) {
            // Node 1's liveness must have seen node 2 up, or it has nothing to see go down: wait for that.
            RdmaContext a = fx.node(1);
            CountDownLatch up = new CountDownLatch(1);
            fx.devices.get(0).addPeerListener(e -> {
                if (e.kind() == PeerEvent.Kind.UP && e.address() == 2) {
                    up.countDown();
                }
            });
            RcPair p = stuckSend(new RcPair(fx, a, fx.node(2)));
            assertTrue(up.await(10, TimeUnit.SECONDS), "node 1 never saw node 2 up");
            fx.devices.get(1).close(); // node 2 leaves the fabric; node 1's liveness reports it DOWN
            long deadline = System.nanoTime() + 10_000 * MS; // liveness runs on real time (a 10 ms heartbeat)
            while (p.qa.state() != QpState.ERR && System.nanoTime() < deadline) {
                p.a.poll(fx.now); // virtual time stands still: only the peer's death can end the request
                Thread.onSpinWait();
            }
            assertEndedByPeerDeath(p);
        }
    }

    @Test
    void onlyTheQpsOfTheLostNodeEnd() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = stuckSend(fx);
            assertEquals(0, p.a.device.endQpsTo(3), "no QP of node 1 talks to node 3");
            assertEquals(QpState.RTS, p.qa.state());
            assertEquals(1, p.a.device.endQpsTo(2));
            assertEndedByPeerDeath(p);
            assertEquals(QpState.RTS, p.qb.state(), "node 2's own QP is not node 1's business");
        }
    }
}
