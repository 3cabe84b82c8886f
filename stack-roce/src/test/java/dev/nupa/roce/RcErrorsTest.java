package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The error paths of IBA 9.7.5 and 10.3: remote access violations are NAKed and never write a byte,
 * RNR and transport retries run out into the matching status, and an error flushes what was queued.
 */
class RcErrorsTest {

    private static SendWorkRequest write(RcPair p, long remoteAddr, int rkey, int length) {
        return new SendWorkRequest().wrId(11).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(p.mrA, 0, length).remote(remoteAddr, rkey);
    }

    /** A violation completes REM_ACCESS_ERR at the requester, moves both QPs to ERR and leaves the target untouched. */
    private static void assertAccessError(RcPair p, SendWorkRequest wr) {
        p.mrA.memory().asSlice(0, 4096).fill((byte) 0x5A);
        p.qa.postSend(wr);
        p.qa.postSend(write(p, p.mrB.addr(), p.mrB.rkey(), 16).wrId(12)); // queued behind: flushed
        p.fx.pump();
        WorkCompletion wc = poll(p.cqA);
        assertStatus(WcStatus.REM_ACCESS_ERR, wc);
        assertEquals(11, wc.wrId);
        WorkCompletion flushed = poll(p.cqA);
        assertStatus(WcStatus.WR_FLUSH_ERR, flushed);
        assertEquals(12, flushed.wrId);
        assertEquals(QpState.ERR, p.qa.state());
        assertEquals(QpState.ERR, p.qb.state());
        assertEquals(-1, p.mrB.memory().mismatch(java.lang.foreign.MemorySegment.ofArray(new byte[(int) p.mrB.length()])),
                "no byte of the target changed");
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aBadRkeyIsNakedWithRemoteAccessError(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            assertAccessError(p, write(p, p.mrB.addr(), p.mrB.rkey() ^ 0x1, 100));
            if (mode == TransferMode.DIRECT) {
                assertEquals(1, p.a.counter(RdmaCounter.DIRECT_FALLBACKS), "the failed check went as packets");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void anAccessPastTheRegionIsNakedWithRemoteAccessError(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            assertAccessError(p, write(p, p.mrB.addr() + p.mrB.length() - 50, p.mrB.rkey(), 100));
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aRegionWithoutTheAccessRightIsNakedWithRemoteAccessError(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion readOnly = p.pdB.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
            assertAccessError(p, write(p, readOnly.addr(), readOnly.rkey(), 100));
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aRegionOfAnotherProtectionDomainIsNakedWithRemoteAccessError(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion other = p.b.allocPd().allocMr(4096, RcPair.ALL);
            assertAccessError(p, write(p, other.addr(), other.rkey(), 100));
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aMisalignedAtomicIsAnInvalidRequest(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 8).remote(p.mrB.addr() + 4, p.mrB.rkey()).compareAdd(1));
            p.fx.pump();
            assertStatus(WcStatus.REM_INV_REQ_ERR, poll(p.cqA));
            assertEquals(0L, p.mrB.memory().get(ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void aSendWithNoReceivePostedIsRnrNakedUntilTheRetriesRunOut() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024, 7, 2);
            RdmaException e = assertThrows(RdmaException.class, () -> p.qa.modify(new QpAttr().rnrRetry(3), QpAttrMask.RNR_RETRY));
            assertTrue(e.getMessage().contains("from RTS to RTS may not set attribute(s) RNR_RETRY"), e.getMessage());
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 64));
            p.fx.pump();
            assertEquals(1, p.b.counter(RdmaCounter.RNR_NAKS_SENT));
            assertEquals(0, p.cqA.size(), "waiting out the RNR timer, not failed yet");
            for (int i = 0; i < 10 && p.cqA.size() == 0; i++) {
                p.fx.advance(1 * MS); // min_rnr_timer 1 = 10 us
            }
            assertStatus(WcStatus.RNR_RETRY_EXC_ERR, poll(p.cqA));
            assertEquals(3, p.b.counter(RdmaCounter.RNR_NAKS_SENT), "the first try and two retries");
            assertEquals(QpState.ERR, p.qa.state());
            assertEquals(QpState.RTS, p.qb.state(), "an RNR NAK does not hurt the responder");
        }
    }

    @Test
    void rnrRetrySevenRetriesUntilAReceiveIsPosted() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 64));
            for (int i = 0; i < 50; i++) {
                p.fx.advance(1 * MS);
            }
            assertTrue(p.b.counter(RdmaCounter.RNR_NAKS_SENT) >= 40, "retrying forever: " + p.b.counter(RdmaCounter.RNR_NAKS_SENT));
            assertEquals(0, p.cqA.size());
            p.qb.postRecv(new RecvWorkRequest().wrId(2).local(p.mrB, 0, 64));
            p.fx.advance(1 * MS);
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertStatus(WcStatus.SUCCESS, poll(p.cqB));
        }
    }

    @Test
    void aPeerThatIsGoneEndsInRetryExceededAndFlushesTheRest() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024, 3, 7);
            p.fx.devices.get(1).close(); // node 2 leaves the fabric
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 64);
            p.qa.postSend(s.wrId(1));
            p.qa.postSend(s.wrId(2));
            p.qa.postSend(s.wrId(3));
            long timeout = 4096L << 8; // timeout 8 in RcPair: 4.096 us * 2^8
            for (int i = 0; i < 10 && p.cqA.size() == 0; i++) {
                p.fx.now += timeout;
                p.a.poll(p.fx.now);
            }
            WorkCompletion wc = poll(p.cqA);
            assertStatus(WcStatus.RETRY_EXC_ERR, wc);
            assertEquals(1, wc.wrId);
            assertStatus(WcStatus.WR_FLUSH_ERR, poll(p.cqA));
            assertStatus(WcStatus.WR_FLUSH_ERR, poll(p.cqA));
            assertEquals(4, p.a.counter(RdmaCounter.TIMEOUTS), "the first try and three retries");
            p.qa.postSend(s.wrId(4)); // ERR still takes posts, and flushes them
            assertStatus(WcStatus.WR_FLUSH_ERR, poll(p.cqA));
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aMessageLongerThanTheReceiveIsALengthErrorOnBothSides(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) { // DIRECT: the SEND goes as packets, for the responder to refuse
            p.qb.postRecv(new RecvWorkRequest().wrId(7).local(p.mrB, 0, 1000));
            p.qb.postRecv(new RecvWorkRequest().wrId(8).local(p.mrB, 0, 1000));
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 3000));
            p.fx.pump();
            assertStatus(WcStatus.REM_INV_REQ_ERR, poll(p.cqA));
            WorkCompletion r = poll(p.cqB);
            assertStatus(WcStatus.LOC_LEN_ERR, r);
            assertEquals(7, r.wrId);
            WorkCompletion flushed = poll(p.cqB);
            assertStatus(WcStatus.WR_FLUSH_ERR, flushed);
            assertEquals(8, flushed.wrId);
        }
    }

    @Test
    void aBadLocalKeyIsALocalProtectionError() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            SendWorkRequest s = new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED);
            s.sg.add(p.mrA.addr(), 64, p.mrA.lkey() ^ 0x3);
            p.qa.postSend(s);
            assertStatus(WcStatus.LOC_PROT_ERR, poll(p.cqA));
            assertEquals(QpState.ERR, p.qa.state());
        }
    }

    @Test
    void theStateMachineRefusesIllegalTransitionsAndNamesThem() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.node(1);
            ProtectionDomain pd = a.allocPd();
            CompletionQueue cq = a.createCq(16);
            QueuePair qp = a.createQp(pd, QpInitAttr.rc(cq, cq));
            RdmaException e = assertThrows(RdmaException.class,
                    () -> qp.modify(new QpAttr().qpState(QpState.RTS), QpAttrMask.STATE));
            assertTrue(e.getMessage().contains("RESET -> RTS"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> qp.modify(new QpAttr().qpState(QpState.INIT), QpAttrMask.STATE));
            assertTrue(e.getMessage().contains("missing required attribute(s) ACCESS_FLAGS|PKEY_INDEX|PORT"), e.getMessage());
            assertEquals(QpState.RESET, qp.state(), "a refused modify changes nothing");
            e = assertThrows(RdmaException.class, () -> qp.postSend(new SendWorkRequest()));
            assertTrue(e.getMessage().contains("needs RTS"), e.getMessage());
            assertThrows(RdmaException.class, () -> qp.postRecv(new RecvWorkRequest()), "RESET takes no receives");
            qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            e = assertThrows(RdmaException.class, () -> qp.modify(new QpAttr().qpState(QpState.RTR).pathMtu(1000).destNode(2)
                    .destQpNum(3).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(1), QpAttrMask.STATE | QpAttrMask.AV
                    | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN | QpAttrMask.MAX_DEST_RD_ATOMIC
                    | QpAttrMask.MIN_RNR_TIMER));
            assertTrue(e.getMessage().contains("not an InfiniBand MTU"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> qp.modify(new QpAttr().qpState(QpState.RTR).pathMtu(1024).destNode(2)
                    .destQpNum(3).rqPsn(0).maxDestRdAtomic(1).minRnrTimer(1), QpAttrMask.STATE | QpAttrMask.AV
                    | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN | QpAttrMask.MAX_DEST_RD_ATOMIC
                    | QpAttrMask.MIN_RNR_TIMER | QpAttrMask.ALT_PATH)); // allowed by IBA table 91, refused here
            assertTrue(e.getMessage().contains("path migration (ALT_PATH, PATH_MIG_STATE) is not supported"), e.getMessage());
            assertEquals(QpState.INIT, qp.state(), "a refused modify changes nothing");
            qp.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
            assertEquals(QpState.ERR, qp.state());
            qp.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
            assertEquals(QpState.RESET, qp.state());
            e = assertThrows(RdmaException.class, () -> pd.close());
            assertTrue(e.getMessage().contains("close them first"), e.getMessage());
            qp.close();
            cq.close();
            pd.close();
        }
    }

    @Test
    void aCompletionQueueThatOverflowsSaysSoAndStopsTheQp() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RcPair p = new RcPair(fx, TransferMode.PACKET, 1024);
            CompletionQueue tiny = p.a.createCq(2);
            QueuePair q = p.qpOn(tiny);
            p.signaledWrites(q, 0, 3);
            fx.pump();
            RdmaException e = assertThrows(RdmaException.class, () -> tiny.poll(new WorkCompletion()));
            assertTrue(e.getMessage().contains("overrun"), e.getMessage());
            assertEquals(QpState.ERR, q.state());
            assertFalse(tiny.overruns() == 0);
        }
    }

    @Test
    void aDirectRequesterNoticesARegionClosedAfterItWasCheckedAndUsed() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            MemoryRegion target = p.pdB.allocMr(4096, RcPair.ALL);
            SendWorkRequest w = write(p, target.addr(), target.rkey(), 64);
            p.qa.postSend(w.wrId(1));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertEquals(1, p.a.counter(RdmaCounter.DIRECT_OPS));
            target.close(); // ibv_dereg_mr: the key dies, its window is withdrawn
            p.qa.postSend(w.wrId(2));
            p.fx.pump();
            assertStatus(WcStatus.REM_ACCESS_ERR, poll(p.cqA));
            assertEquals(1, p.a.counter(RdmaCounter.DIRECT_FALLBACKS), "the cached check was not trusted");
        }
    }

    @Test
    void aWriteWithImmediateRnrNakedOnItsOnlyPacketSucceedsOnceAReceiveIsPosted() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).immData(5).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 100).remote(p.mrB.addr(), p.mrB.rkey()));
            p.fx.advance(MS);
            assertTrue(p.b.counter(RdmaCounter.RNR_NAKS_SENT) >= 1);
            p.qb.postRecv(new RecvWorkRequest().wrId(2).local(p.mrB, 8192, 0));
            p.fx.advance(MS);
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            WorkCompletion r = poll(p.cqB);
            assertStatus(WcStatus.SUCCESS, r);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
            assertEquals(QpState.RTS, p.qb.state(), "an RNR NAK leaves no message half open");
        }
    }

    @Test
    void aReceiveOnlyQpInRtrAcknowledgesWhatItReceives() {
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = fx.node(1);
            RdmaContext b = fx.node(2);
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(64);
            CompletionQueue cb = b.createCq(64);
            QueuePair qa = a.createQp(pa, QpInitAttr.rc(ca, ca));
            QueuePair qb = b.createQp(pb, QpInitAttr.rc(cb, cb));
            for (QueuePair q : new QueuePair[] {qa, qb}) {
                q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            }
            RdmaFixture.rtr(qa, qb, 1024, 40);
            RdmaFixture.rtr(qb, qa, 1024, 7);
            RdmaFixture.rts(qa, 7, 8, 7, 7); // qb stays in RTR: it only receives
            MemoryRegion ma = pa.allocMr(4096, RcPair.ALL);
            MemoryRegion mb = pb.allocMr(4096, RcPair.ALL);
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(ma, 0, 10);
            for (int i = 0; i < 3; i++) {
                qb.postRecv(new RecvWorkRequest().wrId(i).local(mb, 0, 100));
                qa.postSend(s.wrId(i));
            }
            fx.pump();
            for (int i = 0; i < 3; i++) {
                assertStatus(WcStatus.SUCCESS, poll(ca));
                assertStatus(WcStatus.SUCCESS, poll(cb));
            }
            assertEquals(0, a.counter(RdmaCounter.TIMEOUTS), "the RTR side's ACKs came without a timeout");
        }
    }

    @Test
    void aQpDrainingInSqdFinishesWhatItStartedAndStartsNothingNew() {
        // An 8-slot ring cuts the first WRITE midway; the QP then moves to SQD.
        try (RcPair p = new RcPair(new RdmaFixture(8), TransferMode.PACKET, 1024)) {
            SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 20_000).remote(p.mrB.addr(), p.mrB.rkey());
            p.qa.postSend(w.wrId(1));
            p.qa.modify(new QpAttr().qpState(QpState.SQD), QpAttrMask.STATE);
            p.qa.postSend(w.wrId(2));
            p.fx.pump();
            p.fx.advance(MS / 10);
            assertEquals(1, poll(p.cqA).wrId, "the started WRITE finished in SQD");
            assertEquals(0, p.cqA.size(), "the one posted in SQD waits");
            p.qa.modify(new QpAttr().qpState(QpState.RTS), QpAttrMask.STATE);
            p.fx.pump();
            assertEquals(2, poll(p.cqA).wrId);
        }
    }
}
