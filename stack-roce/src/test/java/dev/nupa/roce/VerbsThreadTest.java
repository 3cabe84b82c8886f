package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.Datapath;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * While a datapath loop drives the node, the verbs that touch queues (post, poll, modify, notify) belong to it, as the
 * link's own sends do: from another thread they throw with the remedy before changing anything, and the same call
 * handed to the loop works.
 */
class VerbsThreadTest {

    private static void refused(Executable call) {
        IllegalStateException e = assertThrows(IllegalStateException.class, call);
        assertTrue(e.getMessage().contains("Link.execute"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void queueVerbsFromAnotherThreadThrowBeforeChangingAnythingAndWorkOnTheLoop(TransferMode mode) throws Exception {
        try (RcPair p = new RcPair(mode, 1024)) {
            p.qb.postRecv(new RecvWorkRequest().wrId(7).local(p.mrB, 0, 1024));
            long sent = p.a.counter(RdmaCounter.PACKETS_SENT) + p.a.counter(RdmaCounter.DIRECT_OPS);
            SendWorkRequest write = new SendWorkRequest(1).wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 64).remote(p.mrB.addr(), p.mrB.rkey());
            Datapath loop = new Datapath(p.a.link(), Datapath.Idle.backoff());
            loop.start();
            try {
                refused(() -> p.qa.postSend(write));
                refused(() -> p.qa.postRecv(new RecvWorkRequest().wrId(2).local(p.mrA, 0, 64)));
                refused(() -> p.qa.modify(new QpAttr().rnrRetry(3), QpAttrMask.RNR_RETRY));
                refused(() -> p.cqA.poll(new WorkCompletion()));
                refused(() -> p.cqA.requestNotify(false));
                assertEquals(sent, p.a.counter(RdmaCounter.PACKETS_SENT) + p.a.counter(RdmaCounter.DIRECT_OPS),
                        "the refused post sent nothing");
                p.a.link().call(() -> {
                    p.qa.postSend(write); // on the loop: taken
                    return null;
                });
            } finally {
                loop.close();
            }
            p.fx.pump();
            WorkCompletion wc = RdmaFixture.poll(p.cqA);
            RdmaFixture.assertStatus(WcStatus.SUCCESS, wc);
            assertEquals(1, wc.wrId, "only the WRITE posted on the loop completed");
            assertFalse(p.cqA.poll(new WorkCompletion()), "nothing of the refused calls was queued");
        }
    }
}
