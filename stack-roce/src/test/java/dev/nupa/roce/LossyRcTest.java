package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.FaultPlan;
import dev.nupa.l2.FaultyDevice;
import dev.nupa.roce.transport.RcRequester;
import dev.nupa.roce.transport.SendQueue;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Packet mode over a lossy fabric (IBA 9.7.5: go-back-N, sequence NAKs, duplicate detection): 100,000
 * mixed operations with 1% loss, 1% reordering and 0.5% duplication in each direction complete with
 * success, every byte where it belongs, and the atomics exact (a duplicate atomic is answered from
 * saved state, never executed twice). The heavier case runs too: 10% loss, 5% reordering, 2% duplication.
 */
class LossyRcTest {
    private static final int OPS = 100_000;
    private static final int WINDOW = 48;
    private static final long READ_AREA = 32 * 1024; // B's bytes [32 KiB, 64 KiB) never change: READs check them
    private static final int RECV_SLOTS = 64;

    @Test
    void oneHundredThousandMixedOperationsCompleteUnderLossReorderAndDuplication() {
        // Other rates for exploring: -Dnupa.test.argLine="--enable-native-access=ALL-UNNAMED -Dnupa.roce.drop=0.05 ..."
        run(FaultPlan.NONE.withDrop(Double.parseDouble(System.getProperty("nupa.roce.drop", "0.01")))
                .withReorder(Double.parseDouble(System.getProperty("nupa.roce.reorder", "0.01")))
                .withDuplicate(Double.parseDouble(System.getProperty("nupa.roce.duplicate", "0.005"))));
    }

    @Test
    void theSameUnderTenPercentLoss() {
        run(FaultPlan.NONE.withDrop(0.10).withReorder(0.05).withDuplicate(0.02));
    }

