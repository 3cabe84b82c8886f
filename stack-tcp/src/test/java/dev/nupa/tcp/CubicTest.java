package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * RFC 9438 as {@link Cubic} applies it. MSS 1000 bytes, so a window of W segments is W * 1000
 * bytes and the RFC's segment arithmetic can be checked by hand.
 */
class CubicTest {
    private static final int MSS = 1000;
    private static final long MS = 1_000_000L;
    private static final long S = 1_000_000_000L;

    @Test
    void rfc9438_4_10_slowStartBelowSsthreshIsRenos() {
        Cubic cubic = new Cubic(MSS, 10 * MSS, true);
        long now = AckClock.oneRtt(cubic, 0, 100 * MS, MSS);
        assertEquals(20 * MSS, cubic.cwnd());
        AckClock.oneRtt(cubic, now, 100 * MS, MSS);
        assertEquals(40 * MSS, cubic.cwnd());
        assertEquals(Integer.MAX_VALUE, cubic.ssthresh());
        assertEquals(14_600, new Cubic(1460).cwnd(), "RFC 6928 initial window");
    }

    @Test
    void rfc9438_4_6_lossCutsCwndAndSsthreshToSevenTenthsAndRemembersWmax() {
        Cubic cubic = new Cubic(MSS, 100 * MSS, true);
        cubic.onEnterRecovery(0, 100 * MSS);
        assertEquals(70 * MSS, cubic.cwnd(), "100 * 0.7");
        assertEquals(70 * MSS, cubic.ssthresh());
        assertEquals(100 * MSS, cubic.wMax(), 0.0);
        assertTrue(cubic.inRecovery());
        cubic.onAck(1, 10 * MSS, 100 * MS, 100 * MSS);
        assertEquals(70 * MSS, cubic.cwnd(), "no growth during recovery");
        cubic.onExitRecovery(2);
        assertEquals(70 * MSS, cubic.cwnd());
        assertFalse(cubic.inRecovery());
    }

    @Test
    void rfc9438_4_6_cwndAndSsthreshAreAtLeastTwoSmss() {
        Cubic cubic = new Cubic(MSS, 2500, true);
        cubic.onEnterRecovery(0, 2500);
        assertEquals(2 * MSS, cubic.cwnd(), "max(2500 * 0.7 = 1750, 2000)");
        assertEquals(2 * MSS, cubic.ssthresh());
    }

    @Test
    void rfc9438_eq1_eq2_kAndWcubicMatchTheEquationsWorkedByHand() {
        Cubic cubic = afterLossAt(100, true);
        cubic.onAck(0, MSS, 100 * MS, cubic.cwnd()); // the stage starts: cwnd_epoch = 70 segments
        // Equation 2: K = cbrt((W_max - cwnd_epoch) / C) = cbrt((100 - 70) / 0.4) = cbrt(75).
        // 4.2^3 = 74.088 and 4.22^3 = 75.151, so K lies just above 4.217; to 10 digits 4.217163327.
        assertEquals(4.217163327, cubic.k(), 1e-9);
        // Equation 1, segments: W_cubic(t) = 0.4 * (t - K)^3 + 100.
        // t = 0: 0.4 * (-cbrt 75)^3 + 100 = 0.4 * -75 + 100 = 70, the window the stage started at.
        assertEquals(70 * MSS, cubic.wCubic(0), 1e-6);
        // t = 1: (1 - 4.217163)^3 = (-3.217163)^3 = -33.29809; * 0.4 = -13.31924; + 100 = 86.68076.
        assertEquals(86_680.76, cubic.wCubic(1), 0.01);
        // t = 2: (-2.217163)^3 = -10.89916; * 0.4 = -4.35966; + 100 = 95.64034.
        assertEquals(95_640.34, cubic.wCubic(2), 0.01);
        // t = K: the plateau, W_max; t = 5: (0.782837)^3 = 0.479750; * 0.4 = 0.19190; 100.19190.
        assertEquals(100 * MSS, cubic.wCubic(cubic.k()), 1e-6);
        assertEquals(100_191.90, cubic.wCubic(5), 0.01);
    }

