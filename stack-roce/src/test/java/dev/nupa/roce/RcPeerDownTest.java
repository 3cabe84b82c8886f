package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.PeerEvent;
import dev.nupa.ip.Route;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
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
        assertEndedByPeerDeath(p.a, p.qa, p.cqA);
    }

    private static void assertEndedByPeerDeath(RdmaContext a, QueuePair qa, CompletionQueue cqA) {
        assertEquals(QpState.ERR, qa.state());
        WorkCompletion first = poll(cqA);
        assertStatus(WcStatus.RETRY_EXC_ERR, first);
        assertEquals(1, first.wrId);
        WorkCompletion second = poll(cqA);
        assertStatus(WcStatus.WR_FLUSH_ERR, second);
        assertEquals(2, second.wrId);
        WorkCompletion recv = poll(cqA);
        assertStatus(WcStatus.WR_FLUSH_ERR, recv);
        assertEquals(20, recv.wrId);
        assertEquals(0, cqA.size());
        assertEquals(1, a.counter(RdmaCounter.PEER_DOWN_QP_ERRORS));
    }

    /** An RC QP on {@code ctx} connected by IPv4 address (RoCEv2) to {@code peerIp}'s QP {@code peerQpn}, in RTS. */
    private static QueuePair roceV2Qp(RdmaContext ctx, CompletionQueue cq, int peerIp, int peerQpn) {
        QueuePair q = ctx.createQp(ctx.allocPd(), QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET).withCapacity(64, 64));
        q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        q.modify(new QpAttr().qpState(QpState.RTR).destIp(peerIp).pathMtu(1024).destQpNum(peerQpn).rqPsn(0x200)
                        .maxDestRdAtomic(4).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        RdmaFixture.rts(q, 0x200, 8, 7, 7);
        return q;
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
    void aRoceV2QpToAnAddressTheDeadNodeHeldEndsAtOnceAndOneBeyondAGatewayGoesOn() throws InterruptedException {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.ipNode(1); // 10.0.0.2
            CountDownLatch up = new CountDownLatch(2);
            CountDownLatch down = new CountDownLatch(2);
            fx.devices.get(0).addPeerListener(e -> {
                if (e.address() == 2 || e.address() == 3) {
                    (e.kind() == PeerEvent.Kind.UP ? up : down).countDown();
                }
            });
            RdmaContext b = fx.ipNode(2); // 10.0.0.3
            fx.ipNode(3); // 10.0.0.4: the gateway to 192.168.0.0/16
            fx.stack(0).addRoute(new Route(Ipv4Address.of(192, 168, 0, 0), 16, RdmaFixture.ip(3)));
            assertTrue(up.await(10, TimeUnit.SECONDS), "node 1 never saw nodes 2 and 3 up");

            CompletionQueue cqA = a.createCq(64);
            CompletionQueue cqB = b.createCq(64);
            QueuePair qb = b.createQp(b.allocPd(), QpInitAttr.rc(cqB, cqB).withMode(TransferMode.PACKET).withCapacity(64, 64));
            QueuePair qa = roceV2Qp(a, cqA, RdmaFixture.ip(2), qb.qpNum());
            qb.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            qb.modify(new QpAttr().qpState(QpState.RTR).destIp(RdmaFixture.ip(1)).pathMtu(1024).destQpNum(qa.qpNum()).rqPsn(0x200)
                            .maxDestRdAtomic(4).minRnrTimer(1),
                    QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                            | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
            RdmaFixture.rts(qb, 0x200, 8, 7, 7);
            // A QP to a host beyond the gateway: its packets go to node 3, which forwards nothing; it waits on its timer.
            CompletionQueue cqC = a.createCq(64);
            QueuePair qc = roceV2Qp(a, cqC, Ipv4Address.of(192, 168, 1, 5), 77);

            MemoryRegion mrA = qa.pd().allocMr(4096, RcPair.ALL);
            qa.postRecv(new RecvWorkRequest().wrId(20).local(mrA, 2048, 64));
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mrA, 0, 64);
            qa.postSend(s.wrId(1)); // qb posted no receive: RNR-NAKed, and with RNR retry 7 retried forever
            qa.postSend(s.wrId(2));
            MemoryRegion mrC = qc.pd().allocMr(4096, RcPair.ALL);
            qc.postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mrC, 0, 64));
            fx.pump();
            assertEquals(0, cqA.size(), "RNR-NAKed, waiting: nothing completed");
            assertTrue(b.counter(RdmaCounter.ROCEV2_RECEIVED) > 0, "qa reached qb over RoCEv2");

            fx.devices.get(1).close(); // node 2 (10.0.0.3) leaves the fabric, and so does the gateway, node 3
            fx.devices.get(2).close();
            long deadline = System.nanoTime() + 10_000 * MS; // liveness runs on real time (a 10 ms heartbeat)
            while ((qa.state() != QpState.ERR || down.getCount() > 0) && System.nanoTime() < deadline) {
                a.poll(fx.now); // virtual time stands still: only the peer's death can end the requests
                Thread.onSpinWait();
            }
            assertEquals(0, down.getCount(), "node 1 saw nodes 2 and 3 go down");
            a.poll(fx.now); // whatever their deaths queued for node 1's loop runs now
            assertEndedByPeerDeath(a, qa, cqA);
            assertEquals(QpState.RTS, qc.state(), "a peer beyond a gateway is no fabric node: its QP waits on its timer");
            assertEquals(0, cqC.size());
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
