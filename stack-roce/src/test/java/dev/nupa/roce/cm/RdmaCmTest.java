package dev.nupa.roce.cm;

import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RcPair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RdmaFixture;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.FaultPlan;
import dev.nupa.l2.FaultyDevice;
import dev.nupa.l2.NeighborDirectory;
import io.vertx.core.Future;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The rdma_cm-style connection manager: connect, accept, private data, refusal, loss, disconnect. */
class RdmaCmTest {
    private static final int IP_A = 0x0A000001;
    private static final int IP_B = 0x0A000002;
    private static final int PORT = 18515;

    private record Side(RdmaContext ctx, RdmaCm cm, ProtectionDomain pd, CompletionQueue cq) {
        QueuePair qp() {
            return ctx.createQp(pd, QpInitAttr.rc(cq, cq));
        }
    }

    private static Side side(RdmaFixture fx, int node, int ip, UnaryOperator<dev.nupa.device.FabricDevice> wrap) {
        RdmaContext ctx = fx.node(node, wrap);
        NeighborDirectory nd = new NeighborDirectory(ctx.link().device());
        nd.publish(List.of(new NeighborDirectory.Binding(ip, 24, node)));
        RdmaCm cm = RdmaCm.create(ctx, nd::lookup, RdmaCm.Options.defaults().withResend(10 * MS, 5));
        return new Side(ctx, cm, ctx.allocPd(), ctx.createCq(64));
    }

    private static <T> T await(RdmaFixture fx, Future<T> f) {
        for (int i = 0; i < 1000 && !f.isComplete(); i++) {
            fx.advance(MS);
        }
        assertTrue(f.isComplete(), "the future completed");
        if (f.failed()) {
            throw new AssertionError("failed: " + f.cause().getMessage(), f.cause());
        }
        return f.result();
    }

    /** Private data arrive as the message's whole area, zero-padded: the text is what comes before the first zero. */
    private static String text(byte[] privateData) {
        int n = 0;
        while (n < privateData.length && privateData[n] != 0) {
            n++;
        }
        return new String(privateData, 0, n, StandardCharsets.US_ASCII);
    }

