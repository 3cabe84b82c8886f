package dev.nupa.roce.vertx;

import dev.nupa.roce.AsyncEvent;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.SharedReceiveQueue;
import dev.nupa.roce.verbs.AsyncEventType;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.reactivex.rxjava3.subscribers.TestSubscriber;
import org.junit.jupiter.api.Test;

class RdmaRxTest {

    @Test
    void theCompletionChannelEmitsEveryCompletionInOrder() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 100).remote(p.mrB.addr(), p.mrB.rkey());
            p.qa.postSend(w.wrId(1)); // queued before the subscription
            p.fx.pump();
            TestSubscriber<WorkCompletion> sub = RdmaRx.completions(p.cqA).test();
            for (int i = 2; i <= 5; i++) {
                p.qa.postSend(w.wrId(i));
                p.fx.pump();
            }
            sub.assertValueCount(5);
            for (int i = 0; i < 5; i++) {
                assertEquals(i + 1, sub.values().get(i).wrId);
                assertEquals(WcStatus.SUCCESS, sub.values().get(i).status);
            }
            sub.cancel();
            p.qa.postSend(w.wrId(6));
            p.fx.pump();
            sub.assertValueCount(5);
            assertEquals(1, p.cqA.size(), "after cancelling, completions stay in the queue for polling");
        }
    }

    @Test
    void theAsyncEventStreamEmitsQueuedEventsThenEachNewOneFromTheContextsPoll() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 8).remote(p.mrB.addr(), p.mrB.rkey() ^ 1)); // a bad rkey: QP_ACCESS_ERR at b
            p.fx.pump();
            TestSubscriber<AsyncEvent> sub = RdmaRx.asyncEvents(p.b).test();
            sub.assertValueCount(1);
            assertEquals(AsyncEventType.QP_ACCESS_ERR, sub.values().get(0).type());
            assertSame(p.qb, sub.values().get(0).qp());

            SharedReceiveQueue srq = p.b.createSrq(p.pdB, 4, 1);
            QueuePair q = p.b.createQp(p.pdB, QpInitAttr.rc(p.cqB, p.cqB).withSrq(srq));
            q.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
            p.fx.pump();
            sub.assertValueCount(2);
            assertEquals(AsyncEventType.QP_LAST_WQE_REACHED, sub.values().get(1).type());
            assertSame(q, sub.values().get(1).qp());

            sub.cancel();
            q.close();
            QueuePair r = p.b.createQp(p.pdB, QpInitAttr.rc(p.cqB, p.cqB).withSrq(srq));
            r.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
            p.fx.pump();
            sub.assertValueCount(2);
            assertSame(r, p.b.pollAsyncEvent().qp(), "after cancelling, events stay queued for polling");
            assertNull(p.b.pollAsyncEvent());
        }
    }
}
