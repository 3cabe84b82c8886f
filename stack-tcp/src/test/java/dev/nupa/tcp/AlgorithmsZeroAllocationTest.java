package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * Nothing on the data path allocates. The estimator, both controllers, the
 * ISN generator and SYN cookies driven for many events allocate nothing once built (the JVM's
 * per-thread allocation counter, as in stack-ip's ZeroAllocationTest).
 */
class AlgorithmsZeroAllocationTest {

    @Test
    void estimatorControllersIsnsAndCookiesAllocateNothingAfterConstruction() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        RttEstimator rtt = new RttEstimator();
        CongestionControl reno = new NewReno(1460);
        CongestionControl cubic = new Cubic(1460);
        IsnGenerator isns = new IsnGenerator(1, 2);
        SynCookies cookies = new SynCookies(3, 4);
        long sink = 0;
        long now = 0;
        long allocated = -1;
        // Steady state: some round allocates nothing. Early rounds run before the JIT's escape
        // analysis (and, in the suite's JVM, beside Jazzer's instrumentation of loaded classes).
        for (int round = 0; round < 20 && allocated != 0; round++) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 20_000; i++) {
                now += 10_000;
                rtt.sample(50_000 + (i & 1023), 20 * 1460, 1460);
                if ((i & 255) == 0) {
                    rtt.backOff();
                }
                sink += rtt.rto();
                drive(reno, now, i);
                drive(cubic, now, i);
                sink += reno.cwnd() + cubic.cwnd();
                sink += isns.isn(now, 0x0a000001, 80, 0x0a000002, i & 0xffff);
                int cookie = cookies.encode(now, 0x0a000001, 80, 0x0a000002, i & 0xffff, i, 1460);
                sink += cookies.decode(now, 0x0a000001, 80, 0x0a000002, i & 0xffff, i + 1, cookie);
            }
            allocated = threads.getCurrentThreadAllocatedBytes() - before;
        }
        assertEquals(0, allocated, "bytes allocated by 20,000 rounds of events, after 20 tries");
        assertNotEquals(0, sink);
    }

    private static void drive(CongestionControl cc, long now, int i) {
        if (i % 5000 == 4999) {
            cc.onEnterRecovery(now, cc.cwnd());
        } else if (i % 5000 == 0) {
            cc.onExitRecovery(now);
        } else if (i % 7919 == 0) {
            cc.onRetransmitTimeout(now, cc.cwnd());
        }
        cc.onAck(now, 1460, 50_000, cc.cwnd());
    }
}
