package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;

/**
 * Two RC flows over RoCEv2 from node 1 to node 2 through a congested hop ({@link BottleneckHop}: 2 Gbit/s, 64 frames
 * of queue, ECN marking from 8), on virtual time: with DCQCN the senders slow down on CNPs, the queue rarely
 * overflows, and the two flows share the hop; without it, they overrun the queue and resend.
 */
class DcqcnTwoFlowsTest {
    private static final int MTU = 1024;
    private static final int MESSAGE = 4096;
    private static final int MESSAGES = 256; // 1 MiB per flow
    private static final int DEPTH = 16;
    private static final int CAP = 64;
    private static final int K = 8;
    private static final long STEP = 1_000; // 1 us

    record Result(long retransmits, long dropped, long marked, long cnpsSent, long cnpsReceived, long[] shares,
                  long notEct) {
    }

    private static Result run(boolean dcqcn) {
        try (RdmaFixture fx = new RdmaFixture(1024)) {
            RdmaContext a = fx.ipNode(1);
            BottleneckHop[] hop = new BottleneckHop[1];
            RdmaContext b = fx.ipNode(2, 2048, ip -> hop[0] = new BottleneckHop(ip, () -> fx.now, 2e9, CAP, K));
            for (RdmaContext c : new RdmaContext[] {a, b}) {
                c.congestion().enabled(dcqcn);
                c.congestion().lineRate(10e9);
            }
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqA = a.createCq(1024);
            CompletionQueue cqB = b.createCq(1024);
            MemoryRegion mrA = pdA.allocMr(MESSAGE, RcPair.ALL);
            MemoryRegion mrB = pdB.allocMr(2 * MESSAGE, RcPair.ALL);
            QueuePair[] qa = new QueuePair[2];
            QueuePair[] qb = new QueuePair[2];
            for (int f = 0; f < 2; f++) {
                qa[f] = a.createQp(pdA, QpInitAttr.rc(cqA, cqA).withMode(TransferMode.PACKET).withCapacity(64, 64));
                qb[f] = b.createQp(pdB, QpInitAttr.rc(cqB, cqB).withMode(TransferMode.PACKET).withCapacity(64, 64));
                for (QueuePair q : new QueuePair[] {qa[f], qb[f]}) {
                    q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                            QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
                }
                rtr(qa[f], RdmaFixture.ip(2), qb[f].qpNum(), 100);
                rtr(qb[f], RdmaFixture.ip(1), qa[f].qpNum(), 200);
                RdmaFixture.rts(qa[f], 200, 10, 7, 7); // ACK timeout 4.096 us x 2^10: about 4 ms
                RdmaFixture.rts(qb[f], 100, 10, 7, 7);
            }
            long start = fx.now;
            SendWorkRequest[] wr = new SendWorkRequest[2];
            int[] posted = new int[2];
            int[] done = new int[2];
            long[] finished = new long[2];
            long[] window = {-1, -1, -1, -1}; // each flow's messages done at a quarter, then at three quarters of all
            for (int f = 0; f < 2; f++) {
                wr[f] = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED).wrId(f)
                        .local(mrA, 0, MESSAGE).remote(mrB.addr() + (long) f * MESSAGE, mrB.rkey());
            }
            WorkCompletion[] wcs = new WorkCompletion[64];
            for (int i = 0; i < wcs.length; i++) {
                wcs[i] = new WorkCompletion();
            }
            for (int step = 0; step < 200_000 && (done[0] < MESSAGES || done[1] < MESSAGES); step++) {
                for (int f = 0; f < 2; f++) {
                    while (posted[f] < MESSAGES && posted[f] - done[f] < DEPTH) {
                        qa[f].postSend(wr[f]);
                        posted[f]++;
                    }
                }
                fx.pump();
                hop[0].drain();
                fx.pump();
                int n = cqA.poll(wcs, wcs.length);
                for (int i = 0; i < n; i++) {
                    assertEquals(WcStatus.SUCCESS, wcs[i].status, wcs[i].toString());
                    int f = (int) wcs[i].wrId;
                    done[f]++;
                    if (done[f] == MESSAGES) {
                        finished[f] = fx.now;
                    }
                    int total = done[0] + done[1];
                    if (total == MESSAGES / 2 && window[0] < 0) {
                        window[0] = done[0];
                        window[1] = done[1];
                    } else if (total == MESSAGES * 3 / 2 && window[2] < 0) {
                        window[2] = done[0];
                        window[3] = done[1];
                    }
                }
                fx.advance(STEP);
            }
            assertEquals(MESSAGES, done[0], "flow 0 finished");
            assertEquals(MESSAGES, done[1], "flow 1 finished");
            // shares: each flow's messages done while the middle half of all arrived, then each flow's finish time.
            return new Result(a.counter(RdmaCounter.RETRANSMITS), hop[0].dropped, hop[0].marked,
                    b.counter(RdmaCounter.CNPS_SENT), a.counter(RdmaCounter.CNPS_RECEIVED),
                    new long[] {window[2] - window[0], window[3] - window[1], finished[0] - start, finished[1] - start}, hop[0].notEct);
        }
    }

    private static void rtr(QueuePair q, int peerIp, int peerQpn, int peerPsn) {
        q.modify(new QpAttr().qpState(QpState.RTR).destIp(peerIp).pathMtu(MTU).destQpNum(peerQpn).rqPsn(peerPsn)
                        .maxDestRdAtomic(4).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
    }

    @Test
    void dcqcnCutsRetransmissionsAndSharesTheHop() {
        Result off = run(false);
        Result on = run(true);
        System.out.println("DCQCN off: " + off + " " + java.util.Arrays.toString(off.shares()));
        System.out.println("DCQCN on:  " + on + " " + java.util.Arrays.toString(on.shares()));
        assertEquals(0, on.notEct(), "RoCEv2 leaves ECT(0)");
        assertEquals(0, off.cnpsSent(), "off: CE is ignored");
        assertTrue(off.dropped() > 0 && off.retransmits() > 0, "without DCQCN the flows overrun the hop: " + off);
        assertTrue(on.marked() > 0 && on.cnpsSent() > 0 && on.cnpsReceived() == on.cnpsSent(), "CE answered by CNPs: " + on);
        assertTrue(on.retransmits() * 2 < off.retransmits(), "DCQCN at least halves the retransmissions: " + on + " vs " + off);
        // A fair share: flows of equal size that share the hop finish at about the same time; without DCQCN the one
        // that started first takes the hop and the other finishes long after.
        double fairOn = finishRatio(on);
        double fairOff = finishRatio(off);
        assertTrue(fairOn >= 0.75 && fairOn > fairOff, "finish times, shorter over longer: on " + fairOn + ", off " + fairOff);
    }

    private static double finishRatio(Result r) {
        long[] s = r.shares();
        return (double) Math.min(s[2], s[3]) / Math.max(s[2], s[3]);
    }
}
