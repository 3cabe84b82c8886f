package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.fill;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.transport.QpTransport;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * SENDs on {@link TransferMode#DIRECT} QPs: placed in the receive the peer posted next (its receive mirror),
 * completed on both sides as the packet path completes them, and sent as packets whenever the receiver
 * would have to refuse or scatter them, so that errors and RNR waits stay the responder's.
 */
class DirectSendTest {

    private static SendWorkRequest send(long id) {
        return new SendWorkRequest(2).wrId(id).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED);
    }

    private static long packetsSent(RcPair p) {
        return p.a.counter(RdmaCounter.PACKETS_SENT);
    }

    @Test
    void sendsLandInThePostedReceivesInOrderWithoutPacketsAndCompleteOnBothSides() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            fill(p.mrA.memory(), 11);
            for (int i = 0; i < 5; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(100 + i).local(p.mrB, 4096L * i, 4096));
            }
            AtomicInteger events = new AtomicInteger();
            p.cqB.onEvent(events::incrementAndGet);
            p.cqB.requestNotify(true); // solicited only: the SEND_WITH_IMM below asks for it
            long before = packetsSent(p);
            p.qa.postSend(send(1).local(p.mrA, 0, 1000));
            p.qa.postSend(send(2).opcode(WrOpcode.SEND_WITH_IMM).immData(0x1234)
                    .sendFlags(SendFlags.SIGNALED | SendFlags.SOLICITED).local(p.mrA, 1000, 3000));
            p.qa.postSend(send(3).sendFlags(SendFlags.SIGNALED | SendFlags.INLINE).local(p.mrA, 4000, 64));
            p.qa.postSend(send(4)); // zero length: consumes a receive, places nothing
            SendWorkRequest two = send(5); // two gather entries: the queued path, placed all the same
            two.sg.clear().add(p.mrA, 5000, 100).add(p.mrA, 6000, 200);
            p.qa.postSend(two);
            p.fx.pump();

            assertEquals(before, packetsSent(p), "no packet went out");
            assertEquals(5, p.a.counter(RdmaCounter.DIRECT_SENDS));
            for (int i = 1; i <= 5; i++) {
                WorkCompletion wc = poll(p.cqA);
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(i, wc.wrId);
                assertEquals(WcOpcode.SEND, wc.opcode);
            }
            int[] lengths = {1000, 3000, 64, 0, 300};
            for (int i = 0; i < 5; i++) {
                WorkCompletion wc = poll(p.cqB);
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(100 + i, wc.wrId);
                assertEquals(WcOpcode.RECV, wc.opcode);
                assertEquals(lengths[i], wc.byteLen);
                assertEquals(i == 1 ? WorkCompletion.WITH_IMM : 0, wc.wcFlags & WorkCompletion.WITH_IMM);
                if (i == 1) {
                    assertEquals(0x1234, wc.immData);
                }
            }
            assertFalse(p.cqB.poll(new WorkCompletion()));
            assertEquals(1, events.get(), "the solicited SEND raised the completion event");
            MemorySegment a = p.mrA.memory();
            MemorySegment b = p.mrB.memory();
            assertEquals(-1, a.asSlice(0, 1000).mismatch(b.asSlice(0, 1000)));
            assertEquals(-1, a.asSlice(1000, 3000).mismatch(b.asSlice(4096, 3000)));
            assertEquals(-1, a.asSlice(4000, 64).mismatch(b.asSlice(8192, 64)));
            assertEquals(-1, a.asSlice(5000, 100).mismatch(b.asSlice(4 * 4096, 100)));
            assertEquals(-1, a.asSlice(6000, 200).mismatch(b.asSlice(4 * 4096 + 100, 200)));
        }
    }

    @Test
    void aSendWithNoReceivePostedGoesAsPacketsAndTheNextDirectSendTakesTheReceiveAfterIt() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            fill(p.mrA.memory(), 12);
            p.qa.postSend(send(1).local(p.mrA, 0, 500)); // nothing posted: packets, and an RNR NAK
            p.fx.pump();
            assertTrue(p.b.counter(RdmaCounter.RNR_NAKS_SENT) > 0);
            for (int i = 0; i < 3; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(10 + i).local(p.mrB, 1000L * i, 1000));
            }
            p.fx.advance(MS); // the RNR wait ends; the retry takes receive 10
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            p.qa.postSend(send(2).local(p.mrA, 500, 600));
            p.qa.postSend(send(3).local(p.mrA, 1100, 700));
            p.fx.pump();
            assertEquals(2, p.a.counter(RdmaCounter.DIRECT_SENDS), "the two after it were placed directly");
            int[][] expect = {{10, 0, 500}, {11, 500, 600}, {12, 1100, 700}};
            for (int i = 0; i < 3; i++) {
                WorkCompletion wc = poll(p.cqB);
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(expect[i][0], wc.wrId);
                assertEquals(expect[i][2], wc.byteLen);
                assertEquals(-1, p.mrA.memory().asSlice(expect[i][1], expect[i][2])
                        .mismatch(p.mrB.memory().asSlice(1000L * i, expect[i][2])), "receive " + i);
            }
            for (int i = 2; i <= 3; i++) {
                assertEquals(i, poll(p.cqA).wrId);
            }
        }
    }

    @Test
    void sendsThatNeedTheRespondersJudgementGoAsPackets() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            fill(p.mrA.memory(), 13);
            // A receive of two buffers: scattered by the responder.
            RecvWorkRequest two = new RecvWorkRequest(2).wrId(1);
            two.sg.add(p.mrB, 0, 100).add(p.mrB, 1000, 100);
            p.qb.postRecv(two);
            p.qa.postSend(send(1).local(p.mrA, 0, 150));
            // A receive whose buffer is not in a fabric window (registered memory): placed by the responder.
            MemoryRegion local = p.pdB.regMr(java.lang.foreign.Arena.ofAuto().allocate(4096), Access.LOCAL_WRITE);
            p.qb.postRecv(new RecvWorkRequest().wrId(2).local(local, 0, 4096));
            p.qa.postSend(send(2).local(p.mrA, 200, 300));
            p.fx.pump();
            assertEquals(0, p.a.counter(RdmaCounter.DIRECT_SENDS));
            assertEquals(2, p.a.counter(RdmaCounter.DIRECT_SEND_FALLBACKS));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            WorkCompletion r1 = poll(p.cqB);
            assertEquals(1, r1.wrId);
            assertEquals(150, r1.byteLen);
            assertEquals(-1, p.mrA.memory().asSlice(0, 100).mismatch(p.mrB.memory().asSlice(0, 100)));
            assertEquals(-1, p.mrA.memory().asSlice(100, 50).mismatch(p.mrB.memory().asSlice(1000, 50)));
            WorkCompletion r2 = poll(p.cqB);
            assertEquals(2, r2.wrId);
            assertEquals(-1, p.mrA.memory().asSlice(200, 300).mismatch(local.memory().asSlice(0, 300)));
        }
    }

    @Test
    void aReceiveBufferNeedsOnlyLocalWriteAndOneWithoutItIsRefusedByTheResponder() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            fill(p.mrA.memory(), 14);
            MemoryRegion localOnly = p.pdB.allocMr(4096, Access.LOCAL_WRITE); // no remote access: receives only
            MemoryRegion readOnly = p.pdB.allocMr(4096, Access.REMOTE_READ);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).local(localOnly, 0, 4096));
            p.qb.postRecv(new RecvWorkRequest().wrId(2).local(readOnly, 0, 4096));
            p.qa.postSend(send(1).local(p.mrA, 0, 100));
            p.qa.postSend(send(2).local(p.mrA, 100, 100));
            p.fx.pump();
            assertEquals(1, p.a.counter(RdmaCounter.DIRECT_SENDS));
            assertEquals(-1, p.mrA.memory().asSlice(0, 100).mismatch(localOnly.memory().asSlice(0, 100)));
            assertStatus(WcStatus.SUCCESS, poll(p.cqB));
            // The second went as packets; the responder found the buffer not writable, as in packet mode.
            assertStatus(WcStatus.LOC_PROT_ERR, poll(p.cqB));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertStatus(WcStatus.REM_OP_ERR, poll(p.cqA));
            assertEquals(0, readOnly.memory().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
        }
    }

    @Test
    void whileAReceiveCqWaitsForAnEventTheContextAsksToBePolledSoonAndItsPollRaisesTheEvent() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            p.qb.postRecv(new RecvWorkRequest().wrId(1).local(p.mrB, 0, 100));
            long now = p.fx.now;
            assertEquals(Long.MAX_VALUE, p.b.poll(now), "nothing to wait for: no deadline");
            AtomicInteger events = new AtomicInteger();
            p.cqB.onEvent(events::incrementAndGet);
            p.cqB.requestNotify(false);
            // A direct SEND sends no frame that would wake a node's datapath: the context's deadline does.
            assertEquals(now + QpTransport.DIRECT_RECV_POLL_NS, p.b.poll(now));
            p.qa.postSend(send(1).local(p.mrA, 0, 10));
            assertEquals(1, p.a.counter(RdmaCounter.DIRECT_SENDS));
            assertEquals(0, events.get());
            assertEquals(Long.MAX_VALUE, p.b.poll(now + QpTransport.DIRECT_RECV_POLL_NS), "the event fired: no longer armed");
            assertEquals(1, events.get());
            assertEquals(1, poll(p.cqB).wrId);
        }
    }

    @Test
    void aRequesterResetAndReconnectedAloneTakesTheReceiverNextReceiveNotAnOldOne() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            fill(p.mrA.memory(), 15);
            for (int i = 0; i < 4; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(i).local(p.mrB, 100L * i, 100));
            }
            p.qa.postSend(send(1).local(p.mrA, 0, 10));
            p.qa.postSend(send(2).local(p.mrA, 10, 10));
            // Only the requester starts over; the receiver's queue goes on (position 2 is next).
            p.qa.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
            p.qa.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(RcPair.ALL & ~Access.LOCAL_WRITE),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            RdmaFixture.rtr(p.qa, p.qb, 1024, 0xFFFFF0);
            RdmaFixture.rts(p.qa, 0x100, 8, 7, 7);
            p.qa.postSend(send(3).local(p.mrA, 20, 10));
            p.qa.postSend(send(4).local(p.mrA, 30, 10));
            assertEquals(4, p.a.counter(RdmaCounter.DIRECT_SENDS));
            for (int i = 0; i < 4; i++) {
                WorkCompletion wc = poll(p.cqB);
                assertEquals(i, wc.wrId);
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(-1, p.mrA.memory().asSlice(10L * i, 10).mismatch(p.mrB.memory().asSlice(100L * i, 10)), "receive " + i);
            }
            assertFalse(p.cqB.poll(new WorkCompletion()));
        }
    }

    @Test
    void aRequesterThatTheReceiverIsNoLongerConnectedToPlacesNothing() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            QueuePair qc = p.a.createQp(p.pdA, QpInitAttr.rc(p.cqA, p.cqA).withMode(TransferMode.DIRECT));
            p.qb.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
            RdmaFixture.connect(qc, p.qb, 1024); // qb now talks to qc; qa still believes it talks to qb
            p.qb.postRecv(new RecvWorkRequest().wrId(7).local(p.mrB, 0, 100));
            p.qa.postSend(send(1).local(p.mrA, 0, 10));
            assertEquals(0, p.a.counter(RdmaCounter.DIRECT_SENDS), "qa's SEND was not placed in qc's connection");
            qc.postSend(send(2).local(p.mrA, 500, 20));
            assertEquals(1, p.a.counter(RdmaCounter.DIRECT_SENDS));
            p.fx.pump();
            WorkCompletion wc = poll(p.cqB);
            assertEquals(7, wc.wrId);
            assertEquals(20, wc.byteLen, "the receive holds qc's message");
        }
    }

    @Test
    void aReceiverThatFailsCompletesWhatWasPlacedBeforeAndFlushesTheRest() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            for (int i = 0; i < 4; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(i).local(p.mrB, 100L * i, 100));
            }
            p.qa.postSend(send(1).local(p.mrA, 0, 10));
            p.qa.postSend(send(2).local(p.mrA, 0, 20));
            assertEquals(2, p.a.counter(RdmaCounter.DIRECT_SENDS));
            // Placed but not yet taken in by B's side: ERR first completes those two, then flushes.
            p.qb.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
            int[] status = {WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.WR_FLUSH_ERR, WcStatus.WR_FLUSH_ERR};
            for (int i = 0; i < 4; i++) {
                WorkCompletion wc = poll(p.cqB);
                assertEquals(i, wc.wrId);
                assertStatus(status[i], wc);
            }
            // B in ERR takes nothing directly: the next SEND goes as packets and is never acknowledged.
            p.qa.postSend(send(3).local(p.mrA, 0, 10));
            assertEquals(2, p.a.counter(RdmaCounter.DIRECT_SENDS));
        }
    }

    @Test
    void aResetReceiverStartsTheCountOverAndTakesDirectSendsAgain() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            p.qb.postRecv(new RecvWorkRequest().wrId(1).local(p.mrB, 0, 100));
            p.qa.postSend(send(1).local(p.mrA, 0, 10));
            assertEquals(1, poll(p.cqB).wrId);
            poll(p.cqA);
            for (QueuePair q : new QueuePair[] {p.qa, p.qb}) {
                q.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
            }
            RdmaFixture.connect(p.qa, p.qb, 1024);
            p.qb.postRecv(new RecvWorkRequest().wrId(2).local(p.mrB, 0, 100));
            p.qa.postSend(send(2).local(p.mrA, 0, 10));
            assertEquals(2, p.a.counter(RdmaCounter.DIRECT_SENDS), "placed directly again, into the restarted queue");
            WorkCompletion wc = poll(p.cqB);
            assertStatus(WcStatus.SUCCESS, wc);
            assertEquals(2, wc.wrId);
            assertEquals(10, wc.byteLen);
        }
    }
}
