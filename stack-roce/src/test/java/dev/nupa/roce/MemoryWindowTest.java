package dev.nupa.roce;

import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.MwType;
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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Type 2 memory windows (IBA 10.6.7; rxe_mw.c): bound by a BIND_MW work request on node B's QP, reached by node A
 * through the window's rkey, invalidated by LOCAL_INV or by A's SEND_WITH_INV, in both transfer modes; and the
 * errors IB prescribes for binds, invalidations, deallocation and deregistration.
 */
class MemoryWindowTest {
    private static final int RIGHTS = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    /** Where windows are bound in the region: 4 KiB in, 8 KiB long. */
    private static final long OFF = 4096;
    private static final long LEN = 8192;

    /** A pair with a bindable 64 KiB region on B. */
    private static MemoryRegion bindable(RcPair p) {
        return p.pdB.allocMr(64 * 1024, RcPair.ALL | Access.MW_BIND);
    }

    private static SendWorkRequest bindRequest(int rkey, MemoryRegion mr, long off, long len, int access) {
        return new SendWorkRequest().wrId(100).opcode(WrOpcode.BIND_MW).sendFlags(SendFlags.SIGNALED)
                .bindMw(rkey, mr, mr.addr() + off, len, access);
    }

    /** Binds {@code mw} on B's QP with a new key byte and returns the completion. */
    private static WorkCompletion bind(RcPair p, MemoryWindow mw, MemoryRegion mr, long off, long len, int access) {
        p.qb.postSend(bindRequest(MemoryWindow.incRkey(mw.rkey()), mr, off, len, access));
        p.fx.pump();
        return poll(p.cqB);
    }

    private static WorkCompletion localInvalidate(RcPair p, int rkey) {
        p.qb.postSend(new SendWorkRequest().wrId(200).opcode(WrOpcode.LOCAL_INV).sendFlags(SendFlags.SIGNALED).invalidate(rkey));
        p.fx.pump();
        return poll(p.cqB);
    }

    private static WorkCompletion fromA(RcPair p, SendWorkRequest wr) {
        p.qa.postSend(wr);
        p.fx.pump();
        return poll(p.cqA);
    }

    private static SendWorkRequest write(RcPair p, long va, int rkey, int length) {
        return new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(p.mrA, 0, length).remote(va, rkey);
    }

