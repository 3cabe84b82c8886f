package dev.nupa.roce.cm;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.NeighborDirectory;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.Gsi;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.GsiAgent;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.CmMad;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.Opcode;
import io.vertx.core.Future;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Responder resources and initiator depth against a scripted peer (a node whose QP 1 the test speaks for, with
 * crafted MADs): IBA 12.7.29 / 12.7.30, the REP offers no more than the REQ did, and each QP's max_dest_rd_atomic
 * and max_rd_atomic follow what the two messages settled.
 */
class RdmaCmResourcesTest {
    private static final int IP_A = 0x0A000001;
    private static final int IP_B = 0x0A000002;
    private static final int PORT = 18515;
    /** What the CM answers and asks for itself ({@code Options.rdAtomic}, 4 by default). */
    private static final int OWN = RdmaCm.Options.defaults().rdAtomic();

    /** QP 1 of a node without a CM: keeps every MAD that arrives and sends the ones the test writes. */
    private static final class ScriptedPeer implements GsiAgent {
        final List<MemorySegment> received = new ArrayList<>();
        Gsi gsi;

        @Override
        public void onMessage(int srcNode, int srcIp, int qkey, MemorySegment m, long offset, int length) {
            received.add(MemorySegment.ofArray(m.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE)));
        }

        @Override
        public long poll(long now) {
            return Long.MAX_VALUE;
        }

        void send(int node, Gsi.Writer mad) {
            assertTrue(gsi.send(node, 0, Bth.LENGTH + Deth.LENGTH + CmMad.LENGTH, (m, o) -> {
                Bth.write(m, o, Opcode.UD_SEND_ONLY, false, 0, Bth.DEFAULT_PKEY, RdmaCm.CM_QPN, false, 0);
                Deth.write(m, o + Bth.LENGTH, CmMad.GSI_QKEY, RdmaCm.CM_QPN);
                mad.write(m, o + Bth.LENGTH + Deth.LENGTH);
            }), "room in the ring");
        }

        /** The last message of {@code id} that arrived. */
        MemorySegment last(int id) {
            for (int i = received.size() - 1; i >= 0; i--) {
                if (CmMad.attribute(received.get(i), 0) == id) {
                    return received.get(i);
                }
            }
            throw new AssertionError("no " + CmMad.name(id) + " arrived");
        }

