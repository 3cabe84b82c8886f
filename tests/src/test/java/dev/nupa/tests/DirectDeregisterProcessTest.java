package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.Link;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.TransferMode;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The target's protection in direct placement between two processes: a child JVM ({@link DeregWriterMain}) streams
 * direct WRITEs while this one deregisters and re-registers the region they aim at, for {@code
 * nupa.test.deregSeconds} (10 by default). Once deregistration returns, the region's memory holds a canary that must
 * never change, and each region, as it was when deregistered, holds in every block one WRITE whole, no older than
 * the last that completed with success there: every WRITE lands whole in a registered region or fails
 * (REM_ACCESS_ERR, then the QP's others flushed, IBA 10.8.3). Where membarrier(2) serves, the writer stores its
 * busy word without a fence and deregistration runs the heavy one across the two processes.
 */
class DirectDeregisterProcessTest {
    static final int TARGET = 1;
    static final int WRITER = 2;
    static final int BLOCK = 1024; // one packet: a WRITE refused as packets lands nothing
    static final int SLOTS = 16;
    static final int DEPTH = 8;
    static final long CANARY = 0xCA11_AB1E_CA11_AB1EL;
    // The control file the two processes share (longs): the offer (serial << 32 | rkey, then its address), the
    // reconnection rounds asked and ready, the writer's attempts, that it is done, and the two QP numbers (+1).
    static final long OFFER_KEY = 0;
    static final long OFFER_ADDR = 8;
    static final long WANT_ROUND = 16;
    static final long READY_ROUND = 24;
    static final long ATTEMPTS = 32;
    static final long WRITER_DONE = 40;
    static final long WRITER_QPN = 48;
    static final long TARGET_QPN = 56;
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long MS = 1_000_000L;

    static long word(int serial, long q) {
        return ((long) serial << 32) | q;
    }

    static MemorySegment map(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, 4096, Arena.ofAuto());
        }
    }

    static void awaitNonZero(MemorySegment control, long at, long deadline) {
        while ((long) LONG.getAcquire(control, at) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("the other process never set word " + at + " of the control file");
            }
            Thread.onSpinWait();
        }
    }

    private static int psn(int round) {
        return (round * 0x10000 + 0x100) & 0xFFFFFF;
    }

    /** Moves {@code q} (in RESET) to RTS towards QP {@code destQpn} of node {@code destNode} for round {@code round}. */
    static void connect(QueuePair q, int destNode, int destQpn, int round) {
        RdmaPeerMain.init(q);
        RdmaPeerMain.rtr(q, destNode, destQpn, psn(round));
        RdmaPeerMain.rts(q, psn(round));
    }

    static void reset(QueuePair q) {
        q.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
    }

    @Test
    void noByteOfADirectWriteFromAnotherProcessLandsInARegionOnceItsDeregistrationReturned() throws Exception {
        long seconds = Long.getLong("nupa.test.deregSeconds", 10);
        Path fabricPath = ChildJvm.newFabricPath();
        Path dir = Files.createTempDirectory("nupa-dereg-");
        Path controlFile = Files.write(dir.resolve("control"), new byte[4096]);
        Path landedFile = dir.resolve("landed");
        MemorySegment control = map(controlFile);
        try (Fabric fabric = ShmFabric.create(fabricPath, RdmaMultiProcessTest.GEOMETRY);
             FabricNode node = fabric.attach(TARGET);
             Link link = new Link(node);
             RdmaContext ctx = RdmaContext.open(link, 16, 16, System::nanoTime);
             ChildJvm writer = ChildJvm.start("dereg-writer", DeregWriterMain.class, fabricPath, controlFile, landedFile, seconds)) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(256);
            QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT).withCapacity(64, 64));
            LONG.setRelease(control, TARGET_QPN, qp.qpNum() + 1L);
            ChildJvm.waitUntil("the writer says its QP", 60_000, () -> {
                if (!writer.process.isAlive()) {
                    fail("the writer exited before it was ready:\n" + writer.output());
                }
                return (long) LONG.getAcquire(control, WRITER_QPN) != 0;
            });
            int writerQpn = (int) control.get(ValueLayout.JAVA_LONG, WRITER_QPN) - 1;
            connect(qp, WRITER, writerQpn, 0);

            Map<Integer, long[]> held = new HashMap<>(); // serial -> the region's words at deregistration
            long canaryBroken = 0;
            int ready = 0;
            java.util.Random rnd = new java.util.Random(7);
            int serial = 0;
            while (control.get(ValueLayout.JAVA_LONG, WRITER_DONE) == 0 && writer.process.isAlive()) {
                serial++;
                MemoryRegion mr = pd.allocMr((long) SLOTS * BLOCK, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                MemorySegment m = mr.memory(); // still readable after deregistration: window space nobody holds
                m.fill((byte) 0);
                control.set(ValueLayout.JAVA_LONG, OFFER_ADDR, mr.addr());
                LONG.setRelease(control, OFFER_KEY, word(serial, mr.rkey() & 0xFFFF_FFFFL));
                long until = System.nanoTime() + rnd.nextInt(2_000_000);
                long start = -1;
                // Serve the datapath and the writer's reconnections for the region's life, then (after the
                // deregistration) until the writer tried 16 more WRITEs or 20 ms passed.
                for (int phase = 0; phase < 2; ) {
                    link.poll(64, System.nanoTime());
                    ctx.poll(System.nanoTime());
                    int want = (int) (long) LONG.getAcquire(control, WANT_ROUND);
                    if (want > ready) {
                        reset(qp);
                        connect(qp, WRITER, writerQpn, want);
                        ready = want;
                        LONG.setRelease(control, READY_ROUND, (long) want);
                    }
                    if (phase == 0 && System.nanoTime() >= until) {
                        mr.close(); // the writer may be mid-copy into it now
                        held.put(serial, m.toArray(ValueLayout.JAVA_LONG));
                        for (long i = 0; i < m.byteSize(); i += 8) {
                            m.set(ValueLayout.JAVA_LONG, i, CANARY);
                        }
                        start = control.get(ValueLayout.JAVA_LONG, ATTEMPTS);
                        until = System.nanoTime() + 20 * MS;
                        phase = 1;
                        continue;
                    }
                    if (phase == 1 && (control.get(ValueLayout.JAVA_LONG, ATTEMPTS) >= start + 16 || System.nanoTime() >= until)) {
                        for (long i = 0; i < m.byteSize(); i += 8) {
                            if (m.get(ValueLayout.JAVA_LONG, i) != CANARY) {
                                canaryBroken++;
                                System.out.printf("canary broken: registration %d, byte %d: 0x%x%n", serial, i,
                                        m.get(ValueLayout.JAVA_LONG, i));
                                break;
                            }
                        }
                        phase = 2;
                    }
                }
            }
            Map<String, String> result = writer.awaitResult(60_000);
            System.out.println("dereg stress between processes: " + serial + " registrations; writer " + result);
            assertEquals(0, canaryBroken, "deregistered memory changed after deregistration returned");
            assertEquals(0, ChildJvm.num(result, "unexpected"), "completions other than SUCCESS, REM_ACCESS_ERR, WR_FLUSH_ERR, RETRY_EXC_ERR");
            assertEquals(0, ChildJvm.num(result, "outstanding"), "WRITEs whose completions never came");

            Map<Integer, long[]> landed = new HashMap<>();
            for (String line : Files.readAllLines(landedFile)) {
                String[] f = line.split(" ");
                landed.computeIfAbsent(Integer.parseInt(f[0]), k -> new long[SLOTS])[Integer.parseInt(f[1])] = Long.parseLong(f[2]);
            }
            int checked = 0;
            for (Map.Entry<Integer, long[]> e : held.entrySet()) {
                long[] words = e.getValue();
                long[] last = landed.getOrDefault(e.getKey(), new long[SLOTS]);
                for (int slot = 0; slot < SLOTS; slot++) {
                    // Whole: one WRITE's words; and no older than the last that completed with success (a later one
                    // may have landed and failed after, e.g. its ACK late past the retries: it landed whole all the same).
                    long got = words[slot * BLOCK / 8];
                    for (int i = 1; i < BLOCK / 8; i++) {
                        assertEquals(got, words[slot * BLOCK / 8 + i], "registration " + e.getKey() + ", block " + slot + " is not one WRITE's");
                    }
                    long q = got & 0xFFFF_FFFFL;
                    boolean ok = got == 0 ? last[slot] == 0 : (int) (got >>> 32) == e.getKey() && q % SLOTS == slot && q >= last[slot];
                    assertTrue(ok, "registration " + e.getKey() + ", block " + slot + ": 0x" + Long.toHexString(got)
                            + " where the last successful WRITE put 0x" + Long.toHexString(word(e.getKey(), last[slot])));
                    checked++;
                }
            }
            assertTrue(serial >= 20 && checked >= 20 * SLOTS, "registrations cycled: " + serial);
            assertTrue(ChildJvm.num(result, "succeeded") > 1_000 && ChildJvm.num(result, "direct") > 1_000, "WRITEs landed directly: " + result);
            assertTrue(ChildJvm.num(result, "refused") > 0, "WRITEs to withdrawn regions were refused: " + result);
        } finally {
            Files.deleteIfExists(fabricPath);
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }
}
