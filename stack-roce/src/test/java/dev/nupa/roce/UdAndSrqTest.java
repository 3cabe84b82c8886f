package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.fill;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/** Unreliable datagram QPs (IBA 9.8) and shared receive queues (IBA 10.2.9). */
class UdAndSrqTest {

    /** A UD QP in RTS with Q_Key {@code qkey}. */
    static QueuePair ud(RdmaContext c, ProtectionDomain pd, CompletionQueue cq, int qkey) {
        QueuePair q = c.createQp(pd, QpInitAttr.ud(cq, cq));
        q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qkey(qkey),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
        q.modify(new QpAttr().qpState(QpState.RTR), QpAttrMask.STATE);
        q.modify(new QpAttr().qpState(QpState.RTS).sqPsn(0), QpAttrMask.STATE | QpAttrMask.SQ_PSN);
        return q;
    }

    @Test
    void datagramsArriveAfterTheGrhRoomWithTheSenderNamedAndWrongQkeysAreDropped() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(64);
            CompletionQueue cb = b.createCq(64);
            QueuePair qa = ud(a, pa, ca, 0x1111);
            QueuePair qb = ud(b, pb, cb, 0x2222);
            MemoryRegion ma = pa.allocMr(8192, RcPair.ALL);
            MemoryRegion mb = pb.allocMr(8192, RcPair.ALL);
            fill(ma.memory().asSlice(0, 1000), 9);
            qb.postRecv(new RecvWorkRequest().wrId(1).local(mb, 0, 2000));
            SendWorkRequest s = new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND_WITH_IMM).immData(7).sendFlags(SendFlags.SIGNALED)
                    .local(ma, 0, 1000).ud(b.node(), qb.qpNum(), 0x2222);
            qa.postSend(s);
            fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(ca));
            WorkCompletion r = poll(cb);
            assertStatus(WcStatus.SUCCESS, r);
            assertEquals(1040, r.byteLen, "40 bytes of GRH room, then the payload");
            assertEquals(qa.qpNum(), r.srcQp);
            assertEquals(a.node(), r.srcNode);
            assertEquals(7, r.immData);
            assertTrue((r.wcFlags & WorkCompletion.GRH) != 0);
            assertEquals(-1, ma.memory().asSlice(0, 1000).mismatch(mb.memory().asSlice(40, 1000)));

            qb.postRecv(new RecvWorkRequest().wrId(2).local(mb, 0, 2000));
            qa.postSend(s.ud(b.node(), qb.qpNum(), 0x3333).wrId(6));
            fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(ca)); // unreliable: the sender never learns
            assertEquals(0, cb.size(), "a wrong Q_Key is dropped silently");
            assertEquals(1, b.counter(RdmaCounter.UD_DROPS));

            RdmaException e = assertThrows(RdmaException.class, () -> qa.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE)
                    .local(ma, 0, 8).ud(b.node(), qb.qpNum(), 0x2222)));
            assertTrue(e.getMessage().contains("not available on a UD QP"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> qa.postSend(new SendWorkRequest().opcode(WrOpcode.SEND)
                    .local(ma, 0, 8000).ud(b.node(), qb.qpNum(), 0x2222)));
            assertTrue(e.getMessage().contains("exceeds the path MTU"), e.getMessage());
        }
    }

    @Test
    void qpsSharingAReceiveQueueEachTakeTheNextRequest() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(64);
            CompletionQueue cb = b.createCq(64);
            SharedReceiveQueue srq = b.createSrq(pb, 16, 1);
            QueuePair a1 = a.createQp(pa, QpInitAttr.rc(ca, ca));
            QueuePair a2 = a.createQp(pa, QpInitAttr.rc(ca, ca));
            QueuePair b1 = b.createQp(pb, QpInitAttr.rc(cb, cb).withSrq(srq));
            QueuePair b2 = b.createQp(pb, QpInitAttr.rc(cb, cb).withSrq(srq));
            RdmaFixture.connect(a1, b1, 1024);
            RdmaFixture.connect(a2, b2, 1024);
            MemoryRegion ma = pa.allocMr(4096, RcPair.ALL);
            MemoryRegion mb = pb.allocMr(4096, RcPair.ALL);
            for (int i = 0; i < 3; i++) {
                srq.postRecv(new RecvWorkRequest().wrId(100 + i).local(mb, i * 1000L, 1000));
            }
            assertThrows(RdmaException.class, () -> b1.postRecv(new RecvWorkRequest()), "post to the SRQ, not the QP");
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(ma, 0, 10);
            a2.postSend(s.wrId(1));
            fx.pump();
            a1.postSend(s.wrId(2));
            fx.pump();
            WorkCompletion r1 = poll(cb);
            WorkCompletion r2 = poll(cb);
            assertEquals(100, r1.wrId);
            assertEquals(b2.qpNum(), r1.qpNum);
            assertEquals(101, r2.wrId);
            assertEquals(b1.qpNum(), r2.qpNum);
            assertEquals(1, srq.size());
        }
    }

    @Test
    void completionEventsFireOnceAfterEachRequest() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            int[] events = new int[1];
            p.cqB.onEvent(() -> events[0]++);
            p.cqB.requestNotify(false);
            for (int i = 0; i < 3; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(i).local(p.mrB, 0, 64));
                p.qa.postSend(new SendWorkRequest().wrId(i).opcode(WrOpcode.SEND).local(p.mrA, 0, 64));
            }
            p.fx.pump();
            assertEquals(3, p.cqB.size());
            assertEquals(1, events[0], "one event per request");
            p.cqB.requestNotify(true);
            p.qb.postRecv(new RecvWorkRequest().wrId(9).local(p.mrB, 0, 64));
            p.qa.postSend(new SendWorkRequest().wrId(9).opcode(WrOpcode.SEND).local(p.mrA, 0, 64));
            p.fx.pump();
            assertEquals(1, events[0], "solicited-only: an unsolicited receive does not fire");
            p.qb.postRecv(new RecvWorkRequest().wrId(10).local(p.mrB, 0, 64));
            p.qa.postSend(new SendWorkRequest().wrId(10).opcode(WrOpcode.SEND).sendFlags(SendFlags.SOLICITED).local(p.mrA, 0, 64));
            p.fx.pump();
            assertEquals(2, events[0]);
        }
    }
}
