package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.Datapath;
import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.GsiAgent;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * While a datapath loop drives the node, every verb belongs to it, as the link's own sends do: the queue calls (post,
 * poll, modify, notify), creating and destroying PDs, CQs, QPs and SRQs, registering and deregistering memory, queries,
 * QP 1 and the CM's calls. From another thread they throw with the remedy before changing anything, and the same call
 * handed to the loop works.
 */
class VerbsThreadTest {

    private static void refused(Executable call) {
        IllegalStateException e = assertThrows(IllegalStateException.class, call);
        assertTrue(e.getMessage().contains("rdma().execute"), e.getMessage());
    }

    /** {@code call}, named {@code name}, from the test thread while a loop owns the context: refused with the remedy. */
    private static Executable refused(String name, Executable call) {
        return () -> {
            IllegalStateException e = assertThrows(IllegalStateException.class, call, name + " from another thread");
            assertTrue(e.getMessage().contains("rdma().execute"), name + ": " + e.getMessage());
        };
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

    @Test
    void everyOtherVerbFromAnotherThreadThrowsNamingTheRemedyAndChangesNothing() throws Exception {
        int ipB = 0x0A000002;
        int port = 18515;
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            RdmaContext c = fx.node(3);
            RdmaCm cmA = RdmaCm.create(a, ip -> ip == ipB ? 2 : -1, RdmaCm.Options.defaults());
            RdmaCm cmB = RdmaCm.create(b, ip -> -1, RdmaCm.Options.defaults());
            AtomicReference<RdmaCm.ConnectRequest> request = new AtomicReference<>();
            cmB.listen(port, request::set);
            ProtectionDomain pd = a.allocPd();
            CompletionQueue cq = a.createCq(16);
            SharedReceiveQueue srq = a.createSrq(pd, 16, 1);
            QueuePair qp = a.createQp(pd, QpInitAttr.rc(cq, cq));
            QueuePair connecting = a.createQp(pd, QpInitAttr.rc(cq, cq));
            MemoryRegion mr = pd.allocMr(4096, RcPair.ALL);
            cmA.connect(ipB, port, connecting, new byte[0]);
            for (int i = 0; i < 1000 && request.get() == null; i++) {
                fx.advance(RdmaFixture.MS);
            }
            RdmaCm.ConnectRequest req = request.get();
            assertNotNull(req, "B's listener got A's connection request");
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqB = b.createCq(16);
            QueuePair qb = b.createQp(pdB, QpInitAttr.rc(cqB, cqB));
            Gsi gsi = c.attachGsi(new GsiAgent() {
                @Override
                public void onMessage(int srcNode, int srcIp, int qkey, MemorySegment m, long offset, int length) {
                }

                @Override
                public long poll(long now) {
                    return Long.MAX_VALUE;
                }
            });
            long sent = a.counter(RdmaCounter.PACKETS_SENT);
            List<Datapath> loops = List.of(new Datapath(a.link(), Datapath.Idle.backoff()),
                    new Datapath(b.link(), Datapath.Idle.backoff()), new Datapath(c.link(), Datapath.Idle.backoff()));
            loops.forEach(Datapath::start);
            try {
                assertAll(
                        refused("allocPd", a::allocPd),
                        refused("congestion", a::congestion),
                        refused("createCq", () -> a.createCq(4)),
                        refused("createSrq", () -> a.createSrq(pd, 4, 1)),
                        refused("createQp", () -> a.createQp(pd, QpInitAttr.rc(cq, cq))),
                        refused("attachIp", () -> a.attachIp(null)),
                        refused("setObserver", () -> a.setObserver(null)),
                        refused("queuePairs", a::queuePairs),
                        refused("context poll", () -> a.poll(0)),
                        refused("queryDevice", a::queryDevice),
                        refused("queryPort", () -> a.queryPort(1)),
                        refused("queryGid", () -> a.queryGid(1, 0)),
                        refused("pollAsyncEvent", a::pollAsyncEvent),
                        refused("onAsyncEvent", () -> a.onAsyncEvent(null)),
                        refused("createCompChannel", a::createCompChannel),
                        refused("ackCqEvents", () -> cq.ackCqEvents(0)),
                        refused("arm SRQ", () -> srq.arm(1)),
                        refused("attachGsi", () -> a.attachGsi(null)),
                        refused("regMr", () -> pd.regMr(Arena.ofAuto().allocate(64), Access.LOCAL_WRITE)),
                        refused("allocMr", () -> pd.allocMr(64, Access.LOCAL_WRITE)),
                        refused("dealloc PD", pd::close),
                        refused("dereg MR", mr::close),
                        refused("destroy CQ", cq::close),
                        refused("CQ onEvent", () -> cq.onEvent(() -> { })),
                        refused("poll CQ batch", () -> cq.poll(new WorkCompletion[1], 1)),
                        refused("destroy SRQ", srq::close),
                        refused("query QP", () -> qp.query(new QpAttr())),
                        refused("destroy QP", qp::close),
                        refused("GSI send", () -> gsi.send(1, 0, 64, (m, at) -> { })),
                        refused("GSI detach", gsi::detach),
                        refused("CM create", () -> RdmaCm.create(a, ip -> -1, RdmaCm.Options.defaults())),
                        refused("CM listen", () -> cmA.listen(port + 1, r -> { })),
                        refused("CM unlisten", () -> cmB.unlisten(port)),
                        refused("CM onDisconnect", () -> cmA.onDisconnect(q -> { })),
                        refused("CM connect", () -> cmA.connect(ipB, port, qp, new byte[0])),
                        refused("CM disconnect", () -> cmA.disconnect(connecting)),
                        refused("CM release", () -> cmA.release(connecting)),
                        refused("CM accept", () -> req.accept(qb, new byte[0])),
                        refused("CM reject", () -> req.reject(new byte[0])),
                        refused("CM close", cmA::close),
                        refused("close context", a::close));
            } finally {
                for (Datapath d : loops) {
                    d.close();
                }
            }
            // Nothing the refused calls would have changed did change.
            assertEquals(sent, a.counter(RdmaCounter.PACKETS_SENT), "the refused calls sent nothing");
            assertEquals(List.of(qp, connecting), a.queuePairs(), "no QP was created or destroyed");
            assertFalse(qp.isDestroyed());
            RdmaException e = assertThrows(RdmaException.class, pd::close, "the PD still has its QPs, SRQ and region");
            assertTrue(e.getMessage().contains("still has"), e.getMessage());
            req.accept(qb, new byte[0]); // on the owner (no loop runs now): taken
        }
    }
}
