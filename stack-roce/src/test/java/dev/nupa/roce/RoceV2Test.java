package dev.nupa.roce;

import dev.nupa.roce.ip.Ipv4RoceIp;
import dev.nupa.roce.transport.RcRequester;
import dev.nupa.roce.verbs.Access;
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
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.Icrc;
import dev.nupa.roce.wire.Opcode;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.fill;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.IpCounter;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.wire.Ipv4Address;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * RoCEv2 (IBA annex A17): QPs that name their peer by IPv4 address send UDP 4791 datagrams with an ICRC through
 * the node's IP layer, and take the peer's from it; a datagram whose ICRC does not hold is counted and dropped.
 */
class RoceV2Test {
    private static final int ALL = RcPair.ALL;

    /** RC QPs qa (node 1) and qb (node 2) connected by IP address, not by fabric node. */
    private record IpPair(RdmaFixture fx, RdmaContext a, RdmaContext b, CompletionQueue cqA, CompletionQueue cqB,
                          QueuePair qa, QueuePair qb, MemoryRegion mrA, MemoryRegion mrB) {
        static IpPair open(int mtu) {
            RdmaFixture fx = new RdmaFixture();
            RdmaContext a = fx.ipNode(1);
            RdmaContext b = fx.ipNode(2);
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqA = a.createCq(1024);
            CompletionQueue cqB = b.createCq(1024);
            QueuePair qa = a.createQp(pdA, QpInitAttr.rc(cqA, cqA).withMode(TransferMode.PACKET).withCapacity(256, 256));
            QueuePair qb = b.createQp(pdB, QpInitAttr.rc(cqB, cqB).withMode(TransferMode.PACKET).withCapacity(256, 256));
            for (QueuePair q : List.of(qa, qb)) {
                q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1)
                                .qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            }
            // PSNs just under 2^24, so the exchange wraps.
            rtr(qa, RdmaFixture.ip(2), qb.qpNum(), mtu, 0xFFFFF8);
            rtr(qb, RdmaFixture.ip(1), qa.qpNum(), mtu, 0xFFFFFC);
            RdmaFixture.rts(qa, 0xFFFFFC, 8, 7, 7);
            RdmaFixture.rts(qb, 0xFFFFF8, 8, 7, 7);
            return new IpPair(fx, a, b, cqA, cqB, qa, qb, pdA.allocMr(64 * 1024, ALL), pdB.allocMr(64 * 1024, ALL));
        }

        static void rtr(QueuePair q, int peerIp, int peerQpn, int mtu, int peerPsn) {
            q.modify(new QpAttr().qpState(QpState.RTR).destIp(peerIp).pathMtu(mtu).destQpNum(peerQpn).rqPsn(peerPsn)
                            .maxDestRdAtomic(4).minRnrTimer(1),
                    QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                            | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        }
    }