    private static boolean zero(MemorySegment m) {
        return m.mismatch(MemorySegment.ofArray(new byte[(int) m.byteSize()])) == -1;
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aBoundWindowCarriesWritesReadsAndAtomicsInItsRange(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            int allocated = mw.rkey();
            assertFalse(mw.bound());
            WorkCompletion b = bind(p, mw, mr, OFF, LEN, RIGHTS);
            assertStatus(WcStatus.SUCCESS, b);
            assertEquals(WcOpcode.BIND_MW, b.opcode, WcOpcode.name(b.opcode));
            assertEquals(100, b.wrId);
            assertTrue(mw.bound());
            assertEquals(MemoryWindow.incRkey(allocated), mw.rkey(), "the window took the new key byte");
            assertEquals(allocated >>> 8, mw.rkey() >>> 8, "and kept its index");

            long va = mr.addr() + OFF;
            RdmaFixture.fill(p.mrA.memory().asSlice(0, 2000), 7);
            long direct = p.a.counter(RdmaCounter.DIRECT_OPS);
            assertStatus(WcStatus.SUCCESS, fromA(p, write(p, va + LEN - 2000, mw.rkey(), 2000)));
            assertEquals(-1, mr.memory().asSlice(OFF + LEN - 2000, 2000).mismatch(p.mrA.memory().asSlice(0, 2000)),
                    "the bytes landed at the end of the window");
            assertTrue(zero(mr.memory().asSlice(0, OFF + LEN - 2000)) && zero(mr.memory().asSlice(OFF + LEN, 64 * 1024 - OFF - LEN)),
                    "nothing else of the region changed");

            WorkCompletion rd = fromA(p, new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 8192, 2000).remote(va + LEN - 2000, mw.rkey()));
            assertStatus(WcStatus.SUCCESS, rd);
            assertEquals(-1, p.mrA.memory().asSlice(8192, 2000).mismatch(p.mrA.memory().asSlice(0, 2000)), "read back");

            mr.memory().set(ValueLayout.JAVA_LONG, OFF + 64, 40);
            assertStatus(WcStatus.SUCCESS, fromA(p, new SendWorkRequest().wrId(3).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD)
                    .sendFlags(SendFlags.SIGNALED).local(p.mrA, 16384, 8).remote(va + 64, mw.rkey()).compareAdd(2)));
            assertEquals(42, mr.memory().get(ValueLayout.JAVA_LONG, OFF + 64));
            assertEquals(40, p.mrA.memory().get(ValueLayout.JAVA_LONG, 16384));
            if (mode == TransferMode.DIRECT) {
                assertEquals(direct + 3, p.a.counter(RdmaCounter.DIRECT_OPS), "the window was reached by direct placement");
                assertEquals(0, p.a.counter(RdmaCounter.DIRECT_FALLBACKS));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aWriteOutsideTheWindowIsARemoteAccessErrorEvenInsideTheRegion(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
            assertStatus(WcStatus.REM_ACCESS_ERR, fromA(p, write(p, mr.addr() + OFF + LEN - 50, mw.rkey(), 100)));
            assertTrue(zero(mr.memory()), "no byte changed");
            assertEquals(QpState.ERR, p.qb.state());
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aRightTheWindowDoesNotGrantIsARemoteAccessError(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = bindable(p); // the region grants REMOTE_WRITE; the window does not
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, Access.REMOTE_READ));
            assertStatus(WcStatus.REM_ACCESS_ERR, fromA(p, write(p, mr.addr() + OFF, mw.rkey(), 100)));
            assertTrue(zero(mr.memory()), "no byte changed");
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void localInvalidateLeavesAStaleKeyThatFailsWithRemoteAccessError(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
            int key = mw.rkey();
            assertStatus(WcStatus.SUCCESS, fromA(p, write(p, mr.addr() + OFF, key, 8).wrId(5)));
            mr.memory().fill((byte) 0);

            WorkCompletion inv = localInvalidate(p, key);
            assertStatus(WcStatus.SUCCESS, inv);
            assertEquals(WcOpcode.LOCAL_INV, inv.opcode, WcOpcode.name(inv.opcode));
            assertFalse(mw.bound());
            long fallbacks = p.a.counter(RdmaCounter.DIRECT_FALLBACKS);

            assertStatus(WcStatus.REM_ACCESS_ERR, fromA(p, write(p, mr.addr() + OFF, key, 100)));
            assertTrue(zero(mr.memory()), "no byte of the stale window's range changed");
            assertEquals(QpState.ERR, p.qa.state());
            assertEquals(QpState.ERR, p.qb.state());
            if (mode == TransferMode.DIRECT) {
                assertEquals(fallbacks + 1, p.a.counter(RdmaCounter.DIRECT_FALLBACKS), "the direct check failed: sent as packets");
            }
            mw.close(); // free again: deallocation is allowed
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void sendWithInvalidateInvalidatesTheWindowAtTheReceiver(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
            int key = mw.rkey();
            p.qb.postRecv(new RecvWorkRequest().wrId(300).local(p.mrB, 0, 4096));
            RdmaFixture.fill(p.mrA.memory().asSlice(0, 3000), 11);
            // 3000 bytes at MTU 1024: SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_INVALIDATE.
            WorkCompletion sent = fromA(p, new SendWorkRequest().wrId(301).opcode(WrOpcode.SEND_WITH_INV)
                    .sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 3000).invalidate(key));
            assertStatus(WcStatus.SUCCESS, sent);
            assertEquals(WcOpcode.SEND, sent.opcode);
            WorkCompletion rc = poll(p.cqB);
            assertStatus(WcStatus.SUCCESS, rc);
            assertEquals(WcOpcode.RECV, rc.opcode);
            assertEquals(300, rc.wrId);
            assertEquals(3000, rc.byteLen);
            assertEquals(WorkCompletion.WITH_INV, rc.wcFlags & WorkCompletion.WITH_INV, rc.toString());
            assertEquals(key, rc.invalidatedRkey());
            assertEquals(-1, p.mrB.memory().asSlice(0, 3000).mismatch(p.mrA.memory().asSlice(0, 3000)));
            assertFalse(mw.bound(), "invalidated by the peer");
            assertEquals(0, p.a.counter(RdmaCounter.DIRECT_SENDS), "a SEND_WITH_INV goes as packets in both modes");

            assertStatus(WcStatus.REM_ACCESS_ERR, fromA(p, write(p, mr.addr() + OFF, key, 100)));
            assertTrue(zero(mr.memory()), "the invalidated key moved no byte");
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aRebindWithANewKeyByteWorksAndTheOldKeyIsStale(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
            int first = mw.rkey();
            assertStatus(WcStatus.SUCCESS, fromA(p, write(p, mr.addr() + OFF, first, 64)));
            assertStatus(WcStatus.SUCCESS, localInvalidate(p, first));
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, 32768, 4096, Access.REMOTE_WRITE));
            int second = mw.rkey();
            assertEquals(MemoryWindow.incRkey(first), second);
            assertNotEquals(first, second);
            mr.memory().fill((byte) 0);

            RdmaFixture.fill(p.mrA.memory().asSlice(0, 64), 3);
            assertStatus(WcStatus.SUCCESS, fromA(p, write(p, mr.addr() + 32768, second, 64)));
            assertEquals(-1, mr.memory().asSlice(32768, 64).mismatch(p.mrA.memory().asSlice(0, 64)), "the new binding's range");
            assertStatus(WcStatus.REM_ACCESS_ERR, fromA(p, write(p, mr.addr() + OFF, first, 64)));
            assertTrue(zero(mr.memory().asSlice(0, 32768)), "the old key reached nothing");
        }
    }

    @Test
    void aBoundWindowIsNotBoundAgainBeforeItIsInvalidated() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
            int key = mw.rkey();
            assertStatus(WcStatus.MW_BIND_ERR, bind(p, mw, mr, 0, 4096, RIGHTS)); // o10-37.2.30: type 2 binds from Free
            assertEquals(key, mw.rkey(), "the failed bind changed nothing");
            assertTrue(mw.bound());
            assertEquals(QpState.ERR, p.qb.state());
            assertEquals(1, p.b.counter(RdmaCounter.MW_BIND_ERRORS));
        }
    }

    enum BadBind { REGION_WITHOUT_MW_BIND, REGION_OF_ANOTHER_PD, WINDOW_OF_ANOTHER_PD, RANGE_PAST_THE_REGION, RANGE_BEFORE_THE_REGION,
        ZERO_LENGTH, WRITABLE_WINDOW_ON_A_REGION_WITHOUT_LOCAL_WRITE }

    @ParameterizedTest
    @EnumSource(BadBind.class)
    void aBindThatFailsItsChecksCompletesWithMwBindErr(BadBind bad) {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            ProtectionDomain other = p.b.allocPd();
            MemoryRegion mr = switch (bad) {
                case REGION_WITHOUT_MW_BIND -> p.pdB.allocMr(64 * 1024, RcPair.ALL);
                case REGION_OF_ANOTHER_PD -> other.allocMr(64 * 1024, RcPair.ALL | Access.MW_BIND);
                case WRITABLE_WINDOW_ON_A_REGION_WITHOUT_LOCAL_WRITE -> p.pdB.allocMr(64 * 1024, Access.REMOTE_READ | Access.MW_BIND);
                default -> bindable(p);
            };
            MemoryWindow mw = (bad == BadBind.WINDOW_OF_ANOTHER_PD ? other : p.pdB).allocMw(MwType.TYPE_2);
            long off = switch (bad) {
                case RANGE_PAST_THE_REGION -> 64 * 1024 - 100;
                case RANGE_BEFORE_THE_REGION -> -8;
                default -> OFF;
            };
            long len = bad == BadBind.ZERO_LENGTH ? 0 : LEN;
            int access = bad == BadBind.WRITABLE_WINDOW_ON_A_REGION_WITHOUT_LOCAL_WRITE ? Access.REMOTE_WRITE : RIGHTS;
            int key = mw.rkey();
            WorkCompletion wc = bind(p, mw, mr, off, len, access);
            assertStatus(WcStatus.MW_BIND_ERR, wc);
            assertEquals(100, wc.wrId);
            assertFalse(mw.bound());
            assertEquals(key, mw.rkey());
            assertEquals(QpState.ERR, p.qb.state(), "a failed bind ends the QP (rxe)");
            assertEquals(1, p.b.counter(RdmaCounter.MW_BIND_ERRORS));
        }
    }

    @Test
    void misusedBindRequestsThrow() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            RdmaException e = assertThrows(RdmaException.class,
                    () -> p.qb.postSend(bindRequest(mw.rkey(), mr, OFF, LEN, Access.LOCAL_WRITE)));
            assertTrue(e.getMessage().contains("memory window access LOCAL_WRITE"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> p.qb.postSend(new SendWorkRequest().opcode(WrOpcode.BIND_MW)));
            assertTrue(e.getMessage().contains("names no memory region"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> p.qb.postSend(new SendWorkRequest().opcode(WrOpcode.LOCAL_INV)
                    .local(p.mrB, 0, 8)));
            assertTrue(e.getMessage().contains("takes no gather list"), e.getMessage());
            e = assertThrows(RdmaException.class, () -> p.pdB.allocMw(MwType.TYPE_1));
            assertTrue(e.getMessage().contains("TYPE_2"), e.getMessage());
            assertEquals(QpState.RTS, p.qb.state(), "refused posts change nothing");
        }
    }

    @Test
    void aBoundWindowIsNotDeallocatedAndItsRegionNotDeregistered() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            MemoryRegion mr = bindable(p);
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
            RdmaException e = assertThrows(RdmaException.class, mw::close);
            assertTrue(e.getMessage().contains("is bound; invalidate it first"), e.getMessage());
            e = assertThrows(RdmaException.class, mr::close);
            assertTrue(e.getMessage().startsWith("EBUSY") && e.getMessage().contains("1 memory window(s) bound"), e.getMessage());
            e = assertThrows(RdmaException.class, p.pdB::close);
            assertTrue(e.getMessage().contains("memory window(s)"), e.getMessage());

            assertStatus(WcStatus.SUCCESS, localInvalidate(p, mw.rkey()));
            mw.close();
            mr.close();
            assertTrue(mr.region.closed());
        }
    }

    enum BadInvalidate { A_REGION_KEY, A_STALE_KEY, A_WINDOW_OF_ANOTHER_PD, A_FREE_WINDOW }

    @ParameterizedTest
    @EnumSource(BadInvalidate.class)
    void sendWithInvalidateOfAKeyTheResponderCannotInvalidateIsAnInvalidRequest(BadInvalidate bad) {
        for (TransferMode mode : TransferMode.values()) {
            try (RcPair p = new RcPair(mode, 1024)) {
                MemoryRegion mr = bindable(p);
                ProtectionDomain other = p.b.allocPd();
                MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
                int key;
                if (bad == BadInvalidate.A_WINDOW_OF_ANOTHER_PD) {
                    // Bound through a second QP of the other domain, on B's context.
                    MemoryRegion otherMr = other.allocMr(64 * 1024, RcPair.ALL | Access.MW_BIND);
                    MemoryWindow otherMw = other.allocMw(MwType.TYPE_2);
                    QueuePair q2 = p.b.createQp(other, QpInitAttr.rc(p.cqB, p.cqB));
                    QueuePair peer = p.a.createQp(p.pdA, QpInitAttr.rc(p.cqA, p.cqA));
                    RdmaFixture.connect(peer, q2, 1024);
                    q2.postSend(bindRequest(MemoryWindow.incRkey(otherMw.rkey()), otherMr, 0, 4096, RIGHTS));
                    p.fx.pump();
                    assertStatus(WcStatus.SUCCESS, poll(p.cqB));
                    key = otherMw.rkey();
                } else {
                    assertStatus(WcStatus.SUCCESS, bind(p, mw, mr, OFF, LEN, RIGHTS));
                    key = switch (bad) {
                        case A_REGION_KEY -> mr.rkey();
                        case A_STALE_KEY -> MemoryWindow.incRkey(mw.rkey());
                        default -> mw.rkey();
                    };
                    if (bad == BadInvalidate.A_FREE_WINDOW) {
                        assertStatus(WcStatus.SUCCESS, localInvalidate(p, key));
                    }
                }
                p.qb.postRecv(new RecvWorkRequest().wrId(300).local(p.mrB, 0, 4096));
                WorkCompletion sent = fromA(p, new SendWorkRequest().wrId(301).opcode(WrOpcode.SEND_WITH_INV)
                        .sendFlags(SendFlags.SIGNALED).local(p.mrA, 0, 64).invalidate(key));
                assertStatus(WcStatus.REM_INV_REQ_ERR, sent);
                WorkCompletion rc = poll(p.cqB);
                assertStatus(WcStatus.REM_INV_REQ_ERR, rc);
                assertEquals(300, rc.wrId);
                assertEquals(QpState.ERR, p.qa.state(), mode.toString());
                assertEquals(QpState.ERR, p.qb.state());
                assertEquals(1, p.b.counter(RdmaCounter.INVALIDATE_ERRORS));
                if (bad == BadInvalidate.A_STALE_KEY) {
                    assertTrue(mw.bound(), "the window of the current key stays bound");
                }
            }
        }
    }

    @Test
    void localInvalidateOfAKeyThatIsNoBoundWindowIsALocalQpOperationError() {
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024)) {
            MemoryWindow mw = p.pdB.allocMw(MwType.TYPE_2);
            WorkCompletion wc = localInvalidate(p, mw.rkey()); // free: nothing to invalidate
            assertStatus(WcStatus.LOC_QP_OP_ERR, wc);
            assertEquals(QpState.ERR, p.qb.state());
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void aWindowKeyIsNoLocalKey(TransferMode mode) {
        try (RcPair p = new RcPair(mode, 1024)) {
            MemoryRegion mr = p.pdA.allocMr(64 * 1024, RcPair.ALL | Access.MW_BIND);
            MemoryWindow mw = p.pdA.allocMw(MwType.TYPE_2);
            p.qa.postSend(bindRequest(MemoryWindow.incRkey(mw.rkey()), mr, 0, 4096, RIGHTS));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            SendWorkRequest wr = new SendWorkRequest().wrId(9).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .remote(p.mrB.addr(), p.mrB.rkey());
            wr.sg.add(mr.addr(), 64, mw.rkey());
            assertStatus(WcStatus.LOC_PROT_ERR, fromA(p, wr));
            assertTrue(zero(p.mrB.memory()));
        }
    }
}