    @Test
    void rfc9438_4_4_4_5_cwndClimbsConcaveBackToWmaxNearTEqualsKThenProbesConvex() {
        Cubic cubic = afterLossAt(100, true);
        // RTT 200 ms keeps W_est (70 + 0.53 segments a round) below the cubic curve throughout.
        long rtt = 200 * MS;
        // Each ACK closes a 1/cwnd share of the gap to the target W_cubic(t + RTT): a window of ACKs
        // closes most of it while the target moves on, so cwnd runs about an RTT behind its target,
        // on W_cubic(t) itself. Checked within half a segment.
        // Concave: t = 2 s, W_cubic(2) = 95.640 segments (worked out in the test above).
        long now = AckClock.until(cubic, 0, 2 * S, rtt, MSS);
        assertEquals(95_640, cubic.cwnd(), 500);
        // t = 4.2 s, just short of K = 4.217 s: (-0.017163)^3 = -0.0000051, so W_cubic = 100.000:
        // the window is back at W_max.
        now = AckClock.until(cubic, now, 4_200 * MS, rtt, MSS);
        assertEquals(100 * MSS, cubic.cwnd(), 500);
        // Convex, probing past W_max: t = 6.2 s, (6.2 - 4.217163)^3 = 1.982837^3 = 7.795803,
        // * 0.4 = 3.118321, W_cubic = 103.118 segments.
        AckClock.until(cubic, now, 6_200 * MS, rtt, MSS);
        assertEquals(103_118, cubic.cwnd(), 500);
        assertTrue(cubic.wEst() < 90 * MSS, "never in the Reno-friendly region: W_est " + cubic.wEst());
    }

    @Test
    void rfc9438_4_3_theRenoFriendlyRegionDominatesAtSmallRtt() {
        Cubic cubic = afterLossAt(100, true);
        long rtt = 1 * MS;
        long now = AckClock.oneRtt(cubic, 0, rtt, MSS);
        // W_est grows alpha_cubic = 3 * 0.3 / 1.7 = 0.5294 segments a round while below cwnd_prior.
        double before = cubic.wEst();
        now = AckClock.oneRtt(cubic, now, rtt, MSS);
        assertEquals(Cubic.ALPHA * MSS, cubic.wEst() - before, 10);
        assertEquals((int) cubic.wEst(), cubic.cwnd(), "cwnd = W_est in the Reno-friendly region");
        // 0.1 s = 100 rounds. W_est: 70 -> 100 in 30 / 0.5294 = 56.7 rounds, then alpha = 1 for
        // the remaining 43.3: about 143 segments. W_cubic(0.1) = 0.4 * (0.1 - 4.2172)^3 + 100
        // = 0.4 * -69.79 + 100 = 72.08 segments: CUBIC's own curve has hardly moved.
        AckClock.until(cubic, now, 100 * MS, rtt, MSS);
        assertEquals(143_000, cubic.cwnd(), 3_000);
        assertEquals(72_080, cubic.wCubic(cubic.epochElapsed() / 1e9), 100);
        before = cubic.wEst();
        AckClock.oneRtt(cubic, 100 * MS, rtt, MSS);
        assertEquals(MSS, cubic.wEst() - before, 10, "alpha_cubic = 1 once W_est >= cwnd_prior");
    }

    @Test
    void rfc9438_4_7_fastConvergenceReleasesBandwidthWhenLossComesBelowWmax() {
        Cubic cubic = afterLossAt(100, true);
        cubic.onEnterRecovery(0, cubic.cwnd()); // a second loss at 70 segments, below W_max = 100
        assertEquals(59_500, cubic.wMax(), 1e-6, "70 * (1 + 0.7) / 2 = 59.5 segments");
        assertEquals(49 * MSS, cubic.cwnd(), "70 * 0.7");

        Cubic plain = afterLossAt(100, false);
        plain.onEnterRecovery(0, plain.cwnd());
        assertEquals(70 * MSS, plain.wMax(), 1e-6, "without fast convergence W_max = cwnd");
        assertEquals(49 * MSS, plain.cwnd());

        Cubic rising = afterLossAt(100, true);
        rising.onExitRecovery(0);
        AckClock.until(rising, 0, 6_200 * MS, 100 * MS, MSS); // past the old W_max
        int at = rising.cwnd();
        rising.onEnterRecovery(7 * S, at);
        assertEquals(at, rising.wMax(), 1e-6, "loss above W_max: W_max = cwnd");
    }

