package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.MS;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.fill;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.verbs.QpAttr;
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
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Every RC operation between two contexts, in both transfer modes, on virtual time. */
class RcOperationsTest {

    private static long mismatch(MemorySegment x, long xo, MemorySegment y, long yo, long n) {
        return x.asSlice(xo, n).mismatch(y.asSlice(yo, n));
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void sendsOfManyPacketsArriveWholeWithImmediateData(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            fill(p.mrA.memory().asSlice(0, 10_000), 1);
            p.qb.postRecv(new RecvWorkRequest().wrId(77).local(p.mrB, 100, 20_000));
            p.qa.postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.SEND_WITH_IMM).immData(0xCAFE)
                    .sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 10_000));
            p.fx.pump();
            WorkCompletion r = poll(p.cqB);
            assertStatus(WcStatus.SUCCESS, r);
            assertEquals(77, r.wrId);
            assertEquals(WcOpcode.RECV, r.opcode);
            assertEquals(10_000, r.byteLen);
            assertEquals(WorkCompletion.WITH_IMM, r.wcFlags & WorkCompletion.WITH_IMM);
            assertEquals(0xCAFE, r.immData);
            assertEquals(-1, mismatch(p.mrA.memory(), 0, p.mrB.memory(), 100, 10_000));
            WorkCompletion s = poll(p.cqA);
            assertStatus(WcStatus.SUCCESS, s);
            assertEquals(5, s.wrId);
            assertEquals(WcOpcode.SEND, s.opcode);
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void rdmaWriteAndReadMoveEveryByteAndOnlySignaledRequestsComplete(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            fill(p.mrA.memory().asSlice(0, 30_000), 2);
            SendWorkRequest w = new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).local(p.mrA, 0, 30_000)
                    .remote(p.mrB.addr() + 1000, p.mrB.rkey());
            p.qa.postSend(w); // unsignaled
            SendWorkRequest rd = new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 32_000, 30_000).remote(p.mrB.addr() + 1000, p.mrB.rkey());
            p.qa.postSend(rd);
            p.fx.pump();
            WorkCompletion wc = poll(p.cqA);
            assertStatus(WcStatus.SUCCESS, wc);
            assertEquals(2, wc.wrId, "the unsignaled WRITE completes silently");
            assertEquals(WcOpcode.RDMA_READ, wc.opcode);
            assertFalse(p.cqA.poll(new WorkCompletion()));
            assertEquals(-1, mismatch(p.mrA.memory(), 0, p.mrB.memory(), 1000, 30_000));
            assertEquals(-1, mismatch(p.mrA.memory(), 0, p.mrA.memory(), 32_000, 30_000));
            assertEquals(0, p.cqB.size(), "a plain WRITE consumes no receive");
            if (mode == TransferMode.DIRECT) {
                assertEquals(2, p.a.counter(RdmaCounter.DIRECT_OPS));
                assertEquals(0, p.a.counter(RdmaCounter.PACKETS_SENT), "direct placement sends no packet");
            } else {
                assertTrue(p.a.counter(RdmaCounter.PACKETS_SENT) >= 31);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void writeWithImmediateConsumesAReceiveAndReportsTheLength(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 2048)) {
            fill(p.mrA.memory().asSlice(0, 5000), 3);
            p.qb.postRecv(new RecvWorkRequest().wrId(9).local(p.mrB, 0, 0));
            p.qa.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).immData(42)
                    .sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 5000).remote(p.mrB.addr() + 8, p.mrB.rkey()));
            p.fx.pump();
            WorkCompletion r = poll(p.cqB);
            assertStatus(WcStatus.SUCCESS, r);
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, r.opcode);
            assertEquals(5000, r.byteLen);
            assertEquals(42, r.immData);
            assertEquals(-1, mismatch(p.mrA.memory(), 0, p.mrB.memory(), 8, 5000));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void atomicsReturnTheOriginalValueAndChangeTheTarget(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            p.mrB.memory().set(ValueLayout.JAVA_LONG, 64, 100L);
            SendWorkRequest faa = new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 8).remote(p.mrB.addr() + 64, p.mrB.rkey()).compareAdd(5);
            p.qa.postSend(faa.wrId(1));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertEquals(100L, p.mrA.memory().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(105L, p.mrB.memory().get(ValueLayout.JAVA_LONG, 64));
            SendWorkRequest cas = new SendWorkRequest().opcode(WrOpcode.ATOMIC_CMP_AND_SWP).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 8, 8).remote(p.mrB.addr() + 64, p.mrB.rkey()).compareAdd(105).swap(7);
            p.qa.postSend(cas.wrId(2));
            p.qa.postSend(cas.wrId(3)); // compares 105 against 7 now: no swap
            p.fx.pump();
            WorkCompletion c1 = poll(p.cqA);
            assertEquals(2, c1.wrId);
            assertEquals(WcOpcode.COMP_SWAP, c1.opcode);
            WorkCompletion c2 = poll(p.cqA);
            assertStatus(WcStatus.SUCCESS, c2);
            assertEquals(7L, p.mrB.memory().get(ValueLayout.JAVA_LONG, 64));
            assertEquals(7L, p.mrA.memory().get(ValueLayout.JAVA_LONG, 8), "the second CAS saw 7 and left it");
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void scatterGatherListsAndInlineDataGatherAndScatterInOrder(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 256)) {
            fill(p.mrA.memory().asSlice(0, 3000), 4);
            SendWorkRequest s = new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED);
            s.sg.clear().add(p.mrA, 0, 700).add(p.mrA, 2000, 300).add(p.mrA, 1000, 1);
            RecvWorkRequest r = new RecvWorkRequest().wrId(2);
            r.sg.clear().add(p.mrB, 500, 10).add(p.mrB, 0, 400).add(p.mrB, 5000, 1000);
            p.qb.postRecv(r);
            p.qa.postSend(s);
            MemorySegment inlined = p.mrA.memory().asSlice(40_000, 100);
            fill(inlined, 5);
            p.qb.postRecv(new RecvWorkRequest().wrId(3).local(p.mrB, 20_000, 100));
            p.qa.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED | SendFlags.INLINE)
                    .local(p.mrA, 40_000, 100));
            byte[] expectedInline = inlined.toArray(ValueLayout.JAVA_BYTE);
            inlined.fill((byte) 0); // INLINE copied at post time
            p.fx.pump();
            WorkCompletion rc = poll(p.cqB);
            assertEquals(1001, rc.byteLen);
            MemorySegment a = p.mrA.memory();
            MemorySegment b = p.mrB.memory();
            // 1001 bytes gathered [0,700) [2000,2300) [1000] scattered into [500,510) [0,400) [5000,5591)
            byte[] gathered = new byte[1001];
            MemorySegment.copy(a, ValueLayout.JAVA_BYTE, 0, gathered, 0, 700);
            MemorySegment.copy(a, ValueLayout.JAVA_BYTE, 2000, gathered, 700, 300);
            gathered[1000] = a.get(ValueLayout.JAVA_BYTE, 1000);
            byte[] scattered = new byte[1001];
            MemorySegment.copy(b, ValueLayout.JAVA_BYTE, 500, scattered, 0, 10);
            MemorySegment.copy(b, ValueLayout.JAVA_BYTE, 0, scattered, 10, 400);
            MemorySegment.copy(b, ValueLayout.JAVA_BYTE, 5000, scattered, 410, 591);
            org.junit.jupiter.api.Assertions.assertArrayEquals(gathered, scattered);
            assertEquals(3, poll(p.cqB).wrId);
            org.junit.jupiter.api.Assertions.assertArrayEquals(expectedInline,
                    b.asSlice(20_000, 100).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void psnsWrapAroundUnderLoad(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 256)) {
            // qb sends from PSN 0xFFFFF0 (RcPair's default): 3,000 messages of 2 packets cross 0xFFFFFF.
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrB, 0, 300);
            // Receives of two buffers: a DIRECT QP sends into them as packets too (the responder scatters).
            RecvWorkRequest r = new RecvWorkRequest(2);
            r.sg.add(p.mrA, 0, 150).add(p.mrA, 150, 150);
            WorkCompletion wc = new WorkCompletion();
            int done = 0;
            for (int i = 0; i < 3000; i++) {
                p.qa.postRecv(r.wrId(i));
                p.qb.postSend(s.wrId(i));
                p.fx.pump();
                while (p.cqB.poll(wc)) {
                    assertStatus(WcStatus.SUCCESS, wc);
                    assertEquals(done++, wc.wrId);
                }
                while (p.cqA.poll(wc)) {
                    assertStatus(WcStatus.SUCCESS, wc);
                }
            }
            assertEquals(3000, done);
            QpAttr q = p.qb.query(new QpAttr());
            assertEquals((0xFFFFF0 + 6000) & 0xFFFFFF, q.sqPsn);
            assertEquals((0xFFFFF0 + 6000) & 0xFFFFFF, p.qa.query(new QpAttr()).rqPsn);
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void manyLargeReadsThroughASmallRingAllCompleteWithTheRightBytes(TransferMode mode) {
        // 8 ring slots: READ responses back-pressure the responder constantly (its queued responses must survive).
        try (RcPair p = new RcPair(new RdmaFixture(8), mode, 4096)) {
            fill(p.mrB.memory(), 6);
            WorkCompletion wc = new WorkCompletion();
            SendWorkRequest rd = new SendWorkRequest().opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED);
            int done = 0;
            for (int i = 0; i < 200; i++) {
                long off = (i % 4) * 16_384L;
                p.qa.postSend(rd.wrId(i).local(p.mrA, off, 16_384).remote(p.mrB.addr() + (i % 3) * 8192L, p.mrB.rkey()));
                if (i % 8 == 7) {
                    p.fx.pump();
                    while (p.cqA.poll(wc)) {
                        assertStatus(WcStatus.SUCCESS, wc);
                        int k = (int) wc.wrId;
                        assertEquals(done++, k);
                    }
                }
            }
            p.fx.await(p.cqA, 200 - done, MS);
            while (p.cqA.poll(wc)) {
                assertStatus(WcStatus.SUCCESS, wc);
                done++;
            }
            assertEquals(200, done);
            // The last four READs (196..199) hold their sources.
            for (int i = 196; i < 200; i++) {
                assertEquals(-1, mismatch(p.mrA.memory(), (i % 4) * 16_384L, p.mrB.memory(), (i % 3) * 8192L, 16_384), "READ " + i);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void anInlineWriteCarriesTheBytesOfPostTimeEvenWhenItWaitsBehindASend(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemorySegment src = p.mrA.memory();
            p.qb.postRecv(new RecvWorkRequest().wrId(1).local(p.mrB, 8192, 64));
            p.qa.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.SEND).local(p.mrA, 4096, 64)); // unacknowledged yet
            src.asSlice(0, 200).fill((byte) 7);
            p.qa.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.INLINE | SendFlags.SIGNALED)
                    .local(p.mrA, 0, 200).remote(p.mrB.addr(), p.mrB.rkey()));
            src.asSlice(0, 200).fill((byte) 9); // reused at once, as INLINE allows
            src.asSlice(1000, 100).fill((byte) 3);
            p.qa.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.INLINE | SendFlags.SIGNALED)
                    .local(p.mrA, 1000, 100).remote(p.mrB.addr() + 1000, p.mrB.rkey()));
            src.asSlice(1000, 100).fill((byte) 4);
            p.fx.pump();
            assertEquals(2, poll(p.cqA).wrId);
            assertEquals(3, poll(p.cqA).wrId);
            for (int i = 0; i < 200; i++) {
                assertEquals(7, p.mrB.memory().get(ValueLayout.JAVA_BYTE, i));
            }
            for (int i = 1000; i < 1100; i++) {
                assertEquals(3, p.mrB.memory().get(ValueLayout.JAVA_BYTE, i));
            }
        }
    }

    @org.junit.jupiter.api.Test
    void messagesCutByBackPressureAreAcknowledgedWithoutStrayResponsesOrRetries() {
        // An 8-slot ring cuts 20-packet WRITEs and SENDs midway; ACKs for the packets already out are not stray.
        try (RcPair p = new RcPair(new RdmaFixture(8), TransferMode.PACKET, 1024)) {
            SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 20_000).remote(p.mrB.addr(), p.mrB.rkey());
            SendWorkRequest s = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 20_000);
            for (int i = 0; i < 50; i++) {
                p.qb.postRecv(new RecvWorkRequest().wrId(i).local(p.mrB, 32_768, 20_000));
                p.qa.postSend(w.wrId(2 * i));
                p.qa.postSend(s.wrId(2 * i + 1));
            }
            p.fx.await(p.cqA, 100, MS / 100);
            WorkCompletion wc = new WorkCompletion();
            for (int i = 0; i < 100; i++) {
                assertTrue(p.cqA.poll(wc));
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(i, wc.wrId);
            }
            assertTrue(p.a.counter(RdmaCounter.BACK_PRESSURED) > 0, "the ring did cut messages");
            assertEquals(0, p.a.counter(RdmaCounter.STRAY_RESPONSES));
            assertEquals(0, p.a.counter(RdmaCounter.RETRANSMITS));
            assertEquals(0, p.a.counter(RdmaCounter.TIMEOUTS));
        }
    }

    @org.junit.jupiter.api.Test
    void directWritesPlacedAtPostTimeCompleteInOrderAndABadLocalKeyStillFails() {
        try (RcPair p = new RcPair(TransferMode.DIRECT, 1024)) {
            SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).remote(p.mrB.addr(), p.mrB.rkey());
            for (int i = 0; i < 10; i++) { // the first checks the region; the rest take the post-time path
                p.mrA.memory().set(ValueLayout.JAVA_LONG, 8L * i, 1000L + i);
                p.qa.postSend(w.wrId(i).sendFlags(i % 3 == 0 ? SendFlags.SIGNALED : 0).local(p.mrA, 8L * i, 8)
                        .remote(p.mrB.addr() + 8L * i, p.mrB.rkey()));
            }
            for (int i = 0; i < 10; i += 3) {
                WorkCompletion wc = poll(p.cqA);
                assertStatus(WcStatus.SUCCESS, wc);
                assertEquals(i, wc.wrId);
                assertEquals(WcOpcode.RDMA_WRITE, wc.opcode);
            }
            assertFalse(p.cqA.poll(new WorkCompletion()));
            for (int i = 0; i < 10; i++) {
                assertEquals(1000L + i, p.mrB.memory().get(ValueLayout.JAVA_LONG, 8L * i));
            }
            assertEquals(10, p.a.counter(RdmaCounter.DIRECT_OPS));
            assertEquals(1, p.qa.transport.sq.tail, "placed at post time: no send-queue entry after the first");
            w.sg.clear().add(p.mrA.addr(), 8, p.mrA.lkey() ^ 0x5);
            p.qa.postSend(w.wrId(99).sendFlags(0));
            WorkCompletion bad = poll(p.cqA);
            assertStatus(WcStatus.LOC_PROT_ERR, bad);
            assertEquals(99, bad.wrId);
        }
    }
}
