package dev.nupa.ip;

import static dev.nupa.ip.IpFixture.ip;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import org.junit.jupiter.api.Test;

/**
 * Nothing allocated, for the whole stack: in steady state, a UDP echo (sent, received, echoed in
 * place, received back), one sent from a heap segment, a fragmented one, and an ICMP echo allocate
 * nothing. Everything runs on the test thread (no datapath threads), so its allocation counter sees
 * all of it.
 */
class StackZeroAllocationTest {

    @Test
    void udpAndIcmpEchoesIncludingFragmentsAllocateNothingInSteadyState() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1);
            long[] echoes = {0};
            b.bindUdp(7, (src, srcPort, dst, mem, off, len) -> b.sendUdp(7, src, srcPort, mem, off, len));
            a.bindUdp(5000, (src, srcPort, dst, mem, off, len) -> echoes[0]++);
            a.addEchoListener(9, (from, seq, ttl, mem, off, len, now) -> echoes[0]++);
            MemorySegment small = Arena.ofAuto().allocate(64);
            MemorySegment big = Arena.ofAuto().allocate(20_000);
            MemorySegment heap = MemorySegment.ofArray(new byte[1_472]); // a Vert.x buffer's bytes, summed in place
            long expected = 0;
            long allocated = -1;
            // Steady state: some round of 5,000 echoes allocates nothing at all. Early rounds run before
            // the JIT's escape analysis (and, in the suite's JVM, beside Jazzer's instrumentation).
            for (int round = 0; round < 20 && allocated != 0; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 5_000; i++) {
                    a.sendUdp(5000, ip(1), 7, small, 0, 64);
                    a.sendEchoRequest(ip(1), 9, i, small, 0, 56);
                    a.sendUdp(5000, ip(1), 7, heap, 0, 1_472);
                    expected++;
                    if (i % 10 == 0) {
                        a.sendUdp(5000, ip(1), 7, big, 0, 20_000);
                        expected++;
                    }
                    expected += 2;
                    while (f.links.get(1).poll(64, f.now) + f.links.get(0).poll(64, f.now) > 0) {
                        // until both are quiet
                    }
                }
                allocated = threads.getCurrentThreadAllocatedBytes() - before;
            }
            assertEquals(0, allocated, "bytes allocated by 5,000 rounds of UDP and ICMP echoes, after 20 tries");
            assertEquals(expected, echoes[0]);
        }
    }
}
