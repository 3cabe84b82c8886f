package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** RFC 5681 / RFC 3465 / RFC 6582 / RFC 6928 as {@link NewReno} applies them; MSS 1000 for easy sums. */
class NewRenoTest {
    private static final int MSS = 1000;
    private static final long RTT = 10_000_000L;

    @Test
    void rfc6928_initialWindowIsMinOfTenMssAndMaxOfTwoMssAnd14600() {
        assertEquals(14_600, new NewReno(1460).cwnd(), "min(14600, max(2920, 14600))");
        assertEquals(5_360, new NewReno(536).cwnd(), "min(5360, 14600)");
        assertEquals(17_920, new NewReno(8960).cwnd(), "min(89600, max(17920, 14600))");
        assertEquals(14_600, new NewReno(4056).cwnd(), "min(40560, max(8112, 14600))");
        assertEquals(Integer.MAX_VALUE, new NewReno(1460).ssthresh(), "RFC 5681 3.1: arbitrarily high");
    }

    @Test
    void rfc5681_3_1_slowStartDoublesCwndEachRttOfAcks() {
        NewReno reno = new NewReno(MSS, 10 * MSS);
        long now = 0;
        assertTrue(reno.inSlowStart());
        now = AckClock.oneRtt(reno, now, RTT, MSS);
        assertEquals(20 * MSS, reno.cwnd());
        now = AckClock.oneRtt(reno, now, RTT, MSS);
        assertEquals(40 * MSS, reno.cwnd());
        AckClock.oneRtt(reno, now, RTT, MSS);
        assertEquals(80 * MSS, reno.cwnd());
    }

    @Test
    void rfc3465_2_2_byteCountingDoublesCwndPerRttEvenWithDelayedAcks() {
        NewReno reno = new NewReno(MSS, 10 * MSS);
        AckClock.oneRtt(reno, 0, RTT, 2 * MSS); // an ACK every other segment: 5 ACKs of 2 SMSS
        assertEquals(20 * MSS, reno.cwnd());
    }

    @Test
    void rfc3465_2_2_oneAckGrowsSlowStartByAtMostTwoSmss() {
        NewReno reno = new NewReno(MSS, 10 * MSS);
        reno.onAck(0, 5 * MSS, RTT, 10 * MSS);
        assertEquals(12 * MSS, reno.cwnd(), "L = 2 SMSS");
        reno.onAck(0, 500, RTT, 12 * MSS);
        assertEquals(12 * MSS + 500, reno.cwnd(), "a small ACK grows by what it acknowledged");
    }

    @Test
    void rfc3465_2_3_slowStartAfterATimeoutGrowsAtMostOneSmssPerAck() {
        NewReno reno = new NewReno(MSS, 40 * MSS);
        reno.onRetransmitTimeout(0, 40 * MSS);
        reno.onAck(1, 2 * MSS, RTT, MSS);
        assertEquals(2 * MSS, reno.cwnd(), "L = 1 SMSS after an RTO");
    }

    @Test
    void rfc5681_3_1_slowStartStopsAtSsthreshAndCongestionAvoidanceTakesOver() {
        NewReno reno = new NewReno(MSS, 16 * MSS);
        reno.onRetransmitTimeout(0, 16 * MSS); // ssthresh = 8 SMSS, cwnd = 1 SMSS
        assertEquals(8 * MSS, reno.ssthresh());
        long now = 0;
        for (int i = 0; i < 7; i++) {
            reno.onAck(++now, MSS, RTT, reno.cwnd());
        }
        assertEquals(8 * MSS, reno.cwnd());
        assertFalse(reno.inSlowStart());
        reno.onAck(++now, MSS, RTT, reno.cwnd());
        assertEquals(8 * MSS + MSS * MSS / (8 * MSS), reno.cwnd(), "equation (3): + SMSS*SMSS/cwnd");
    }

    @Test
    void rfc5681_3_1_congestionAvoidanceGrowsAboutOneSmssPerRtt() {
        NewReno reno = inAvoidanceAt(20 * MSS);
        long now = AckClock.oneRtt(reno, 0, RTT, MSS);
        // Equation (3) per ACK: 20 ACKs each adding SMSS*SMSS/cwnd of a cwnd growing from 20000:
        // 1000 * (1/20 + 1/20.05 + ...) = a little under 1000 bytes.
        assertTrue(reno.cwnd() > 20 * MSS + 950 && reno.cwnd() <= 21 * MSS, "cwnd " + reno.cwnd());
        for (int i = 0; i < 9; i++) {
            now = AckClock.oneRtt(reno, now, RTT, MSS);
        }
        assertTrue(reno.cwnd() > 29_500 && reno.cwnd() <= 30 * MSS, "10 RTTs, about 10 SMSS: " + reno.cwnd());
    }

    @Test
    void rfc5681_3_1_countingBytesKeepsOneSmssPerRttUnderDelayedAcks() {
        NewReno reno = inAvoidanceAt(20 * MSS);
        AckClock.oneRtt(reno, 0, RTT, 2 * MSS); // 10 ACKs of 2 SMSS
        assertTrue(reno.cwnd() > 20 * MSS + 950 && reno.cwnd() <= 21 * MSS, "cwnd " + reno.cwnd());
    }

    @Test
    void rfc5681_3_1_oneAckNeverAddsMoreThanOneSmssInCongestionAvoidance() {
        NewReno reno = inAvoidanceAt(20 * MSS);
        reno.onAck(0, 100 * MSS, RTT, 20 * MSS);
        assertEquals(21 * MSS, reno.cwnd());
    }

