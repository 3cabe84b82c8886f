package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Posting and polling allocate nothing. Measured with the JVM's per-thread
 * allocation counter (the whole transport runs on this thread) over rounds of WRITE, READ, SEND and
 * FETCH_AND_ADD with reused work requests and completions, after a warm-up. The JVM itself allocates a few bytes on
 * this thread once in a while (a one-time 128 bytes, some 650 ms after start), so the check is that some round after
 * the warm-up allocated nothing at all: an allocation per operation would show in every round.
 */
class VerbsZeroAllocationTest {

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void postingTransmittingAndPollingAllocateNothing(TransferMode mode) {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (RcPair p = new RcPair(mode, 1024)) {
            SendWorkRequest write = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 3000).remote(p.mrB.addr(), p.mrB.rkey());
            SendWorkRequest read = new SendWorkRequest().opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 4096, 3000).remote(p.mrB.addr(), p.mrB.rkey());
            SendWorkRequest faa = new SendWorkRequest().opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 8192, 8).remote(p.mrB.addr() + 8192, p.mrB.rkey()).compareAdd(1);
            SendWorkRequest send = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED | SendFlags.INLINE)
                    .local(p.mrA, 0, 64);
            RecvWorkRequest recv = new RecvWorkRequest().local(p.mrB, 16_384, 64);
            WorkCompletion wc = new WorkCompletion();
            long completions = 0;
            long[] allocated = new long[8];
            for (int round = 0; round < allocated.length; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 5_000; i++) {
                    p.qb.postRecv(recv);
                    p.qa.postSend(write);
                    p.qa.postSend(read);
                    p.qa.postSend(faa);
                    p.qa.postSend(send);
                    p.fx.pump();
                    while (p.cqA.poll(wc)) {
                        completions += wc.status == WcStatus.SUCCESS ? 1 : 1_000_000;
                    }
                    while (p.cqB.poll(wc)) {
                        completions += wc.status == WcStatus.SUCCESS ? 1 : 1_000_000;
                    }
                }
                allocated[round] = threads.getCurrentThreadAllocatedBytes() - before;
            }
            assertEquals(allocated.length * 5_000 * 5, completions, "every request completed with success");
            long least = java.util.Arrays.stream(allocated, 2, allocated.length).min().orElseThrow();
            assertEquals(0, least, "bytes allocated by rounds of 5,000 x 4 requests and a receive, after two of warm-up: "
                    + java.util.Arrays.toString(allocated));
            assertTrue(p.mrB.memory().get(java.lang.foreign.ValueLayout.JAVA_LONG, 8192) == allocated.length * 5_000L);
        }
    }
}
