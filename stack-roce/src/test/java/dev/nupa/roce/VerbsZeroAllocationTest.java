package dev.nupa.roce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Posting and polling allocate nothing. Measured with the JVM's per-thread
 * allocation counter (the whole transport runs on this thread) over rounds of WRITE, READ, SEND and
 * FETCH_AND_ADD with reused work requests and completions, after a warm-up.
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
            long allocated = -1;
            for (int round = 0; round < 5; round++) {
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
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            assertEquals(5 * 5_000 * 5, completions, "every request completed with success");
            assertEquals(0, allocated, "bytes allocated by 5,000 rounds of 4 requests and a receive");
            assertTrue(p.mrB.memory().get(java.lang.foreign.ValueLayout.JAVA_LONG, 8192) == 25_000);
        }
    }
}
