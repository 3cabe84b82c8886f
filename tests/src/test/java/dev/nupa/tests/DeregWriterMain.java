package dev.nupa.tests;

import static dev.nupa.tests.DirectDeregisterProcessTest.ATTEMPTS;
import static dev.nupa.tests.DirectDeregisterProcessTest.BLOCK;
import static dev.nupa.tests.DirectDeregisterProcessTest.DEPTH;
import static dev.nupa.tests.DirectDeregisterProcessTest.OFFER_ADDR;
import static dev.nupa.tests.DirectDeregisterProcessTest.OFFER_KEY;
import static dev.nupa.tests.DirectDeregisterProcessTest.READY_ROUND;
import static dev.nupa.tests.DirectDeregisterProcessTest.SLOTS;
import static dev.nupa.tests.DirectDeregisterProcessTest.TARGET_QPN;
import static dev.nupa.tests.DirectDeregisterProcessTest.WANT_ROUND;
import static dev.nupa.tests.DirectDeregisterProcessTest.WRITER_DONE;
import static dev.nupa.tests.DirectDeregisterProcessTest.WRITER_QPN;

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
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The requester of {@link DirectDeregisterProcessTest}, in its own JVM on fabric node {@link
 * DirectDeregisterProcessTest#WRITER}: streams direct WRITEs of one block each at the region the target offers in the
 * control file, each tagged with the offer's serial and its sequence number; reconnects (a new round of PSNs, the
 * target resetting its QP first) whenever a WRITE failed. At the end it writes, per registration, the last WRITE
 * that completed with success in each block ({@code serial slot q} lines) and prints one RESULT line.
 * Args: fabric-path control-file landed-file seconds.
 */
public final class DeregWriterMain {
    private DeregWriterMain() {
    }

    public static void main(String[] args) throws Exception {
        Path fabricPath = Path.of(args[0]);
        MemorySegment control = DirectDeregisterProcessTest.map(Path.of(args[1]));
        Path landedFile = Path.of(args[2]);
        long deadline = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
        Map<Integer, long[]> landed = new HashMap<>();
        long[] statuses = new long[32];
        long unexpected = 0;
        try (FabricNode node = ShmFabric.attach(fabricPath, DirectDeregisterProcessTest.WRITER, null);
             Link link = new Link(node);
             RdmaContext ctx = RdmaContext.open(link, 16, 16, System::nanoTime)) {
            ProtectionDomain pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(256);
            QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT).withCapacity(64, 64));
            MemoryRegion source = pd.allocMr((long) DEPTH * BLOCK, Access.LOCAL_WRITE);
            control.set(ValueLayout.JAVA_LONG, WRITER_QPN, qp.qpNum() + 1L);
            DirectDeregisterProcessTest.awaitNonZero(control, TARGET_QPN, deadline);
            int targetQpn = (int) control.get(ValueLayout.JAVA_LONG, TARGET_QPN) - 1;
            DirectDeregisterProcessTest.connect(qp, DirectDeregisterProcessTest.TARGET, targetQpn, 0);

            SendWorkRequest wr = new SendWorkRequest(1);
            WorkCompletion wc = new WorkCompletion();
            long q = 0;
            long outstanding = 0;
            int round = 0;
            boolean broken = false;
            // After the deadline it posts no more and takes the completions still to come.
            while (System.nanoTime() < deadline || (outstanding > 0 && System.nanoTime() < deadline + 5_000_000_000L)) {
                link.poll(64, System.nanoTime());
                ctx.poll(System.nanoTime());
                while (cq.poll(wc)) {
                    outstanding--;
                    statuses[Math.min(wc.status, 31)]++;
                    if (wc.status == WcStatus.SUCCESS) {
                        long seq = wc.wrId & 0xFFFF_FFFFL;
                        landed.computeIfAbsent((int) (wc.wrId >>> 32), k -> new long[SLOTS])[(int) (seq % SLOTS)] = seq;
                    } else {
                        broken = true;
                        if (wc.status != WcStatus.REM_ACCESS_ERR && wc.status != WcStatus.WR_FLUSH_ERR
                                && wc.status != WcStatus.RETRY_EXC_ERR) {
                            unexpected++;
                        }
                    }
                }
                if (System.nanoTime() >= deadline) {
                    continue;
                }
                if (broken) {
                    if (outstanding == 0) { // every request of the old round has completed: start a new one
                        round++;
                        control.set(ValueLayout.JAVA_LONG, WANT_ROUND, round);
                        while (control.get(ValueLayout.JAVA_LONG, READY_ROUND) < round && System.nanoTime() < deadline) {
                            Thread.onSpinWait();
                        }
                        DirectDeregisterProcessTest.reset(qp);
                        DirectDeregisterProcessTest.connect(qp, DirectDeregisterProcessTest.TARGET, targetQpn, round);
                        broken = false;
                    }
                    continue;
                }
                long key = (long) DirectDeregisterProcessTest.LONG.getAcquire(control, OFFER_KEY);
                long addr = control.get(ValueLayout.JAVA_LONG, OFFER_ADDR);
                if (key == 0 || key != (long) DirectDeregisterProcessTest.LONG.getAcquire(control, OFFER_KEY) || outstanding >= DEPTH) {
                    continue; // none yet, or it changed while read
                }
                int serial = (int) (key >>> 32);
                q++;
                long src = (q % DEPTH) * BLOCK;
                long word = DirectDeregisterProcessTest.word(serial, q);
                for (int i = 0; i < BLOCK; i += 8) {
                    source.memory().set(ValueLayout.JAVA_LONG, src + i, word);
                }
                wr.wrId(word).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED).remote(addr + (q % SLOTS) * BLOCK, (int) key);
                wr.sg.clear().add(source, src, BLOCK);
                qp.postSend(wr);
                outstanding++;
                control.set(ValueLayout.JAVA_LONG, ATTEMPTS, q);
            }
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(landedFile))) {
                for (Map.Entry<Integer, long[]> e : landed.entrySet()) {
                    for (int slot = 0; slot < SLOTS; slot++) {
                        w.println(e.getKey() + " " + slot + " " + e.getValue()[slot]);
                    }
                }
            }
            System.out.println("RESULT posted=" + q + " succeeded=" + statuses[WcStatus.SUCCESS] + " refused="
                    + statuses[WcStatus.REM_ACCESS_ERR] + " flushed=" + statuses[WcStatus.WR_FLUSH_ERR] + " retryExceeded="
                    + statuses[WcStatus.RETRY_EXC_ERR] + " unexpected=" + unexpected + " outstanding=" + outstanding
                    + " direct=" + ctx.counter(RdmaCounter.DIRECT_OPS) + " fallbacks=" + ctx.counter(RdmaCounter.DIRECT_FALLBACKS));
        } finally {
            control.set(ValueLayout.JAVA_LONG, WRITER_DONE, 1);
        }
    }
}
