package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/**
 * perftest's read-bw shape in packet mode: 128 outstanding 64 KiB READs with 16 READ resources on each side,
 * signaled every 64th: every READ is requested once (no retransmission on a lossless fabric) and all complete.
 */
class ReadStormTest {
    @Test
    void threeThousandLargeReadsWithAFullWindowOfResourcesComplete() {
        try (RdmaFixture fx = new RdmaFixture(256)) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(4096);
            CompletionQueue cb = b.createCq(4096);
            QueuePair qa = a.createQp(pa, QpInitAttr.rc(ca, ca).withCapacity(256, 512));
            QueuePair qb = b.createQp(pb, QpInitAttr.rc(cb, cb).withCapacity(256, 512));
            int access = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
            for (QueuePair q : new QueuePair[] {qa, qb}) {
                q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(access),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            }
            for (QueuePair[] pr : new QueuePair[][] {{qa, qb}, {qb, qa}}) {
                pr[0].modify(new QpAttr().qpState(QpState.RTR).destNode(pr[1].ctx.node()).pathMtu(4096).destQpNum(pr[1].qpNum())
                        .rqPsn(7).maxDestRdAtomic(16).minRnrTimer(1), QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU
                        | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
                pr[0].modify(new QpAttr().qpState(QpState.RTS).sqPsn(7).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(16),
                        QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                                | QpAttrMask.MAX_QP_RD_ATOMIC);
            }
            MemoryRegion ma = pa.allocMr(131072, RcPair.ALL);
            MemoryRegion mb = pb.allocMr(131072, RcPair.ALL);
            SendWorkRequest rd = new SendWorkRequest().opcode(WrOpcode.RDMA_READ).local(ma, 0, 65536).remote(mb.addr(), mb.rkey());
            WorkCompletion wc = new WorkCompletion();
            int posted = 0;
            int completed = 0;
            for (int round = 0; completed < 3000; round++) {
                if (round > 5_000_000) {
                    throw new AssertionError("stuck at " + completed + ": psn " + qa.transport.requester.psn + " acked " + qa.transport.requester.ackedPsn
                            + " head " + qa.transport.sq.head + " next " + qa.transport.sq.next + " tail " + qa.transport.sq.tail + " rdOut " + qa.transport.requester.rdOutstanding
                            + " deadline " + qa.transport.requester.ackDeadline + " now " + fx.now + " ePsn " + qb.transport.responder.ePsn + " " + a.counters()
                            + " " + b.counters());
                }
                while (posted < 3000 && posted - completed < 128) {
                    rd.sendFlags(posted % 64 == 63 || posted == 2999 ? SendFlags.SIGNALED : 0).wrId(posted);
                    qa.postSend(rd);
                    posted++;
                }
                fx.links.get(0).poll(64, fx.now);
                a.poll(fx.now);
                fx.links.get(1).poll(64, fx.now);
                b.poll(fx.now);
                fx.now += 1000;
                while (ca.poll(wc)) {
                    assertEquals(WcStatus.name(0), WcStatus.name(wc.status), wc.toString());
                    completed = (int) wc.wrId + 1;
                }
            }
            assertEquals(0, a.counter(RdmaCounter.RETRANSMITS), "a multi-packet READ is requested once");
            assertEquals(0, a.counter(RdmaCounter.STRAY_RESPONSES));
        }
    }
}
