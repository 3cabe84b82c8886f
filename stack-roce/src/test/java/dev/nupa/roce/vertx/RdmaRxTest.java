package dev.nupa.roce.vertx;

import dev.nupa.roce.RcPair;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
