package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.*;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;

/** A QP's service level (ibv_ah_attr.sl) picks the ring of the peer its packets land on (docs/link-layer.md 6). */
class ServiceLevelQpTest {
    private static void rtr(QueuePair q, QueuePair peer, int peerPsn, int sl) {
        q.modify(new QpAttr().qpState(QpState.RTR).destNode(peer.ctx.node()).sl(sl).pathMtu(1024).destQpNum(peer.qpNum())
                        .rqPsn(peerPsn).maxDestRdAtomic(4).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
    }

    @Test
    void eachQpsPacketsTakeTheRingOfItsLevel() {
        try (RdmaFixture fx = new RdmaFixture(64, 2)) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqA = a.createCq(64);
            CompletionQueue cqB = b.createCq(64);
            QueuePair qa = a.createQp(pdA, QpInitAttr.rc(cqA, cqA));
            QueuePair qb = b.createQp(pdB, QpInitAttr.rc(cqB, cqB));
            for (QueuePair q : List.of(qa, qb)) {
                q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            }
            rtr(qa, qb, 0x200, 15); // a's requests at level 15: ring 1 of node 2
            rtr(qb, qa, 0x100, 0); // b's ACKs at level 0: ring 0 of node 1
            RdmaFixture.rts(qa, 0x100, 8, 7, 7);
            RdmaFixture.rts(qb, 0x200, 8, 7, 7);
            assertEquals(15, qa.query(new QpAttr()).sl);
            MemoryRegion mrA = pdA.allocMr(4096, Access.LOCAL_WRITE);
            MemoryRegion mrB = pdB.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(mrA, 0, 100).remote(mrB.addr(), mrB.rkey()));
            fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(cqA));
            var atB = fx.links.get(1).counters();
            var atA = fx.links.get(0).counters();
            assertTrue(atB.ringFrames(1) >= 1, "the WRITE on node 2's ring 1: " + atB.ringFrames());
            assertEquals(0, atB.ringFrames(0), "nothing of a's on node 2's ring 0: " + atB.ringFrames());
            assertTrue(atA.ringFrames(0) >= 1, "the ACK on node 1's ring 0: " + atA.ringFrames());
            assertEquals(0, atA.ringFrames(1), "nothing of b's on node 1's ring 1: " + atA.ringFrames());
        }
    }

    @Test
    void aLevelOutsideZeroToFifteenIsRefused() {
        try (RdmaFixture fx = new RdmaFixture(64, 2)) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            QueuePair qa = a.createQp(a.allocPd(), QpInitAttr.rc(a.createCq(8), a.createCq(8)));
            QueuePair qb = b.createQp(b.allocPd(), QpInitAttr.rc(b.createCq(8), b.createCq(8)));
            qa.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(0),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            RdmaException e = assertThrows(RdmaException.class, () -> rtr(qa, qb, 0, 16));
            assertTrue(e.getMessage().contains("service level 16"), e.getMessage());
        }
    }
}