    private void run(FaultPlan faults) {
        try (RdmaFixture fx = new RdmaFixture(256)) {
            RdmaContext a = fx.node(1, d -> new FaultyDevice(d, 11, FaultPlan.NONE, faults));
            RdmaContext b = fx.node(2, d -> new FaultyDevice(d, 13, FaultPlan.NONE, faults));
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(4096);
            CompletionQueue cb = b.createCq(4096);
            QueuePair qa = a.createQp(pa, QpInitAttr.rc(ca, ca).withCapacity(256, 256).withSqSigAll(true));
            QueuePair qb = b.createQp(pb, QpInitAttr.rc(cb, cb).withCapacity(256, 256));
            RdmaFixture.connect(qa, qb, 1024, 0xFFF000, 0x10, 7, 7);
            MemoryRegion ma = pa.allocMr(512 * 1024, RcPair.ALL);
            MemoryRegion mb = pb.allocMr(64 * 1024, RcPair.ALL);
            MemoryRegion recv = pb.allocMr((long) RECV_SLOTS * 4096, RcPair.ALL);
            RdmaFixture.fill(mb.memory().asSlice(READ_AREA, 32 * 1024), 77);
            RdmaFixture.fill(ma.memory(), 78);
            MemorySegment shadow = MemorySegment.ofArray(new byte[32 * 1024]); // what B's write area must hold
            SplittableRandom rnd = new SplittableRandom(2026);

            SendWorkRequest wr = new SendWorkRequest();
            RecvWorkRequest rr = new RecvWorkRequest();
            WorkCompletion wc = new WorkCompletion();
            // Per posted op, what to check on completion.
            int[] kind = new int[OPS];
            long[] localOff = new long[OPS];
            long[] remoteOff = new long[OPS];
            int[] len = new int[OPS];
            long faaSum = 0;
            long casNext = 0;
            int posted = 0;
            int completed = 0;
            int received = 0;
            int sends = 0;
            int idle = 0;
            while (completed < OPS) {
                while (posted < OPS && posted - completed < WINDOW) {
                    int i = posted;
                    int k = rnd.nextInt(6);
                    int n = 1 + rnd.nextInt(3000);
                    // Buffers stay untouched until their request completes (a retransmission gathers them again):
                    // 64 slots of 4 KiB to send from, 64 to read into, and the window is smaller than 64.
                    long lo = (i % 64) * 4096L;
                    long into = 256 * 1024 + (i % 64) * 4096L;
                    kind[i] = k;
                    len[i] = n;
                    localOff[i] = lo;
                    wr.wrId(i).sendFlags(0);
                    switch (k) {
                        case 0 -> { // SEND, checked by the receiver against the sender's bytes
                            rr.wrId(sends).local(recv, (sends % RECV_SLOTS) * 4096L, 4096);
                            qb.postRecv(rr);
                            sends++;
                            ma.memory().set(ValueLayout.JAVA_INT_UNALIGNED, lo, i);
                            wr.opcode(WrOpcode.SEND).local(ma, lo, Math.max(n, 4));
                            len[i] = Math.max(n, 4);
                        }
                        case 1, 2 -> { // WRITE (and WRITE_WITH_IMM's data path, without the receive)
                            long ro = 16 + rnd.nextInt(32 * 1024 - 16 - n); // bytes [0, 16) hold the atomic words
                            remoteOff[i] = ro;
                            MemorySegment.copy(ma.memory(), lo, shadow, ro, n);
                            wr.opcode(WrOpcode.RDMA_WRITE).local(ma, lo, n).remote(mb.addr() + ro, mb.rkey());
                        }
                        case 3 -> { // READ of bytes that never change
                            long ro = READ_AREA + rnd.nextInt(32 * 1024 - n);
                            remoteOff[i] = ro;
                            localOff[i] = into;
                            wr.opcode(WrOpcode.RDMA_READ).local(ma, localOff[i], n).remote(mb.addr() + ro, mb.rkey());
                        }
                        case 4 -> { // FETCH_AND_ADD on word 0
                            long add = 1 + rnd.nextInt(1000);
                            faaSum += add;
                            localOff[i] = into;
                            wr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).local(ma, localOff[i], 8).remote(mb.addr(), mb.rkey())
                                    .compareAdd(add);
                        }
                        default -> { // CMP_AND_SWP on word 1: always expects the previous swap, so always succeeds
                            remoteOff[i] = casNext;
                            localOff[i] = into;
                            wr.opcode(WrOpcode.ATOMIC_CMP_AND_SWP).local(ma, localOff[i], 8).remote(mb.addr() + 8, mb.rkey())
                                    .compareAdd(casNext).swap(casNext + 1);
                            casNext++;
                        }
                    }
                    qa.postSend(wr);
                    posted++;
                }
                int before = completed;
                fx.pump();
                while (ca.poll(wc)) {
                    assertEquals(WcStatus.name(WcStatus.SUCCESS), WcStatus.name(wc.status), wc.toString());
                    int i = (int) wc.wrId;
                    assertEquals(completed, i, "completions in posting order");
                    if (kind[i] == 3) {
                        assertEquals(-1, ma.memory().asSlice(localOff[i], len[i]).mismatch(mb.memory().asSlice(remoteOff[i], len[i])),
                                "READ " + i + " returned the remote bytes");
                    } else if (kind[i] == 5) {
                        assertEquals(remoteOff[i], ma.memory().get(ValueLayout.JAVA_LONG, localOff[i]), "CAS " + i + " original");
                    }
                    completed++;
                }
                while (cb.poll(wc)) {
                    assertEquals(WcStatus.name(WcStatus.SUCCESS), WcStatus.name(wc.status), wc.toString());
                    assertEquals(received, wc.wrId, "receives in order");
                    int i = recv.memory().get(ValueLayout.JAVA_INT_UNALIGNED, (received % RECV_SLOTS) * 4096L);
                    assertEquals(len[i], wc.byteLen);
                    assertEquals(-1, recv.memory().asSlice((received % RECV_SLOTS) * 4096L, len[i])
                            .mismatch(ma.memory().asSlice(localOff[i], len[i])), "SEND " + i + " arrived intact");
                    received++;
                }
                if (completed == before) {
                    fx.advance(MS / 4); // let the ACK timer (timeout 8: ~1 ms) or an RNR wait run out
                    if (++idle > 20_000) {
                        RcRequester rq = qa.transport.requester;
                        SendQueue q = qa.transport.sq;
                        int hs = q.slot(q.head);
                        throw new AssertionError("stuck: completed " + completed + " head " + q.head + " next " + q.next + " tail " + q.tail
                                + " psn " + rq.psn + " acked " + rq.ackedPsn + " deadline " + rq.ackDeadline + " now " + fx.now
                                + " rdOut " + rq.rdOutstanding + " sendOffset " + rq.sendOffset + " head op " + q.opcode[hs]
                                + " state " + q.state[hs] + " first " + q.firstPsn[hs] + " npsn " + q.npsn[hs] + " recv " + q.received[hs]
                                + " responder ePsn " + qb.transport.responder.ePsn + " qa " + qa.state() + " qb " + qb.state());
                    }
                } else {
                    idle = 0;
                }
            }
            assertEquals(sends, received);
            assertEquals(faaSum, mb.memory().get(ValueLayout.JAVA_LONG, 0), "FETCH_AND_ADD executed exactly once each");
            assertEquals(casNext, mb.memory().get(ValueLayout.JAVA_LONG, 8), "CMP_AND_SWP executed exactly once each");
            assertEquals(-1, mb.memory().asSlice(16, 32 * 1024 - 16).mismatch(shadow.asSlice(16, 32 * 1024 - 16)),
                    "every WRITE landed in order");
            FaultyDevice fa = (FaultyDevice) fx.devices.get(0);
            FaultyDevice fb = (FaultyDevice) fx.devices.get(1);
            assertTrue(fa.receiveFaults().dropped() + fb.receiveFaults().dropped() > 1000, "the fabric did lose packets");
            assertTrue(a.counter(RdmaCounter.RETRANSMITS) > 0);
            assertTrue(b.counter(RdmaCounter.DUPLICATES) > 0);
            System.out.printf("lossy RC: %d ops, drops %d/%d, retransmits %d, timeouts %d, seq NAKs sent %d, duplicates seen %d%n",
                    OPS, fa.receiveFaults().dropped(), fb.receiveFaults().dropped(), a.counter(RdmaCounter.RETRANSMITS),
                    a.counter(RdmaCounter.TIMEOUTS), b.counter(RdmaCounter.NAKS_SENT), b.counter(RdmaCounter.DUPLICATES));
        }
    }
}