    private static void exchangeASend(RdmaFixture fx, Side from, QueuePair qf, Side to, QueuePair qt) {
        MemoryRegion mf = from.pd.allocMr(4096, RcPair.ALL);
        MemoryRegion mt = to.pd.allocMr(4096, RcPair.ALL);
        mf.memory().setString(0, "over the CM", StandardCharsets.US_ASCII);
        qt.postRecv(new RecvWorkRequest().wrId(1).local(mt, 0, 100));
        qf.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mf, 0, 12));
        fx.pump();
        assertStatus(WcStatus.SUCCESS, poll(to.cq));
        assertEquals("over the CM", mt.memory().getString(0, StandardCharsets.US_ASCII));
        assertStatus(WcStatus.SUCCESS, poll(from.cq));
    }

    @Test
    void aClientConnectsToAListenerAndBothQpsReachRtsWithPrivateDataExchanged() {
        runConnect(d -> d);
    }

    @Test
    void lostRequestsRepliesAndRtusAreResent() {
        // Node 2's receive side drops half its frames: REQs (and RTUs) get lost and are resent.
        runConnect(d -> d.address() == 2 ? new FaultyDevice(d, 5, FaultPlan.NONE, FaultPlan.NONE.withDrop(0.5)) : d);
    }

    private void runConnect(UnaryOperator<dev.nupa.device.FabricDevice> wrap) {
        try (RdmaFixture fx = new RdmaFixture()) {
            Side a = side(fx, 1, IP_A, wrap);
            Side b = side(fx, 2, IP_B, wrap);
            AtomicReference<QueuePair> accepted = new AtomicReference<>();
            AtomicReference<Future<RdmaCm.Connection>> serverSide = new AtomicReference<>();
            b.cm.listen(PORT, req -> {
                assertEquals(RdmaCm.MAX_CONNECT_PRIVATE, req.privateData().length, "the REQ's whole area, as rdma_cm gives it");
                assertEquals("hello", text(req.privateData()));
                assertEquals(1, req.peerNode());
                QueuePair q = b.qp();
                accepted.set(q);
                serverSide.set(req.accept(q, "welcome".getBytes(StandardCharsets.US_ASCII)));
            });
            QueuePair qa = a.qp();
            RdmaCm.Connection c = await(fx, a.cm.connect(IP_B, PORT, qa, "hello".getBytes(StandardCharsets.US_ASCII)));
            assertEquals(196, c.privateData().length, "the REP's whole area");
            assertEquals("welcome", text(c.privateData()));
            assertEquals(2, c.peerNode());
            assertEquals(accepted.get().qpNum(), c.peerQpn());
            RdmaCm.Connection s = await(fx, serverSide.get());
            assertEquals(qa.qpNum(), s.peerQpn());
            assertEquals(QpState.RTS, qa.state());
            assertEquals(QpState.RTS, accepted.get().state());
            exchangeASend(fx, a, qa, b, accepted.get());
            exchangeASend(fx, b, accepted.get(), a, qa);
        }
    }

    @Test
    void noListenerIsRefusedAndAnUnknownAddressFailsToResolve() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Side a = side(fx, 1, IP_A, d -> d);
            side(fx, 2, IP_B, d -> d);
            Future<RdmaCm.Connection> f = a.cm.connect(IP_B, 4000, a.qp(), new byte[0]);
            for (int i = 0; i < 10 && !f.isComplete(); i++) {
                fx.advance(MS);
            }
            assertTrue(f.failed());
            assertTrue(f.cause().getMessage().contains("connection refused: node 2 has no listener on port 4000"), f.cause().getMessage());
            assertTrue(f.cause() instanceof ConnectionRejected r && r.refused() && r.reason() == 8, "a refusal, REJ reason 8: " + f.cause());
            Future<RdmaCm.Connection> g = a.cm.connect(0x0A0000FE, PORT, a.qp(), new byte[0]);
            assertTrue(g.failed());
            assertTrue(g.cause().getMessage().contains("no fabric node holds 10.0.0.254"), g.cause().getMessage());
            Future<RdmaCm.Connection> h = a.cm.connect(IP_B, PORT, a.qp(), new byte[57]);
            assertTrue(h.cause().getMessage().contains("57 bytes of private data exceed the 56"), h.cause().getMessage());
        }
    }

    @Test
    void aPeerThatNeverAnswersTimesOut() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Side a = side(fx, 1, IP_A, d -> d);
            Side b = side(fx, 2, IP_B, d -> d);
            b.cm.close(); // node 2 keeps its address but runs no CM: the REQs vanish
            Future<RdmaCm.Connection> f = a.cm.connect(IP_B, PORT, a.qp(), new byte[0]);
            for (int i = 0; i < 100 && !f.isComplete(); i++) {
                fx.advance(5 * MS);
            }
            assertTrue(f.failed());
            assertTrue(f.cause().getMessage().contains("timed out: no REP after 5 resends"), f.cause().getMessage());
        }
    }

    @Test
    void aRequestGivenTimeIsResentPastItsCountUntilAPeerThatStartsLateAnswers() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Side a = side(fx, 1, IP_A, d -> d);
            Side b = side(fx, 2, IP_B, d -> d);
            b.cm.close(); // node 2 is starting: no CM answers yet
            QueuePair qa = a.qp();
            Future<RdmaCm.Connection> f = a.cm.connect(IP_B, PORT, qa, new byte[0], 300 * MS);
            for (int i = 0; i < 20; i++) {
                fx.advance(5 * MS);
            }
            assertTrue(!f.isComplete(), "past the 5 resends of 10 ms, the REQ is still resent within its 300 ms");
            RdmaCm late = RdmaCm.create(b.ctx, new NeighborDirectory(b.ctx.link().device())::lookup,
                    RdmaCm.Options.defaults().withResend(10 * MS, 5));
            AtomicReference<QueuePair> accepted = new AtomicReference<>();
            late.listen(PORT, req -> {
                accepted.set(b.qp());
                req.accept(accepted.get(), new byte[0]);
            });
            RdmaCm.Connection c = await(fx, f);
            assertEquals(accepted.get().qpNum(), c.peerQpn());
            exchangeASend(fx, a, qa, b, accepted.get());

            late.close(); // and one that never answers gives up once the time is spent, not before
            Future<RdmaCm.Connection> g = a.cm.connect(IP_B, PORT, a.qp(), new byte[0], 300 * MS);
            for (int i = 0; i < 50; i++) {
                fx.advance(5 * MS);
            }
            assertTrue(!g.isComplete(), "within its 300 ms");
            for (int i = 0; i < 40 && !g.isComplete(); i++) {
                fx.advance(5 * MS);
            }
            assertTrue(g.failed());
            var m = java.util.regex.Pattern.compile("timed out: no REP after (\\d+) resends").matcher(g.cause().getMessage());
            assertTrue(m.find() && Integer.parseInt(m.group(1)) > 5, "resent past its count of 5: " + g.cause().getMessage());
        }
    }

    @Test
    void aDisconnectMovesBothQpsToErrAndTellsThePeer() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Side a = side(fx, 1, IP_A, d -> d);
            Side b = side(fx, 2, IP_B, d -> d);
            AtomicReference<QueuePair> accepted = new AtomicReference<>();
            b.cm.listen(PORT, req -> {
                accepted.set(b.qp());
                req.accept(accepted.get(), new byte[0]);
            });
            AtomicReference<QueuePair> gone = new AtomicReference<>();
            b.cm.onDisconnect(gone::set);
            QueuePair qa = a.qp();
            MemoryRegion mb = b.pd.allocMr(4096, RcPair.ALL);
            await(fx, a.cm.connect(IP_B, PORT, qa, new byte[0]));
            fx.pump();
            accepted.get().postRecv(new RecvWorkRequest().wrId(7).local(mb, 0, 64));
            a.cm.disconnect(qa);
            fx.advance(MS);
            assertEquals(QpState.ERR, qa.state());
            assertEquals(QpState.ERR, accepted.get().state());
            assertEquals(accepted.get(), gone.get());
            WorkCompletion wc = poll(b.cq);
            assertStatus(WcStatus.WR_FLUSH_ERR, wc);
            assertEquals(7, wc.wrId);
        }
    }

    /**
     * The responder executed three WRITEs and owes their coalesced ACK (it goes out at its context's next poll) when its
     * application disconnects: the ACK goes out before the DREQ, so the requester completes the WRITEs with SUCCESS
     * instead of flushing them when the DREQ moves its QP to ERR (Linux's rxe acknowledges per packet: no peer loses one).
     */
    @Test
    void aDisconnectSendsTheAckOwedForExecutedRequestsBeforeItsDreq() {
        try (RdmaFixture fx = new RdmaFixture()) {
            Side a = side(fx, 1, IP_A, d -> d);
            Side b = side(fx, 2, IP_B, d -> d);
            AtomicReference<QueuePair> accepted = new AtomicReference<>();
            b.cm.listen(PORT, req -> {
                accepted.set(b.qp());
                req.accept(accepted.get(), new byte[0]);
            });
            QueuePair qa = a.qp();
            await(fx, a.cm.connect(IP_B, PORT, qa, new byte[0]));
            fx.pump();
            MemoryRegion ma = a.pd.allocMr(4096, RcPair.ALL);
            MemoryRegion mb = b.pd.allocMr(4096, RcPair.ALL);
            RdmaFixture.fill(ma.memory(), 7);
            long acks = b.ctx.counter(RdmaCounter.ACKS_SENT);
            for (int i = 0; i < 3; i++) {
                qa.postSend(new SendWorkRequest().wrId(i).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                        .local(ma, i * 64, 64).remote(mb.addr() + i * 64, mb.rkey()));
            }
            // Node 2's link takes the WRITEs and its responder executes them; their ACK waits for the context's poll.
            fx.links.get(fx.contexts.indexOf(b.ctx)).poll(64, fx.now);
            assertEquals(-1, ma.memory().asSlice(0, 192).mismatch(mb.memory().asSlice(0, 192)), "executed");
            assertEquals(acks, b.ctx.counter(RdmaCounter.ACKS_SENT), "not acknowledged yet");
            b.cm.disconnect(accepted.get());
            fx.pump();
            for (int i = 0; i < 3; i++) {
                WorkCompletion wc = poll(a.cq);
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(i, wc.wrId);
            }
            assertEquals(QpState.ERR, qa.state(), "and then the DREQ ended the connection");
            assertEquals(acks + 1, b.ctx.counter(RdmaCounter.ACKS_SENT), "one coalesced ACK");
        }
    }

    /**
     * Two contexts whose CMs know no fabric node for each other's address: the CM goes over RoCEv2 through their
     * IP layers, as it does to a Linux rdma_cm peer beyond a gateway (VmFabricTest runs rping against it). REQ, REP,
     * RTU, DREQ and DREP are 256-byte MADs; the connection carries a SEND each way; the path MTU is the IP one.
     */
    @Test
    void ipPeersConnectAndDisconnectOverRoceV2() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext ca = fx.ipNode(1);
            RdmaContext cb = fx.ipNode(2);
            RdmaCm.Options o = RdmaCm.Options.defaults().withResend(10 * MS, 5);
            Side a = new Side(ca, RdmaCm.create(ca, ip -> -1, o), ca.allocPd(), ca.createCq(64));
            Side b = new Side(cb, RdmaCm.create(cb, ip -> -1, o), cb.allocPd(), cb.createCq(64));
            AtomicReference<RdmaCm.ConnectRequest> request = new AtomicReference<>();
            AtomicReference<QueuePair> accepted = new AtomicReference<>();
            b.cm.listen(PORT, req -> {
                request.set(req);
                accepted.set(b.qp());
                req.accept(accepted.get(), "over RoCEv2".getBytes(StandardCharsets.US_ASCII));
            });
            AtomicReference<QueuePair> gone = new AtomicReference<>();
            b.cm.onDisconnect(gone::set);
            QueuePair qa = a.qp();
            RdmaCm.Connection c = await(fx, a.cm.connect(RdmaFixture.ip(2), PORT, qa, "hi".getBytes(StandardCharsets.US_ASCII)));
            assertEquals(-1, c.peerNode());
            assertEquals(RdmaFixture.ip(2), c.peerIp());
            assertEquals("over RoCEv2", text(c.privateData()));
            assertEquals(-1, request.get().peerNode());
            assertEquals(RdmaFixture.ip(1), request.get().peerIp(), "the requester's address, from rdma_cm's header");
            assertEquals("hi", text(request.get().privateData()));
            fx.pump();
            assertEquals(QpState.RTS, accepted.get().state());
            assertEquals(1024, qa.query(new QpAttr()).pathMtu, "the CM's path MTU for IP peers");
            assertEquals(1024, accepted.get().query(new QpAttr()).pathMtu);
            exchangeASend(fx, a, qa, b, accepted.get());
            exchangeASend(fx, b, accepted.get(), a, qa);
            a.cm.disconnect(qa);
            fx.advance(MS);
            assertEquals(QpState.ERR, accepted.get().state());
            assertEquals(accepted.get(), gone.get());
            for (RdmaContext ctx : List.of(ca, cb)) {
                assertEquals(ctx.counter(RdmaCounter.PACKETS_SENT), ctx.counter(RdmaCounter.ROCEV2_SENT), "all of it as RoCEv2");
                assertEquals(0, ctx.counter(RdmaCounter.MALFORMED));
            }
            assertTrue(ca.counter(RdmaCounter.ROCEV2_SENT) >= 4, "REQ, RTU, DREQ and a SEND at least: " + ca.counters());
        }
    }
}
