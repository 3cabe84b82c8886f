package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.PeerEvent;
import dev.nupa.device.PeerListener;
import dev.nupa.roce.verbs.AsyncEventType;
import dev.nupa.roce.verbs.PortAttr;
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
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * ibv_async_event: each event the stack raises, raised where the stack decides the thing it reports, on virtual time,
 * and taken with {@link RdmaContext#pollAsyncEvent}.
 */
class AsyncEventTest {

    /** Takes the next event of {@code ctx} and checks its type and the QP it names. */
    private static AsyncEvent expect(RdmaContext ctx, AsyncEventType type, QueuePair qp) {
        AsyncEvent e = ctx.pollAsyncEvent();
        assertTrue(e != null, "expected " + type + " on QP " + qp.qpNum() + ", got none");
        assertEquals(type, e.type(), e.toString());
        assertSame(qp, e.qp(), e.toString());
        return e;
    }

    private static void expectNone(RdmaContext ctx) {
        AsyncEvent e = ctx.pollAsyncEvent();
        assertNull(e, "no (further) event expected, got " + e);
    }

    private static SendWorkRequest send(MemoryRegion mr) {
        return new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mr, 0, 64);
    }

    @Test
    void retriesRunningOutRaiseQpFatal() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024, 3, 7);
            expectNone(p.a);
            fx.devices.get(1).close(); // node 2 leaves the fabric: nothing answers
            p.qa.postSend(send(p.mrA).wrId(1));
            for (int i = 0; i < 10 && p.cqA.size() == 0; i++) {
                fx.now += 4096L << 8; // timeout 8 in RcPair: 4.096 us * 2^8
                p.a.poll(fx.now);
            }
            assertStatus(WcStatus.RETRY_EXC_ERR, poll(p.cqA));
            AsyncEvent e = expect(p.a, AsyncEventType.QP_FATAL, p.qa);
            assertEquals(1, e.type().value, "IBV_EVENT_QP_FATAL");
            expectNone(p.a);
        }
    }

    @Test
    void rnrRetriesRunningOutRaiseQpFatalAndTheResponderRaisesNothing() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024, 7, 2);
            p.qa.postSend(send(p.mrA).wrId(1)); // node 2 posted no receive
            for (int i = 0; i < 10 && p.cqA.size() == 0; i++) {
                fx.advance(1 * MS);
            }
            assertStatus(WcStatus.RNR_RETRY_EXC_ERR, poll(p.cqA));
            expect(p.a, AsyncEventType.QP_FATAL, p.qa);
            expectNone(p.a);
            expectNone(p.b);
        }
    }

    @Test
    void aQpWhosePeerNodeIsLostRaisesQpFatal() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024);
            p.qa.postSend(send(p.mrA).wrId(1)); // RNR-NAKed, waiting: no receive at node 2
            fx.pump();
            expectNone(p.a);
            assertEquals(1, p.a.device.endQpsTo(2)); // what the fabric's liveness does when node 2 dies
            assertStatus(WcStatus.RETRY_EXC_ERR, poll(p.cqA));
            expect(p.a, AsyncEventType.QP_FATAL, p.qa);
            expectNone(p.a);

            // A QP with nothing outstanding ends too, and says so.
            RcPair idle = new RcPair(fx, fx.node(0), fx.node(3));
            assertEquals(1, idle.a.device.endQpsTo(3));
            assertEquals(QpState.ERR, idle.qa.state());
            expect(idle.a, AsyncEventType.QP_FATAL, idle.qa);
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aRemoteAccessNakRaisesQpAccessErrOnTheResponderAndNothingOnTheRequester(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 100).remote(p.mrB.addr(), p.mrB.rkey() ^ 1));
            p.fx.pump();
            assertStatus(WcStatus.REM_ACCESS_ERR, poll(p.cqA)); // the requester learns from its completion
            expectNone(p.a);
            AsyncEvent e = expect(p.b, AsyncEventType.QP_ACCESS_ERR, p.qb);
            assertEquals(3, e.type().value, "IBV_EVENT_QP_ACCESS_ERR");
            assertEquals(QpState.ERR, p.qb.state());
            expectNone(p.b);
        }
    }

    @Test
    void anInvalidRequestRaisesQpReqErrOnTheResponder() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 8).remote(p.mrB.addr() + 4, p.mrB.rkey()).compareAdd(1)); // misaligned
            p.fx.pump();
            assertStatus(WcStatus.REM_INV_REQ_ERR, poll(p.cqA));
            expect(p.b, AsyncEventType.QP_REQ_ERR, p.qb);
            expectNone(p.b);
            expectNone(p.a);
        }
    }

    @Test
    void aCompletionQueueOverrunRaisesCqErrOnce() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024);
            CompletionQueue tiny = p.a.createCq(2);
            QueuePair q = p.qpOn(tiny);
            p.signaledWrites(q, 0, 2);
            fx.pump();
            expectNone(p.a); // full, not overrun
            p.signaledWrites(q, 2, 5);
            fx.pump();
            assertTrue(tiny.overruns() > 1, "several completions did not fit: " + tiny.overruns());
            AsyncEvent e = p.a.pollAsyncEvent();
            assertEquals(AsyncEventType.CQ_ERR, e.type(), String.valueOf(e));
            assertSame(tiny, e.cq());
            assertEquals(0, e.type().value, "IBV_EVENT_CQ_ERR");
            expectNone(p.a);
        }
    }

    /** Node 1's QP {@code b1}, which takes its receives from {@code srq}, connected to node 0's {@code a1}. */
    private record SrqPair(RdmaContext a, RdmaContext b, QueuePair a1, QueuePair b1, QueuePair plain, SharedReceiveQueue srq,
            CompletionQueue ca, CompletionQueue cb, MemoryRegion ma, MemoryRegion mb) {
        static SrqPair open(RdmaFixture fx) {
            RdmaContext a = fx.node(0);
            RdmaContext b = fx.node(1);
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(1024);
            CompletionQueue cb = b.createCq(1024);
            SharedReceiveQueue srq = b.createSrq(pb, 16, 1);
            QueuePair a1 = a.createQp(pa, QpInitAttr.rc(ca, ca));
            QueuePair b1 = b.createQp(pb, QpInitAttr.rc(cb, cb).withSrq(srq));
            RdmaFixture.connect(a1, b1, 1024);
            QueuePair plain = b.createQp(pb, QpInitAttr.rc(cb, cb));
            return new SrqPair(a, b, a1, b1, plain, srq, ca, cb, pa.allocMr(4096, RcPair.ALL), pb.allocMr(4096, RcPair.ALL));
        }

        void postRecv() {
            srq.postRecv(new RecvWorkRequest().wrId(100).local(mb, 0, 1000));
        }
    }

    @Test
    void aQpOfAnSrqEnteringErrRaisesLastWqeReachedWhetherModifiedOrFailed() {
        try (RdmaFixture fx = new RdmaFixture()) {
            SrqPair s = SrqPair.open(fx);
            s.plain.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
            expectNone(s.b); // not a QP of an SRQ
            s.b1.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
            AsyncEvent e = expect(s.b, AsyncEventType.QP_LAST_WQE_REACHED, s.b1);
            assertEquals(16, e.type().value, "IBV_EVENT_QP_LAST_WQE_REACHED");
            expectNone(s.b);
        }
        try (RdmaFixture fx = new RdmaFixture()) {
            SrqPair s = SrqPair.open(fx);
            s.a1.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(s.ma, 0, 8).remote(s.mb.addr(), s.mb.rkey() ^ 1));
            fx.pump();
            expect(s.b, AsyncEventType.QP_ACCESS_ERR, s.b1); // the error first, then the end of the SRQ's use
            expect(s.b, AsyncEventType.QP_LAST_WQE_REACHED, s.b1);
            expectNone(s.b);
        }
    }

    @Test
    void anArmedSrqLimitRaisesSrqLimitReachedOnceWhenCrossedAndDisarms() {
        try (RdmaFixture fx = new RdmaFixture()) {
            SrqPair s = SrqPair.open(fx);
            for (int i = 0; i < 4; i++) {
                s.postRecv();
            }
            assertThrows(RdmaException.class, () -> s.srq.arm(17), "more than max_wr");
            assertThrows(RdmaException.class, () -> s.srq.arm(-1));
            s.srq.arm(2);
            assertEquals(2, s.srq.limit());
            for (int sent = 1; sent <= 2; sent++) {
                s.a1.postSend(send(s.ma));
                fx.pump();
                assertEquals(4 - sent, s.srq.size());
                expectNone(s.b); // 3, then 2 left: not fewer than 2
            }
            s.a1.postSend(send(s.ma));
            fx.pump();
            assertEquals(1, s.srq.size());
            AsyncEvent e = s.b.pollAsyncEvent();
            assertEquals(AsyncEventType.SRQ_LIMIT_REACHED, e.type(), String.valueOf(e));
            assertSame(s.srq, e.srq());
            assertEquals(15, e.type().value, "IBV_EVENT_SRQ_LIMIT_REACHED");
            assertEquals(0, s.srq.limit(), "disarmed by the event");
            s.a1.postSend(send(s.ma));
            fx.pump();
            assertEquals(0, s.srq.size());
            expectNone(s.b);
        }
    }

    @Test
    void eventsNobodyTakesAreDroppedPastTheQueueAndCounted() {
        try (RdmaFixture fx = new RdmaFixture()) {
            SrqPair s = SrqPair.open(fx);
            int raised = RdmaContext.ASYNC_EVENT_QUEUE + 44;
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < raised; i++) {
                s.postRecv();
                s.srq.arm(1); // the next receive taken leaves none: one event each round
                s.a1.postSend(send(s.ma));
                fx.pump();
                while (s.ca.poll(wc) || s.cb.poll(wc)) {
                    assertEquals(WcStatus.SUCCESS, wc.status);
                }
            }
            assertEquals(44, s.b.counter(RdmaCounter.ASYNC_EVENTS_DROPPED));
            for (int i = 0; i < RdmaContext.ASYNC_EVENT_QUEUE; i++) {
                assertEquals(AsyncEventType.SRQ_LIMIT_REACHED, s.b.pollAsyncEvent().type());
            }
            expectNone(s.b);
        }
    }

    /** A device whose peer listeners the test can tell what the liveness thread would. */
    private static final class Liveness {
        final List<PeerListener> listeners = new CopyOnWriteArrayList<>();

        FabricDevice wrap(FabricDevice d) {
            return (FabricDevice) Proxy.newProxyInstance(FabricDevice.class.getClassLoader(), new Class<?>[] {FabricDevice.class},
                    (proxy, m, args) -> {
                        if (m.getName().equals("addPeerListener")) {
                            listeners.add((PeerListener) args[0]);
                        } else if (m.getName().equals("removePeerListener")) {
                            listeners.remove((PeerListener) args[0]);
                        }
                        try {
                            return m.invoke(d, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }

        /** Fires {@code e} on a thread of its own, as the liveness thread does. */
        void fire(PeerEvent e) throws InterruptedException {
            Thread t = Thread.ofPlatform().start(() -> listeners.forEach(l -> l.onPeerEvent(e)));
            t.join();
        }
    }

    @Test
    void theNodeEvictedFromTheFabricRaisesPortErrAndItsPortIsDown() throws InterruptedException {
        try (RdmaFixture fx = new RdmaFixture()) {
            Liveness liveness = new Liveness();
            RdmaContext ctx = fx.node(1, liveness::wrap);
            assertEquals(PortAttr.PORT_ACTIVE, ctx.queryPort(1).state());
            liveness.fire(new PeerEvent(PeerEvent.Kind.EVICTED, 2, 1)); // another node's eviction is not this port's
            liveness.fire(new PeerEvent(PeerEvent.Kind.DOWN, 2, 1));
            ctx.poll(fx.now);
            expectNone(ctx);
            assertEquals(PortAttr.PORT_ACTIVE, ctx.queryPort(1).state());

            liveness.fire(new PeerEvent(PeerEvent.Kind.EVICTED, 1, 1));
            assertEquals(PortAttr.PORT_DOWN, ctx.queryPort(1).state());
            ctx.poll(fx.now); // the context's thread raises it
            AsyncEvent e = ctx.pollAsyncEvent();
            assertEquals(AsyncEventType.PORT_ERR, e.type(), String.valueOf(e));
            assertEquals(1, e.port());
            assertEquals(10, e.type().value, "IBV_EVENT_PORT_ERR");
            ctx.poll(fx.now);
            expectNone(ctx); // once
        }
    }

    @Test
    void theHandlerRunsFromPollOnTheContextsThread() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            int[] runs = new int[1];
            p.b.onAsyncEvent(() -> {
                runs[0]++;
                p.b.checkThread();
                while (p.b.pollAsyncEvent() != null) {
                    // taken
                }
            });
            p.fx.pump();
            assertEquals(0, runs[0], "no event, no call");
            p.qa.postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 8).remote(p.mrB.addr(), p.mrB.rkey() ^ 1));
            p.fx.pump();
            assertEquals(1, runs[0]);
            p.fx.pump();
            assertEquals(1, runs[0], "taken: not called again");
        }
    }
}
