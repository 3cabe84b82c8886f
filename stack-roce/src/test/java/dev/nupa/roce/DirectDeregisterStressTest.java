package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.Link;
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
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The target's protection in direct placement, under real concurrency: one thread streams direct WRITEs while the
 * other deregisters and re-registers the region they aim at, for {@code nupa.test.deregSeconds} (10 by default).
 * Once deregistration returns, the region's memory holds a canary that must never change, and what each region
 * held when it was deregistered must be the WRITEs that completed with success (or later ones), each whole: every
 * WRITE lands whole in a registered region or fails (REM_ACCESS_ERR, then the QP's others flushed, IBA 10.8.3).
 */
class DirectDeregisterStressTest {
    private static final int BLOCK = 1024; // one packet at path MTU 1024: a WRITE refused as packets lands nothing
    private static final int SLOTS = 16;
    private static final int DEPTH = 8;
    private static final long CANARY = 0xCA11_AB1E_CA11_AB1EL;

    /** A region on offer: its registration's serial, key and address (told to the writer out of band). */
    private record Offer(int serial, int rkey, long addr) {
    }

    private static int psn(int round) {
        return (round * 0x10000 + 0x100) & 0xFFFFFF;
    }

    private static long word(int serial, long q) {
        return ((long) serial << 32) | q;
    }

    @Test
    void noByteOfADirectWriteLandsInARegionOnceItsDeregistrationReturned() throws Exception {
        long runNs = Long.getLong("nupa.test.deregSeconds", 10) * 1_000_000_000L;
        try (RdmaFixture fx = new RdmaFixture()) {
            RdmaContext a = context(fx, 1);
            RdmaContext b = context(fx, 2);
            Link la = fx.links.get(0);
            Link lb = fx.links.get(1);
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqA = a.createCq(256);
            CompletionQueue cqB = b.createCq(256);
            QueuePair qa = a.createQp(pdA, QpInitAttr.rc(cqA, cqA).withMode(TransferMode.DIRECT).withCapacity(64, 64));
            QueuePair qb = b.createQp(pdB, QpInitAttr.rc(cqB, cqB).withMode(TransferMode.DIRECT).withCapacity(64, 64));
            connect(qa, qb, 0);
            connect(qb, qa, 0);
            MemoryRegion source = pdA.allocMr((long) DEPTH * BLOCK, Access.LOCAL_WRITE);

            AtomicReference<Offer> offer = new AtomicReference<>();
            AtomicInteger wantRound = new AtomicInteger();
            AtomicInteger readyRound = new AtomicInteger();
            AtomicLong attempts = new AtomicLong();
            java.util.concurrent.atomic.AtomicBoolean writerDone = new java.util.concurrent.atomic.AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Map<Integer, long[]> landed = new ConcurrentHashMap<>(); // serial -> the last successful q per slot
            Map<Integer, long[]> held = new ConcurrentHashMap<>(); // serial -> the region's bytes at deregistration
            AtomicLong canaryBroken = new AtomicLong();
            AtomicLong unexpected = new AtomicLong();
            long[] statuses = new long[32];
            long[] cycles = new long[1];
            long deadline = System.nanoTime() + runNs;

            // The target: its node's datapath, reconnects the writer asks for, and region lifetimes of 0-2 ms.
            Runnable service = new Runnable() {
                int ready;

                @Override
                public void run() {
                    lb.poll(64, System.nanoTime());
                    b.poll(System.nanoTime());
                    int want = wantRound.get();
                    if (want > ready) {
                        qb.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
                        connect(qb, qa, want);
                        ready = want;
                        readyRound.set(want);
                    }
                }
            };
            Thread target = Thread.ofPlatform().name("dereg-target").start(() -> {
                try {
                    java.util.Random rnd = new java.util.Random(7);
                    for (int serial = 1; !writerDone.get(); serial++) {
                        MemoryRegion mr = pdB.allocMr((long) SLOTS * BLOCK, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                        mr.memory().fill((byte) 0);
                        offer.set(new Offer(serial, mr.rkey(), mr.addr()));
                        long until = System.nanoTime() + rnd.nextInt(2_000_000);
                        while (System.nanoTime() < until) {
                            service.run();
                        }
                        MemorySegment m = mr.memory();
                        mr.close(); // the writer may be mid-copy into it now
                        held.put(serial, m.toArray(ValueLayout.JAVA_LONG));
                        m.fill((byte) 0);
                        for (long i = 0; i < m.byteSize(); i += 8) {
                            m.set(ValueLayout.JAVA_LONG, i, CANARY);
                        }
                        long start = attempts.get();
                        long waitUntil = System.nanoTime() + 20_000_000L;
                        while (attempts.get() < start + 16 && System.nanoTime() < waitUntil) {
                            service.run();
                        }
                        for (long i = 0; i < m.byteSize(); i += 8) {
                            if (m.get(ValueLayout.JAVA_LONG, i) != CANARY) {
                                if (canaryBroken.incrementAndGet() < 5) {
                                    System.out.printf("canary broken: registration %d, byte %d: 0x%x%n", serial, i, m.get(ValueLayout.JAVA_LONG, i));
                                }
                                break;
                            }
                        }
                        cycles[0] = serial;
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            });

            // The writer: WRITEs of one block each, tagged with the serial they aim at and their sequence number.
            Thread writer = Thread.ofPlatform().name("dereg-writer").start(() -> {
                try {
                    SendWorkRequest wr = new SendWorkRequest(1);
                    WorkCompletion wc = new WorkCompletion();
                    long q = 0;
                    long outstanding = 0;
                    int round = 0;
                    boolean broken = false;
                    // After the deadline the writer posts no more and takes the completions still to come.
                    while (System.nanoTime() < deadline || (outstanding > 0 && System.nanoTime() < deadline + 5_000_000_000L)) {
                        la.poll(64, System.nanoTime());
                        a.poll(System.nanoTime());
                        while (cqA.poll(wc)) {
                            outstanding--;
                            statuses[Math.min(wc.status, 31)]++;
                            if (wc.status == WcStatus.SUCCESS) {
                                int serial = (int) (wc.wrId >>> 32);
                                long seq = wc.wrId & 0xFFFF_FFFFL;
                                landed.computeIfAbsent(serial, k -> new long[SLOTS])[(int) (seq % SLOTS)] = seq;
                            } else {
                                broken = true;
                                if (wc.status != WcStatus.REM_ACCESS_ERR && wc.status != WcStatus.WR_FLUSH_ERR
                                        && wc.status != WcStatus.RETRY_EXC_ERR) {
                                    unexpected.incrementAndGet();
                                }
                            }
                        }
                        if (System.nanoTime() >= deadline) {
                            continue;
                        }
                        if (broken) {
                            if (outstanding == 0) { // every request of the old round has completed: start a new one
                                round++;
                                wantRound.set(round);
                                while (readyRound.get() < round && System.nanoTime() < deadline) {
                                    Thread.onSpinWait();
                                }
                                qa.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
                                connect(qa, qb, round);
                                broken = false;
                            }
                            continue;
                        }
                        Offer o = offer.get();
                        if (o == null || outstanding >= DEPTH) {
                            continue;
                        }
                        q++;
                        long src = (q % DEPTH) * BLOCK;
                        for (int i = 0; i < BLOCK; i += 8) {
                            source.memory().set(ValueLayout.JAVA_LONG, src + i, word(o.serial(), q));
                        }
                        wr.wrId(word(o.serial(), q)).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                                .remote(o.addr() + (q % SLOTS) * BLOCK, o.rkey());
                        wr.sg.clear().add(source, src, BLOCK);
                        qa.postSend(wr);
                        outstanding++;
                        attempts.incrementAndGet();
                    }
                    assertEquals(0, outstanding, "WRITEs whose completions never came");
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                } finally {
                    writerDone.set(true);
                }
            });
            writer.join();
            target.join();
            if (failure.get() != null) {
                throw new AssertionError("a thread failed", failure.get());
            }

            assertEquals(0, canaryBroken.get(), "deregistered memory changed after deregistration returned");
            int checked = 0;
            for (Map.Entry<Integer, long[]> e : held.entrySet()) {
                MemorySegment m = MemorySegment.ofArray(e.getValue());
                long[] last = landed.getOrDefault(e.getKey(), new long[SLOTS]);
                for (int slot = 0; slot < SLOTS; slot++) {
                    // Whole: one WRITE's words; and no older than the last that completed with success (a later one
                    // may have landed and failed after, e.g. its ACK late past the retries: it landed whole all the same).
                    long got = m.get(ValueLayout.JAVA_LONG, (long) slot * BLOCK);
                    for (int i = 8; i < BLOCK; i += 8) {
                        assertEquals(got, m.get(ValueLayout.JAVA_LONG, (long) slot * BLOCK + i),
                                "registration " + e.getKey() + ", block " + slot + " is not one WRITE's, at byte " + i);
                    }
                    long q = got & 0xFFFF_FFFFL;
                    boolean ok = got == 0 ? last[slot] == 0
                            : (int) (got >>> 32) == e.getKey() && q % SLOTS == slot && q >= last[slot];
                    assertTrue(ok, "registration " + e.getKey() + ", block " + slot + ": 0x" + Long.toHexString(got)
                            + " where the last successful WRITE put 0x" + Long.toHexString(word(e.getKey(), last[slot])));
                    checked++;
                }
            }
            assertEquals(0, unexpected.get(), "completions other than SUCCESS, REM_ACCESS_ERR, WR_FLUSH_ERR and RETRY_EXC_ERR (by status: "
                    + java.util.Arrays.toString(statuses) + ")");
            System.out.printf("dereg stress: %d registrations, %d WRITEs posted, %d succeeded, %d refused, %d flushed;"
                    + " direct %d, fallbacks %d, revoked %d%n", cycles[0], attempts.get(), statuses[WcStatus.SUCCESS],
                    statuses[WcStatus.REM_ACCESS_ERR], statuses[WcStatus.WR_FLUSH_ERR], a.counter(RdmaCounter.DIRECT_OPS),
                    a.counter(RdmaCounter.DIRECT_FALLBACKS), a.counter(RdmaCounter.DIRECT_REVOKED));
            assertTrue(cycles[0] >= 20 && checked >= 20 * SLOTS, "registrations cycled: " + cycles[0]);
            assertTrue(statuses[WcStatus.SUCCESS] > 1_000 && a.counter(RdmaCounter.DIRECT_OPS) > 1_000,
                    "WRITEs landed directly: " + statuses[WcStatus.SUCCESS]);
            assertTrue(statuses[WcStatus.REM_ACCESS_ERR] > 0, "WRITEs to withdrawn regions were refused");
        }
    }

    private static RdmaContext context(RdmaFixture fx, int address) {
        return fx.node(address, d -> d, Link.DEFAULT_MTU, System::nanoTime);
    }

    /** Moves {@code q} (in RESET) to RTS towards {@code peer} for reconnection round {@code round}. */
    private static void connect(QueuePair q, QueuePair peer, int round) {
        q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        RdmaFixture.rtr(q, peer, 1024, psn(round));
        RdmaFixture.rts(q, psn(round), 14, 7, 7); // about 67 ms a try: a thread descheduled for a while is no loss
    }
}
