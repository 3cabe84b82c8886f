package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.transport.RcRequester;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.DeviceAttr;
import dev.nupa.roce.verbs.Gid;
import dev.nupa.roce.verbs.PortAttr;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.TransferMode;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * ibv_query_device, ibv_query_port and ibv_query_gid: each limit queryDevice reports is the one the context enforces,
 * checked by creating up to it (which works) and one past it (which throws).
 */
class VerbsQueryTest {

    /** {@code create} works {@code limit} times, and throws naming the limit the next time. */
    private static <T> List<T> upTo(int limit, Supplier<T> create, String named) {
        List<T> made = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            made.add(create.get());
        }
        RdmaException e = assertThrows(RdmaException.class, create::get, "one more than " + named + " = " + limit);
        assertTrue(e.getMessage().contains(named), e.getMessage());
        return made;
    }

    private static QpInitAttr rc(CompletionQueue cq, int sendWr, int recvWr, int sendSge, int recvSge, int inline) {
        return new QpInitAttr(QpType.RC, cq, cq, null, sendWr, recvWr, sendSge, recvSge, inline, false, TransferMode.PACKET);
    }

    @Test
    void theObjectCountsQueryDeviceReportsAreTheOnesTheContextEnforces() {
        try (RdmaFixture fx = new RdmaFixture(); Arena arena = Arena.ofConfined()) {
            RdmaContext ctx = fx.node(1); // the fixture opens contexts with 64 QP and 64 region slots
            DeviceAttr d = ctx.queryDevice();
            assertEquals(62, d.maxQp(), "64 QP numbers less QP 0 and 1");
            assertEquals(63, d.maxMr(), "64 region slots less slot 0, whose key would be 0");
            assertEquals(62 * RdmaContext.MAX_QP_RD_ATOM, d.maxResRdAtom(), "each QP keeps its own READ/atomic resources");

            List<ProtectionDomain> pds = upTo(d.maxPd(), ctx::allocPd, "max_pd");
            ProtectionDomain pd = pds.get(0);
            pds.get(1).close();
            ctx.allocPd(); // a deallocated one makes room

            List<CompletionQueue> cqs = upTo(d.maxCq(), () -> ctx.createCq(1), "max_cq");
            cqs.get(0).close();
            CompletionQueue cq = ctx.createCq(4);

            upTo(d.maxSrq(), () -> ctx.createSrq(pd, 1, 1), "max_srq");
            cqs.get(1).close();
            CompletionQueue qpCq = ctx.createCq(16);
            upTo(d.maxQp(), () -> ctx.createQp(pd, QpInitAttr.rc(qpCq, qpCq).withCapacity(1, 1)), "QP numbers");
            upTo(d.maxMr(), () -> pd.regMr(arena.allocate(64), Access.LOCAL_WRITE), "memory region slots");
            assertEquals(cq.capacity(), 4);
        }
    }

    @Test
    void theSizeLimitsQueryDeviceReportsAreTheOnesTheContextEnforces() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext ctx = fx.node(1);
            DeviceAttr d = ctx.queryDevice();
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(d.maxCqe());
            assertEquals(d.maxCqe(), cq.capacity());
            assertThrows(RdmaException.class, () -> ctx.createCq(d.maxCqe() + 1), "max_cqe + 1");

            ctx.createSrq(pd, d.maxSrqWr(), 1).close();
            ctx.createSrq(pd, 1, d.maxSrqSge()).close();
            assertThrows(RdmaException.class, () -> ctx.createSrq(pd, d.maxSrqWr() + 1, 1), "max_srq_wr + 1");
            assertThrows(RdmaException.class, () -> ctx.createSrq(pd, 1, d.maxSrqSge() + 1), "max_srq_sge + 1");

            ctx.createQp(pd, rc(cq, d.maxQpWr(), d.maxQpWr(), 1, 1, 0)).close();
            ctx.createQp(pd, rc(cq, 1, 1, d.maxSge(), d.maxSge(), d.maxInlineData())).close();
            assertThrows(RdmaException.class, () -> ctx.createQp(pd, rc(cq, d.maxQpWr() + 1, 1, 1, 1, 0)), "max_qp_wr + 1 sends");
            assertThrows(RdmaException.class, () -> ctx.createQp(pd, rc(cq, 1, d.maxQpWr() + 1, 1, 1, 0)), "max_qp_wr + 1 receives");
            assertThrows(RdmaException.class, () -> ctx.createQp(pd, rc(cq, 1, 1, d.maxSge() + 1, 1, 0)), "max_sge + 1");
            assertThrows(RdmaException.class, () -> ctx.createQp(pd, rc(cq, 1, 1, 1, d.maxSge() + 1, 0)), "max_sge + 1");
            assertThrows(RdmaException.class, () -> ctx.createQp(pd, rc(cq, 1, 1, 1, 1, d.maxInlineData() + 1)), "inline + 1");

            // READ/atomic depth: max_qp_rd_atom bounds what a QP answers (max_dest_rd_atomic), max_qp_init_rd_atom what it
            // keeps outstanding (max_rd_atomic).
            QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq));
            qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(0),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            int rtrMask = QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                    | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER;
            QpAttr rtr = new QpAttr().qpState(QpState.RTR).destNode(2).pathMtu(1024).destQpNum(5).rqPsn(0).minRnrTimer(1);
            RdmaException dest = assertThrows(RdmaException.class, () -> qp.modify(rtr.maxDestRdAtomic(d.maxQpRdAtom() + 1), rtrMask));
            assertTrue(dest.getMessage().contains("max_dest_rd_atomic"), dest.getMessage());
            qp.modify(rtr.maxDestRdAtomic(d.maxQpRdAtom()), rtrMask);
            int rtsMask = QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                    | QpAttrMask.MAX_QP_RD_ATOMIC;
            QpAttr rts = new QpAttr().qpState(QpState.RTS).sqPsn(0).timeout(8).retryCnt(7).rnrRetry(7);
            RdmaException init = assertThrows(RdmaException.class, () -> qp.modify(rts.maxRdAtomic(d.maxQpInitRdAtom() + 1), rtsMask));
            assertTrue(init.getMessage().startsWith("max_rd_atomic"), init.getMessage());
            qp.modify(rts.maxRdAtomic(d.maxQpInitRdAtom()), rtsMask);
            assertEquals(QpState.RTS, qp.state());
        }
    }

    @Test
    void theDeviceSaysWhatItIsAndItsGuidNamesTheNode() {
        try (RdmaFixture fx = new RdmaFixture()) {
            DeviceAttr one = fx.node(1).queryDevice();
            DeviceAttr three = fx.node(3).queryDevice();
            assertEquals(0x024E_0000_0000_0001L, one.nodeGuid());
            assertEquals(0x024E_0000_0000_0003L, three.nodeGuid());
            assertNotEquals(one.nodeGuid(), three.nodeGuid());
            assertEquals(one.nodeGuid(), one.sysImageGuid());
            assertEquals(DeviceAttr.ATOMIC_HCA, one.atomicCap());
            assertEquals(0xFFFFFF, one.vendorId());
            assertEquals(1, one.physPortCnt());
        }
    }

    @Test
    void thePortIsActiveItsMtuIsTheLargestPathMtuTheLinkCarriesAndOtherPortsDoNotExist() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext jumbo = fx.node(1); // link MTU 9000
            RdmaContext ethernet = fx.node(2, dev -> dev, 1500);
            PortAttr p = jumbo.queryPort(1);
            assertEquals(PortAttr.PORT_ACTIVE, p.state());
            assertEquals(5, p.activeMtu(), "IBV_MTU_4096");
            assertEquals(5, p.maxMtu());
            assertEquals(PortAttr.LINK_LAYER_ETHERNET, p.linkLayer());
            assertEquals(0, p.gidTblLen(), "no IP layer, no GID");
            assertEquals(1, p.pkeyTblLen());

            PortAttr e = ethernet.queryPort(1);
            assertEquals(3, e.activeMtu(), "IBV_MTU_1024: 2048 + " + RcRequester.MAX_HEADERS + " header bytes exceed 1500");
            // What the port reports is what modify lets a QP's path be: that MTU passes, the next one up does not.
            CompletionQueue cq = ethernet.createCq(4);
            QueuePair qp = ethernet.createQp(ethernet.allocPd(), QpInitAttr.rc(cq, cq));
            qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(0),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            int rtrMask = QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                    | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER;
            QpAttr rtr = new QpAttr().qpState(QpState.RTR).destNode(1).destQpNum(5).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(1);
            RdmaException tooBig = assertThrows(RdmaException.class,
                    () -> qp.modify(rtr.pathMtu(PortAttr.bytes(e.activeMtu() + 1)), rtrMask));
            assertTrue(tooBig.getMessage().contains("exceeds the link MTU"), tooBig.getMessage());
            qp.modify(rtr.pathMtu(PortAttr.bytes(e.activeMtu())), rtrMask);
            assertEquals(1024, qp.query(new QpAttr()).pathMtu);

            for (int bad : new int[] {0, 2}) {
                RdmaException x = assertThrows(RdmaException.class, () -> jumbo.queryPort(bad));
                assertTrue(x.getMessage().contains("port " + bad + " does not exist; a context has port 1"), x.getMessage());
                assertThrows(RdmaException.class, () -> jumbo.queryGid(bad, 0));
            }
        }
    }

    @Test
    void theGidTableHoldsTheRoceV2GidOfTheIpLayersAddress() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext ip = fx.ipNode(1); // 10.0.0.2
            RdmaContext bare = fx.node(2);
            assertEquals(1, ip.queryPort(1).gidTblLen());
            Gid gid = ip.queryGid(1, 0);
            assertEquals("::ffff:10.0.0.2", gid.toString());
            assertEquals(new Gid(0, 0x0000_FFFF_0A00_0002L), gid);
            assertEquals(RdmaFixture.ip(1), gid.ipv4());
            assertEquals(0xFF, gid.raw()[10] & 0xFF);
            assertEquals(10, gid.raw()[12]);
            RdmaException past = assertThrows(RdmaException.class, () -> ip.queryGid(1, 1));
            assertTrue(past.getMessage().contains("GID index 1 is outside port 1's table of 1 entry"), past.getMessage());
            assertThrows(RdmaException.class, () -> ip.queryGid(1, -1));
            RdmaException none = assertThrows(RdmaException.class, () -> bare.queryGid(1, 0));
            assertTrue(none.getMessage().contains("attachIp"), none.getMessage());
        }
    }
}