    @Test
    void rfc5681_3_2_lossSetsSsthreshAndCwndToHalfTheFlightSize() {
        NewReno reno = new NewReno(MSS, 40 * MSS);
        reno.onEnterRecovery(0, 40 * MSS);
        assertEquals(20 * MSS, reno.ssthresh());
        assertEquals(20 * MSS, reno.cwnd());
        assertTrue(reno.inRecovery());
    }

    @Test
    void rfc5681_3_2_ssthreshIsAtLeastTwoSmss() {
        NewReno reno = new NewReno(MSS, 3 * MSS);
        reno.onEnterRecovery(0, 3 * MSS);
        assertEquals(2 * MSS, reno.ssthresh(), "max(1500, 2000)");
        assertEquals(2 * MSS, reno.cwnd());
    }

    @Test
    void rfc6582_3_2_cwndHoldsDuringRecoveryAndIsSsthreshAfterTheFullAck() {
        NewReno reno = new NewReno(MSS, 40 * MSS);
        reno.onEnterRecovery(0, 40 * MSS);
        reno.onAck(1, 5 * MSS, RTT, 40 * MSS); // partial ACKs: the connection retransmits
        reno.onAck(2, 5 * MSS, RTT, 35 * MSS);
        assertEquals(20 * MSS, reno.cwnd());
        reno.onExitRecovery(3);
        assertFalse(reno.inRecovery());
        assertEquals(reno.ssthresh(), reno.cwnd());
        reno.onAck(3, MSS, RTT, reno.cwnd());
        assertEquals(20 * MSS + MSS * MSS / (20 * MSS), reno.cwnd(), "congestion avoidance after");
    }

    @Test
    void rfc5681_3_1_timeoutSetsSsthreshToHalfTheFlightAndCwndToOneSmss() {
        NewReno reno = new NewReno(MSS, 40 * MSS);
        reno.onEnterRecovery(0, 40 * MSS);
        reno.onRetransmitTimeout(1, 30 * MSS);
        assertEquals(15 * MSS, reno.ssthresh());
        assertEquals(MSS, reno.cwnd(), "the loss window");
        assertFalse(reno.inRecovery(), "a timeout ends recovery");
        assertTrue(reno.inSlowStart());
    }

    @Test
    void rfc5681_3_1_aRepeatedTimeoutBeforeNewDataIsAcknowledgedHoldsSsthresh() {
        NewReno reno = new NewReno(MSS, 40 * MSS);
        reno.onRetransmitTimeout(0, 40 * MSS);
        reno.onRetransmitTimeout(1, 40 * MSS); // the same segment timed out again
        assertEquals(20 * MSS, reno.ssthresh());
        reno.onAck(2, MSS, RTT, MSS);
        reno.onRetransmitTimeout(3, 10 * MSS); // a new timeout after progress
        assertEquals(5 * MSS, reno.ssthresh());
        assertEquals(MSS, reno.cwnd());
    }

    @Test
    void rfc9438_5_8_aFlowThatDoesNotFillItsWindowDoesNotGrowIt() {
        NewReno reno = new NewReno(MSS, 10 * MSS);
        reno.onAck(0, MSS, RTT, 5 * MSS);
        assertEquals(10 * MSS, reno.cwnd(), "half the window in flight: application-limited");
        reno.onAck(1, MSS, RTT, 9 * MSS);
        assertEquals(10 * MSS, reno.cwnd(), "a full SMSS of the window unused");
        reno.onAck(2, MSS, RTT, 9 * MSS + 1);
        assertEquals(11 * MSS, reno.cwnd(), "less than an SMSS unused: cwnd-limited");
    }

    @Test
    void anAckOfNothingChangesNothing() {
        NewReno reno = new NewReno(MSS, 10 * MSS);
        reno.onAck(0, 0, RTT, 10 * MSS);
        reno.onAck(0, -5, RTT, 10 * MSS);
        assertEquals(10 * MSS, reno.cwnd());
    }

    @Test
    void resetStartsOverWithTheGivenMssAndWindow() {
        NewReno reno = new NewReno(MSS, 40 * MSS);
        reno.onEnterRecovery(0, 40 * MSS);
        reno.reset(8960, 17_920);
        assertEquals(8960, reno.mss());
        assertEquals(17_920, reno.cwnd());
        assertEquals(Integer.MAX_VALUE, reno.ssthresh());
        assertFalse(reno.inRecovery());
        assertEquals("newreno", reno.name());
        assertThrows(IllegalArgumentException.class, () -> reno.reset(0, 10));
        assertThrows(IllegalArgumentException.class, () -> reno.reset(1460, 0));
    }

    @Test
    void cwndStopsAtTheLargestWindowTcpCanAdvertise() {
        NewReno reno = new NewReno(65_495, CongestionControls.MAX_CWND - 10);
        reno.onAck(0, 65_495, RTT, reno.cwnd());
        assertEquals(CongestionControls.MAX_CWND, reno.cwnd());
    }

    /** A controller in congestion avoidance with cwnd = ssthresh = {@code window}, out of recovery. */
    static NewReno inAvoidanceAt(int window) {
        NewReno reno = new NewReno(MSS, 2 * window);
        reno.onEnterRecovery(0, 2 * window);
        reno.onExitRecovery(0);
        assertEquals(window, reno.cwnd());
        assertFalse(reno.inSlowStart());
        return reno;
    }
}