        /** How many messages of {@code id} arrived. */
        long count(int id) {
            return received.stream().filter(m -> CmMad.attribute(m, 0) == id).count();
        }
    }

    private static ScriptedPeer scripted(RdmaContext ctx) {
        ScriptedPeer p = new ScriptedPeer();
        p.gsi = ctx.attachGsi(p);
        return p;
    }

    private static void publish(RdmaContext ctx, int ip) {
        new NeighborDirectory(ctx.link().device()).publish(List.of(new NeighborDirectory.Binding(ip, 24, ctx.node())));
    }

    private static RdmaCm cm(RdmaContext ctx) {
        return RdmaCm.create(ctx, new NeighborDirectory(ctx.link().device())::lookup, RdmaCm.Options.defaults().withResend(10 * MS, 5));
    }

    /** What the passive CM made of a crafted REQ: its REP, and the QP it accepted with (in RTS). */
    private record Accepted(MemorySegment rep, QueuePair qp, QueuePair scriptedQp, ProtectionDomain pd, CompletionQueue scriptedCq,
            Future<RdmaCm.Connection> done, ScriptedPeer peer) {
    }

    /**
     * Node 1 (scripted) sends node 2's CM a REQ for its RC QP offering {@code resources} and {@code depth}, reads the
     * REP and answers with the RTU; its QP is then connected by hand as the two messages say, to talk to the accepted one.
     */
    private static Accepted acceptScripted(RdmaFixture fx, int resources, int depth) {
        return acceptScripted(fx, resources, depth, true);
    }

    /** As above; with {@code rtu} false the RTU is never sent (as if lost every time) and the accept is left pending. */
    private static Accepted acceptScripted(RdmaFixture fx, int resources, int depth, boolean rtu) {
        RdmaContext ca = fx.node(1);
        RdmaContext cb = fx.node(2);
        publish(cb, IP_B);
        ScriptedPeer peer = scripted(ca);
        RdmaCm cmB = cm(cb);
        ProtectionDomain pdB = cb.allocPd();
        CompletionQueue cqB = cb.createCq(64);
        AtomicReference<QueuePair> accepted = new AtomicReference<>();
        AtomicReference<Future<RdmaCm.Connection>> done = new AtomicReference<>();
        cmB.listen(PORT, req -> {
            accepted.set(cb.createQp(pdB, QpInitAttr.rc(cqB, cqB)));
            done.set(req.accept(accepted.get(), new byte[0]));
        });
        CompletionQueue cqA = ca.createCq(64);
        QueuePair qa = ca.createQp(ca.allocPd(), QpInitAttr.rc(cqA, cqA));
        int comm = 0x5EED;
        long tid = 0x77;
        int psnA = 0x100; // what the scripted QP receives first
        peer.send(2, (m, p) -> CmMad.writeReq(m, p, tid, comm, PORT, 0x0200000000000001L, qa.qpNum(), psnA, resources, depth,
                7, 7, 5, 17, IP_A, IP_B, 0xC000 | qa.qpNum(), new byte[0]));
        fx.pump();
        MemorySegment rep = peer.last(CmMad.REP);
        assertEquals(comm, CmMad.remoteComm(rep, 0));
        assertNotNull(done.get(), "the listener accepted");
        if (rtu) {
            peer.send(2, (m, p) -> CmMad.writeShort(m, p, CmMad.RTU, tid, comm, CmMad.localComm(rep, 0)));
            fx.pump();
            assertTrue(done.get().succeeded(), "the RTU completed the accept: " + done.get().cause());
        }
        assertEquals(QpState.RTS, accepted.get().state());
        // The scripted side's QP, by hand: it receives from the PSN its REQ named and sends from the REP's.
        RdmaCm.toInit(qa);
        RdmaFixture.rtr(qa, accepted.get(), 4096, psnA);
        RdmaFixture.rts(qa, CmMad.repPsn(rep, 0), 8, 7, 7);
        return new Accepted(rep, accepted.get(), qa, pdB, cqA, done.get(), peer);
    }

    /** The scripted side WRITEs {@code value} into a fresh region of the accepted side's, which it returns. */
    private static MemoryRegion writeFromScripted(RdmaFixture fx, Accepted a, long value) {
        MemoryRegion mb = a.pd.allocMr(4096, RcPair.ALL);
        MemoryRegion ma = a.scriptedQp.pd().allocMr(4096, RcPair.ALL);
        ma.memory().set(ValueLayout.JAVA_LONG, 0, value);
        a.scriptedQp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(ma, 0, 8).remote(mb.addr(), mb.rkey()));
        fx.pump();
        assertStatus(WcStatus.SUCCESS, poll(a.scriptedCq));
        assertEquals(value, mb.memory().get(ValueLayout.JAVA_LONG, 0));
        return mb;
    }

    @Test
    void theRepAnswersNoMoreReadsThanTheRequestAsksForAndThePassiveQpFollows() {
        // {REQ responder resources, REQ initiator depth, REP responder resources, REP initiator depth}
        int[][] cases = {{2, 1, 1, 2}, {1, 3, 3, 1}, {16, 16, OWN, OWN}};
        for (int[] c : cases) {
            try (RdmaFixture fx = new RdmaFixture()) {
                Accepted a = acceptScripted(fx, c[0], c[1]);
                assertEquals(c[2], CmMad.repResponderResources(a.rep, 0), "REP responder resources for REQ " + c[0] + "/" + c[1]);
                assertEquals(c[3], CmMad.repInitiatorDepth(a.rep, 0), "REP initiator depth for REQ " + c[0] + "/" + c[1]);
                QpAttr attr = a.qp.query(new QpAttr());
                assertEquals(c[2], attr.maxDestRdAtomic, "the passive QP answers what its REP offered");
                assertEquals(c[3], attr.maxRdAtomic, "the passive QP keeps no more outstanding than the REQ's peer answers");
                // And the connection carries a READ from the scripted side.
                MemoryRegion mb = a.pd.allocMr(4096, RcPair.ALL);
                mb.memory().set(ValueLayout.JAVA_LONG, 0, 0x1234_5678L);
                MemoryRegion ma = a.scriptedQp.pd().allocMr(4096, RcPair.ALL);
                a.scriptedQp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                        .local(ma, 0, 8).remote(mb.addr(), mb.rkey()));
                fx.pump();
                assertStatus(WcStatus.SUCCESS, poll(a.scriptedCq));
                assertEquals(0x1234_5678L, ma.memory().get(ValueLayout.JAVA_LONG, 0));
            }
        }
    }

    /**
     * A REQ with responder resources and initiator depth 0 (no READs or atomics either way) is accepted, as Linux's
     * CM accepts it; the REP offers none, the passive QP answers none, and a READ its peer sends anyway gets a NAK
     * (invalid request, as rxe answers one beyond max_dest_rd_atomic): REM_INV_REQ_ERR there, ERR on both QPs.
     */
    @Test
    void aRequestOfferingNoReadsGetsARepOfferingNoneAndAReadSentAnywayIsRefused() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Accepted a = acceptScripted(fx, 0, 0);
            assertEquals(0, CmMad.repResponderResources(a.rep, 0));
            assertEquals(0, CmMad.repInitiatorDepth(a.rep, 0));
            QpAttr attr = a.qp.query(new QpAttr());
            assertEquals(0, attr.maxDestRdAtomic);
            assertEquals(0, attr.maxRdAtomic);
            // WRITEs need no responder resources: the connection works for them.
            MemoryRegion mb = writeFromScripted(fx, a, 42L);
            MemoryRegion ma = a.scriptedQp.pd().allocMr(4096, RcPair.ALL);
            a.scriptedQp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(ma, 8, 8).remote(mb.addr(), mb.rkey()));
            fx.pump();
            assertStatus(WcStatus.REM_INV_REQ_ERR, poll(a.scriptedCq));
            assertEquals(QpState.ERR, a.qp.state(), "a class C error on the responder (IBA 9.9.3.1.3)");
        }
    }

    /** The active side takes the REP's figures (Linux's cm_rep_handler): its QP's attributes follow them. */
    @Test
    void theActiveQpTakesTheRepsFigures() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext ca = fx.node(1);
            RdmaContext cb = fx.node(2);
            publish(ca, IP_A);
            publish(cb, IP_B);
            RdmaCm cmA = cm(ca);
            ScriptedPeer peer = scripted(cb);
            CompletionQueue cqA = ca.createCq(64);
            QueuePair qa = ca.createQp(ca.allocPd(), QpInitAttr.rc(cqA, cqA));
            Future<RdmaCm.Connection> f = cmA.connect(IP_B, PORT, qa, new byte[0]);
            fx.pump();
            MemorySegment req = peer.last(CmMad.REQ);
            assertEquals(OWN, CmMad.reqResponderResources(req, 0));
            assertEquals(OWN, CmMad.reqInitiatorDepth(req, 0));
            // The REP answers one READ at a time and sends none: within what the REQ offered.
            peer.send(1, (m, p) -> CmMad.writeRep(m, p, CmMad.tid(req, 0), 0x5EED, CmMad.localComm(req, 0), 77, 0x200, 1, 0,
                    17, 7, 0x0200000000000002L, new byte[0]));
            fx.pump();
            assertTrue(f.succeeded(), "connected: " + f.cause());
            peer.last(CmMad.RTU); // and answered the REP
            QpAttr attr = qa.query(new QpAttr());
            assertEquals(1, attr.maxRdAtomic, "no more READs outstanding than the REP's responder resources");
            assertEquals(0, attr.maxDestRdAtomic, "no more answered than the REP's initiator depth");
        }
    }

    /**
     * IBA 12.9.6: with every RTU lost, the first packet on the accepted QP establishes the connection (COMM_EST, as
     * Linux's ib_cm_notify): the accept completes at the next resend time instead of resending the REP until it gives up.
     */
    @Test
    void theFirstPacketOnTheQpStandsForALostRtu() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Accepted a = acceptScripted(fx, OWN, OWN, false);
            assertFalse(a.done.isComplete(), "no RTU yet");
            fx.advance(11 * MS);
            fx.pump();
            assertFalse(a.done.isComplete(), "nothing received: the REP is resent, the accept still waits");
            assertEquals(2, a.peer.count(CmMad.REP), "the REP and one resend");
            writeFromScripted(fx, a, 7L);
            fx.advance(11 * MS);
            fx.pump();
            assertTrue(a.done.succeeded(), "the WRITE stood for the RTU: " + a.done.cause());
            assertEquals(a.scriptedQp.qpNum(), a.done.result().peerQpn());
            fx.advance(100 * MS);
            fx.pump();
            assertEquals(2, a.peer.count(CmMad.REP), "no REP resent once established");
        }
    }
}