    /**
     * RoCEv2 through the IP layer (out through {@code RoceIp.send}, in through its listener) allocates nothing: rounds of
     * WRITEs, READs and SENDs after a warm-up, measured with the JVM's per-thread allocation counter as
     * VerbsZeroAllocationTest does (some round after the warm-up allocated nothing at all).
     */
    @Test
    void roceV2PostingTransmittingAndPollingAllocateNothing() {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        IpPair p = IpPair.open(1024);
        try (RdmaFixture fx = p.fx()) {
            SendWorkRequest write = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA(), 0, 3000).remote(p.mrB().addr(), p.mrB().rkey());
            SendWorkRequest read = new SendWorkRequest().opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA(), 4096, 3000).remote(p.mrB().addr(), p.mrB().rkey());
            SendWorkRequest send = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA(), 0, 64);
            RecvWorkRequest recv = new RecvWorkRequest().local(p.mrB(), 16_384, 64);
            WorkCompletion wc = new WorkCompletion();
            long completions = 0;
            long[] allocated = new long[8];
            for (int round = 0; round < allocated.length; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 2_000; i++) {
                    p.qb().postRecv(recv);
                    p.qa().postSend(write);
                    p.qa().postSend(read);
                    p.qa().postSend(send);
                    fx.pump();
                    while (p.cqA().poll(wc)) {
                        completions += wc.status == WcStatus.SUCCESS ? 1 : 1_000_000;
                    }
                    while (p.cqB().poll(wc)) {
                        completions += wc.status == WcStatus.SUCCESS ? 1 : 1_000_000;
                    }
                }
                allocated[round] = threads.getCurrentThreadAllocatedBytes() - before;
            }
            assertEquals(allocated.length * 2_000 * 4, completions, "every request completed with success");
            assertTrue(p.a().counter(RdmaCounter.ROCEV2_SENT) >= allocated.length * 2_000 * 3, "the requests went as RoCEv2");
            long least = java.util.Arrays.stream(allocated, 2, allocated.length).min().orElseThrow();
            assertEquals(0, least, "bytes allocated by rounds of 2,000 x 3 requests and a receive over RoCEv2, after two of"
                    + " warm-up: " + java.util.Arrays.toString(allocated));
        }
    }

    @Test
    void rcOperationsBetweenIpPeersTravelAsRoceV2() {
        IpPair p = IpPair.open(1024);
        try (RdmaFixture fx = p.fx()) {
            assertTrue(p.qa().toString().contains("peer 10.0.0.3"), p.qa().toString());
            QpAttr q = p.qa().query(new QpAttr());
            assertEquals(RdmaFixture.ip(2), q.destIp);
            assertEquals(-1, q.destNode);

            // A SEND with immediate, a WRITE of 40,000 bytes (40 packets at MTU 1024), a READ back, two atomics.
            fill(p.mrA().memory().asSlice(0, 40_000), 3);
            p.qb().postRecv(new RecvWorkRequest().wrId(9).local(p.mrB(), 0, 4096));
            p.qa().postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND_WITH_IMM).immData(77)
                    .sendFlags(SendFlags.SIGNALED).local(p.mrA(), 0, 3000));
            fx.await(p.cqB(), 1, RdmaFixture.MS);
            WorkCompletion r = poll(p.cqB());
            assertStatus(WcStatus.SUCCESS, r);
            assertEquals(3000, r.byteLen);
            assertEquals(77, r.immData);
            assertEquals(-1, p.mrA().memory().asSlice(0, 3000).mismatch(p.mrB().memory().asSlice(0, 3000)));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA()));

            p.qa().postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA(), 0, 40_000).remote(p.mrB().addr() + 8192, p.mrB().rkey()));
            fx.await(p.cqA(), 1, RdmaFixture.MS);
            assertStatus(WcStatus.SUCCESS, poll(p.cqA()));
            assertEquals(-1, p.mrA().memory().asSlice(0, 40_000).mismatch(p.mrB().memory().asSlice(8192, 40_000)));

            p.qb().postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrB(), 50_000, 5000).remote(p.mrA().addr() + 100, p.mrA().rkey()));
            fx.await(p.cqB(), 1, RdmaFixture.MS);
            assertStatus(WcStatus.SUCCESS, poll(p.cqB()));
            assertEquals(-1, p.mrA().memory().asSlice(100, 5000).mismatch(p.mrB().memory().asSlice(50_000, 5000)));

            p.mrB().memory().set(ValueLayout.JAVA_LONG, 64, 100L);
            p.qa().postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA(), 60_000, 8).remote(p.mrB().addr() + 64, p.mrB().rkey()).compareAdd(5));
            p.qa().postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.ATOMIC_CMP_AND_SWP).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA(), 60_008, 8).remote(p.mrB().addr() + 64, p.mrB().rkey()).compareAdd(105).swap(7));
            fx.await(p.cqA(), 2, RdmaFixture.MS);
            assertStatus(WcStatus.SUCCESS, poll(p.cqA()));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA()));
            assertEquals(100L, p.mrA().memory().get(ValueLayout.JAVA_LONG, 60_000));
            assertEquals(105L, p.mrA().memory().get(ValueLayout.JAVA_LONG, 60_008));
            assertEquals(7L, p.mrB().memory().get(ValueLayout.JAVA_LONG, 64));

            // Every packet went as RoCEv2 through IP, each way, and every ICRC held.
            for (RdmaContext c : List.of(p.a(), p.b())) {
                assertEquals(c.counter(RdmaCounter.PACKETS_SENT), c.counter(RdmaCounter.ROCEV2_SENT), c.counters().toString());
                assertEquals(c.counter(RdmaCounter.PACKETS_RECEIVED), c.counter(RdmaCounter.ROCEV2_RECEIVED), c.counters().toString());
                assertEquals(0, c.counter(RdmaCounter.BAD_ICRC));
                assertEquals(0, c.counter(RdmaCounter.RETRANSMITS), "nothing was lost on the way");
            }
            assertTrue(p.a().counter(RdmaCounter.ROCEV2_SENT) >= 40 + 3 + 2, p.a().counters().toString());
            assertEquals(p.a().counter(RdmaCounter.ROCEV2_SENT), fx.stack(0).counter(IpCounter.UDP_OUT_DATAGRAMS));
        }
    }

    @Test
    void aDatagramWhoseIcrcDoesNotHoldIsCountedAndDropped() {
        IpPair p = IpPair.open(1024);
        try (RdmaFixture fx = p.fx()) {
            p.qb().postRecv(new RecvWorkRequest().wrId(9).local(p.mrB(), 0, 4096));
            // A well-formed RC SEND ONLY to qb, with the PSN it expects, but 4 bytes of trailer that are no ICRC.
            MemorySegment d = Arena.ofAuto().allocate(Bth.LENGTH + 16 + 4);
            Bth.write(d, 0, Opcode.RC_SEND_ONLY, false, 0, Bth.DEFAULT_PKEY, p.qb().qpNum(), true, 0xFFFFF8);
            d.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN), Bth.LENGTH + 16, 0x12345678);
            assertEquals(SendStatus.OK, fx.stack(0).sendUdp(0xC000 | p.qa().qpNum(), RdmaFixture.ip(2), Icrc.UDP_PORT, d, 0,
                    (int) d.byteSize()));
            fx.pump();
            assertEquals(1, p.b().counter(RdmaCounter.BAD_ICRC));
            assertEquals(0, p.b().counter(RdmaCounter.ROCEV2_RECEIVED));
            assertEquals(0, p.cqB().size(), "nothing was delivered");

            // A datagram too short to hold even an ICRC is dropped the same way.
            assertEquals(SendStatus.OK, fx.stack(0).sendUdp(0xC000, RdmaFixture.ip(2), Icrc.UDP_PORT, d, 0, 3));
            fx.pump();
            assertEquals(2, p.b().counter(RdmaCounter.BAD_ICRC));

            // The QP goes on: a real SEND arrives.
            p.qa().postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA(), 0, 16));
            fx.await(p.cqB(), 1, RdmaFixture.MS);
            assertStatus(WcStatus.SUCCESS, poll(p.cqB()));
        }
    }

    @Test
    void udDatagramsToAnIpPeerCarryTheSendersIpv4HeaderInTheGrh() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.ipNode(1);
            RdmaContext b = fx.ipNode(2);
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(16);
            CompletionQueue cb = b.createCq(16);
            QueuePair qa = UdAndSrqTest.ud(a, pa, ca, 0x1111);
            QueuePair qb = UdAndSrqTest.ud(b, pb, cb, 0x2222);
            MemoryRegion ma = pa.allocMr(8192, ALL);
            MemoryRegion mb = pb.allocMr(8192, ALL);
            fill(ma.memory().asSlice(0, 500), 5);
            qb.postRecv(new RecvWorkRequest().wrId(1).local(mb, 0, 2000));
            qa.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(ma, 0, 500)
                    .udIp(RdmaFixture.ip(2), qb.qpNum(), 0x2222));
            fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(ca));
            WorkCompletion r = poll(cb);
            assertStatus(WcStatus.SUCCESS, r);
            assertEquals(540, r.byteLen);
            assertEquals(qa.qpNum(), r.srcQp);
            assertEquals(-1, r.srcNode, "an IP peer is no fabric node");
            // RoCEv2 over IPv4 (A17.4.5.2): 20 bytes of zero, then the datagram's IPv4 header.
            MemorySegment grh = mb.memory().asSlice(0, 40);
            assertEquals(-1, grh.asSlice(0, 20).mismatch(MemorySegment.ofArray(new byte[20])));
            assertEquals(0x45, grh.get(ValueLayout.JAVA_BYTE, 20) & 0xFF);
            var be = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
            assertEquals(Ipv4Address.toString(RdmaFixture.ip(1)), Ipv4Address.toString(grh.get(be, 20 + 12)));
            assertEquals(Ipv4Address.toString(RdmaFixture.ip(2)), Ipv4Address.toString(grh.get(be, 20 + 16)));
            assertEquals(-1, ma.memory().asSlice(0, 500).mismatch(mb.memory().asSlice(40, 500)));
            assertEquals(1, a.counter(RdmaCounter.ROCEV2_SENT));
            assertEquals(1, b.counter(RdmaCounter.ROCEV2_RECEIVED));
        }
    }

    @Test
    void anAddressVectorThatCannotBeServedIsRefusedWithTheReason() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext fabricOnly = fx.node(0);
            RdmaContext withIp = fx.ipNode(1);
            for (RdmaContext c : List.of(fabricOnly, withIp)) {
                c.allocPd();
            }
            QueuePair plain = rcInInit(fabricOnly, TransferMode.PACKET);
            RdmaException e = assertThrows(RdmaException.class, () -> toRtr(plain, new QpAttr().destIp(RdmaFixture.ip(2))));
            assertTrue(e.getMessage().contains("no IP layer for RoCEv2; attach it"), e.getMessage());

            QueuePair direct = rcInInit(withIp, TransferMode.DIRECT);
            e = assertThrows(RdmaException.class, () -> toRtr(direct, new QpAttr().destIp(RdmaFixture.ip(2))));
            assertTrue(e.getMessage().contains("create it with TransferMode.PACKET"), e.getMessage());

            QueuePair packet = rcInInit(withIp, TransferMode.PACKET);
            e = assertThrows(RdmaException.class, () -> toRtr(packet, new QpAttr().destIp(RdmaFixture.ip(2)).destNode(2)));
            assertTrue(e.getMessage().contains("name one"), e.getMessage());
            assertEquals(QpState.INIT, packet.state(), "a refused modify changes nothing");

            // A link that carries a 1024-byte path MTU in fabric frames, but not with IPv4, UDP and ICRC around it.
            RdmaContext narrow = fx.ipNode(3, 1024 + RcRequester.MAX_HEADERS + 16);
            QueuePair tight = rcInInit(narrow, TransferMode.PACKET);
            e = assertThrows(RdmaException.class, () -> toRtr(tight, new QpAttr().destIp(RdmaFixture.ip(2)).pathMtu(1024)));
            assertTrue(e.getMessage().contains("pick a smaller path MTU"), e.getMessage());
            toRtr(tight, new QpAttr().destIp(RdmaFixture.ip(2)).pathMtu(512));
            assertEquals(QpState.RTR, tight.state());

            e = assertThrows(RdmaException.class, () -> withIp.attachIp(new Ipv4RoceIp(fx.stack(0))));
            assertTrue(e.getMessage().contains("already speaks RoCEv2"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> fabricOnly.attachIp(new Ipv4RoceIp(fx.stack(0))));
            assertTrue(e.getMessage().contains("another link"), e.getMessage());

            ProtectionDomain pd = fabricOnly.allocPd();
            CompletionQueue cq = fabricOnly.createCq(4);
            QueuePair udq = UdAndSrqTest.ud(fabricOnly, pd, cq, 1);
            MemoryRegion m = pd.allocMr(64, ALL);
            e = assertThrows(RdmaException.class, () -> udq.postSend(new SendWorkRequest().opcode(WrOpcode.SEND).local(m, 0, 8)
                    .udIp(RdmaFixture.ip(2), 5, 1)));
            assertTrue(e.getMessage().contains("no IP layer for RoCEv2"), e.getMessage());
        }
    }

    /** INIT to RTR with {@code av}'s address vector and path MTU, and what the transition needs besides. */
    private static void toRtr(QueuePair q, QpAttr av) {
        q.modify(av.qpState(QpState.RTR).destQpNum(9).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
    }

    private static QueuePair rcInInit(RdmaContext c, TransferMode mode) {
        CompletionQueue cq = c.createCq(4);
        QueuePair q = c.createQp(c.allocPd(), QpInitAttr.rc(cq, cq).withMode(mode));
        q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(0),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        return q;
    }
}