    @Test
    void rfc9438_4_8_timeoutCollapsesToOneSmssAndTheNextStageStartsWithKZero() {
        Cubic cubic = new Cubic(MSS, 100 * MSS, true);
        cubic.onRetransmitTimeout(0, 100 * MSS);
        assertEquals(MSS, cubic.cwnd(), "Reno's loss window");
        assertEquals(70 * MSS, cubic.ssthresh(), "ssthresh with beta_cubic");
        cubic.onRetransmitTimeout(1, MSS);
        assertEquals(70 * MSS, cubic.ssthresh(), "held on a repeated timeout (RFC 5681 3.1)");
        cubic.onAck(2, 2 * MSS, 100 * MS, MSS);
        assertEquals(2 * MSS, cubic.cwnd(), "slow start after a timeout: 1 SMSS per ACK (RFC 3465 2.3)");
        long now = 2;
        while (cubic.inSlowStart()) {
            cubic.onAck(++now, MSS, 100 * MS, cubic.cwnd());
        }
        assertEquals(70 * MSS, cubic.cwnd());
        cubic.onAck(++now, MSS, 100 * MS, cubic.cwnd()); // the first congestion avoidance ACK
        assertEquals(0, cubic.k(), 0.0);
        assertEquals(70 * MSS, cubic.wMax(), 1e-6, "W_max = cwnd at the start of the stage");
        assertEquals(70 * MSS, cubic.wCubic(0), 1e-6);
    }

    @Test
    void rfc9438_4_2_targetIsAtMostOneAndAHalfCwnd() {
        Cubic cubic = new Cubic(MSS, 100 * MSS, true);
        cubic.onRetransmitTimeout(0, 100 * MSS);
        long now = 0;
        while (cubic.inSlowStart()) {
            cubic.onAck(++now, MSS, 0, cubic.cwnd());
        }
        cubic.onAck(++now, MSS, 0, cubic.cwnd()); // stage starts at 70 segments with K = 0
        assertEquals(0, cubic.k(), 0.0);
        int before = cubic.cwnd(); // 70 segments, plus the few bytes W_est added on that ACK
        // 100 s later W_cubic(100) = 0.4 * 100^3 + 70 = 400070 segments; the target is capped at
        // 1.5 * cwnd, so one SMSS acknowledged adds (1.5 cwnd - cwnd) / cwnd SMSS = 500 bytes.
        cubic.onAck(now + 100 * S, MSS, 0, cubic.cwnd());
        assertEquals(before + 500, cubic.cwnd());
    }

    @Test
    void rfc9438_5_8_timeStandsStillAndCwndHoldsWhileTheFlowIsApplicationLimited() {
        Cubic cubic = afterLossAt(100, true);
        long rtt = 100 * MS;
        long now = AckClock.oneRtt(cubic, 0, rtt, MSS);
        long t = cubic.epochElapsed();
        int cwnd = cubic.cwnd();
        for (int i = 1; i <= 100; i++) {
            cubic.onAck(now + i * rtt, MSS, rtt, cwnd / 2);
        }
        assertEquals(t, cubic.epochElapsed());
        assertEquals(cwnd, cubic.cwnd());
    }

    @Test
    void rfc9438_4_2_anIdleGapAdvancesTByAtMostOneRtt() {
        Cubic cubic = afterLossAt(100, true);
        long rtt = 100 * MS;
        long now = AckClock.oneRtt(cubic, 0, rtt, MSS);
        long t = cubic.epochElapsed();
        cubic.onAck(now + 30 * S, MSS, rtt, cubic.cwnd());
        assertEquals(t + rtt, cubic.epochElapsed());
    }

    @Test
    void rfc9438_4_6_aWindowThatIsNotFilledIsNotGrownInSlowStartEither() {
        Cubic cubic = new Cubic(MSS, 10 * MSS, true);
        cubic.onAck(0, MSS, MS, 4 * MSS);
        assertEquals(10 * MSS, cubic.cwnd());
    }

    @Test
    void resetForgetsTheLastCongestionEvent() {
        Cubic cubic = afterLossAt(100, true);
        cubic.reset(1460, 14_600);
        assertEquals(14_600, cubic.cwnd());
        assertEquals(Integer.MAX_VALUE, cubic.ssthresh());
        assertEquals(0, cubic.wMax(), 0.0);
        assertEquals("cubic", cubic.name());
        assertEquals(1460, cubic.mss());
    }

    /** A CUBIC that lost at {@code segments} segments and just left recovery at time 0. */
    private static Cubic afterLossAt(int segments, boolean fastConvergence) {
        Cubic cubic = new Cubic(MSS, segments * MSS, fastConvergence);
        cubic.onEnterRecovery(0, segments * MSS);
        cubic.onExitRecovery(0);
        return cubic;
    }
}
