package dev.nupa.tcp;

/**
 * CUBIC congestion control (RFC 9438), windows in bytes, time from {@code now}.
 *
 * <p>RFC 9438 states its equations in segments and seconds (4.1); here windows are bytes, so W_max,
 * W_est and the cubic function carry bytes and C is applied per SMSS:
 * W_cubic(t) = SMSS * C * (t - K)^3 + W_max (equation 1) and
 * K = cbrt((W_max - cwnd_epoch) / (SMSS * C)) (equation 2).
 *
 * <ul>
 *   <li>Slow start below ssthresh as {@link NewReno} does it: byte counting with L = 2 SMSS, 1 SMSS
 *       after a timeout. RFC 9438 4.10 recommends HyStart++ and allows Reno's slow start; HyStart++
 *       is not implemented.</li>
 *   <li>Congestion avoidance (4.2-4.5): a stage starts at its first ACK (t_epoch), with
 *       cwnd_epoch = cwnd and W_est = cwnd_epoch. On each ACK W_est grows by
 *       alpha_cubic * SMSS * acked / cwnd (equation 4 in bytes), alpha_cubic = 3 (1 - beta) / (1 + beta)
 *       until W_est reaches cwnd_prior and 1 after (4.3). If W_cubic(t) &lt; W_est the flow is in the
 *       Reno-friendly region and cwnd = W_est; otherwise target = W_cubic(t + RTT), bounded to
 *       [cwnd, 1.5 cwnd], and cwnd grows by (target - cwnd) / cwnd per SMSS acknowledged (4.4 concave
 *       below W_max, 4.5 convex above), fractions carried from ACK to ACK.</li>
 *   <li>t counts only time in which the flow was cwnd-limited (4.2: t "MUST NOT include periods
 *       during which cwnd has not been updated due to application-limited behavior"; 5.8): an ACK of
 *       a cwnd-limited flow advances t by the time since the previous ACK, at most one RTT, because
 *       ACKs of a flow that keeps its window full arrive at least once an RTT and a longer gap was
 *       idle; an ACK of an application-limited flow advances nothing.</li>
 *   <li>Loss (4.6, 4.7): W_max = cwnd, or cwnd * (1 + beta) / 2 with fast convergence when cwnd is
 *       already below W_max; cwnd_prior = cwnd; ssthresh = cwnd = max(cwnd * beta, 2 SMSS). RFC 9438
 *       writes flight_size * beta and allows cwnd * beta, which Linux and Windows use, provided cwnd
 *       cannot grow while the flow sends less than it allows; {@link CongestionControl}'s
 *       cwnd-limited rule is that measure. Recovery itself is as in {@link NewReno}: no growth, cwnd
 *       = ssthresh on exit.</li>
 *   <li>Timeout (4.8): ssthresh = max(cwnd * beta, 2 SMSS) (held on a repeated timeout, RFC 5681
 *       3.1), cwnd = 1 SMSS, slow start; the first congestion avoidance stage after it uses K = 0 and
 *       W_max = cwnd_epoch. 4.10 prescribes the same when a stage starts with W_max undefined (no
 *       loss yet); it is also done when W_max is not above cwnd_epoch (fast convergence can put it
 *       below the 2 SMSS floor), where equation 2 would take the cube root of a negative number.</li>
 * </ul>
 *
 * <p>Spurious-loss undo (4.9) needs events this interface does not have and is not done.
 */
public final class Cubic extends RenoWindow {
    /** The name {@link CongestionControls#create} knows this controller by. */
    public static final String NAME = "cubic";
    /** RFC 9438 4.1.1 / 5.1: C = 0.4 segments per second cubed. */
    public static final double C = 0.4;
    /** RFC 9438 4.6: beta_cubic = 0.7. */
    public static final double BETA = 0.7;
    /** RFC 9438 4.3: alpha_cubic = 3 * (1 - beta_cubic) / (1 + beta_cubic), 0.529... */
    public static final double ALPHA = 3.0 * (1.0 - BETA) / (1.0 + BETA);
    private static final double NANOS_PER_SECOND = 1e9;

    private final boolean fastConvergence;

    /** W_max, bytes; 0 until the first congestion event. */
    private double wMax;
    /** cwnd_prior, bytes: cwnd when ssthresh was last set. */
    private double cwndPrior;
    /** Whether a congestion avoidance stage is running (t_epoch set). */
    private boolean epochStarted;
    /** The next stage starts as after a timeout: K = 0, W_max = cwnd_epoch (4.8). */
    private boolean epochAfterTimeout;
    /** t: nanoseconds of cwnd-limited time since t_epoch. */
    private long epochElapsedNs;
    private long lastAckNs;
    private double k;
    private double cwndEpoch;
    private double wEst;
    /** Fractional bytes of growth not yet added to cwnd. */
    private double growthCarry;

    /** CUBIC with fast convergence (RFC 9438 4.7 SHOULD) and the RFC 6928 initial window. */
    public Cubic(int mss) {
        this(mss, CongestionControls.initialWindow(mss), true);
    }

    /**
     * @param fastConvergence RFC 9438 4.7: SHOULD be on where flows compete and SHOULD be off for a
     *     single flow alone on its path
     */
    public Cubic(int mss, int initialWindow, boolean fastConvergence) {
        this.fastConvergence = fastConvergence;
        reset(mss, initialWindow);
    }

    @Override
    public void reset(int mss, int initialWindow) {
        resetWindow(mss, initialWindow);
        this.wMax = 0;
        this.cwndPrior = 0;
        this.epochStarted = false;
        this.epochAfterTimeout = false;
        this.epochElapsedNs = 0;
        this.lastAckNs = 0;
        this.k = 0;
        this.cwndEpoch = 0;
        this.wEst = 0;
        this.growthCarry = 0;
    }

    @Override
    public void onAck(long now, int ackedBytes, long rttNs, int bytesInFlight) {
        if (ackedBytes <= 0) {
            return;
        }
        timeoutOutstanding = false;
        if (inRecovery) {
            return;
        }
        boolean limited = CongestionControls.cwndLimited(cwnd, bytesInFlight, mss);
        if (cwnd < ssthresh) {
            if (limited) {
                slowStart(ackedBytes);
            }
            return;
        }
        long rtt = Math.max(rttNs, 0);
        if (!epochStarted) {
            startEpoch(now);
        } else if (limited) {
            long gap = now - lastAckNs;
            if (gap > 0) {
                epochElapsedNs += rtt > 0 ? Math.min(gap, rtt) : gap;
            }
        }
        lastAckNs = now;
        if (!limited) {
            return; // RFC 9438 5.8: no growth, and t stands still
        }
        avoidCongestion(ackedBytes, rtt);
    }

    private void startEpoch(long now) {
        epochStarted = true;
        epochElapsedNs = 0;
        lastAckNs = now;
        cwndEpoch = cwnd;
        wEst = cwnd; // RFC 9438 4.3: W_est = cwnd_epoch at the start of the stage
        growthCarry = 0;
        if (epochAfterTimeout || wMax <= cwndEpoch) {
            k = 0; // RFC 9438 4.8 and 4.10
            wMax = cwndEpoch;
        } else {
            k = Math.cbrt((wMax - cwndEpoch) / (mss * C)); // RFC 9438 equation 2
        }
        epochAfterTimeout = false;
    }

    private void avoidCongestion(int ackedBytes, long rttNs) {
        double t = epochElapsedNs / NANOS_PER_SECOND;
        // RFC 9438 4.3, equation 4 in bytes; alpha becomes 1 once W_est reaches cwnd_prior.
        double alpha = wEst >= cwndPrior ? 1.0 : ALPHA;
        wEst += alpha * mss * (double) ackedBytes / cwnd;
        if (wCubic(t) < wEst) {
            // Reno-friendly region: cwnd = W_est (never below the cwnd already reached).
            int est = (int) Math.min(wEst, CongestionControls.MAX_CWND);
            if (est > cwnd) {
                cwnd = est;
            }
            growthCarry = 0;
            return;
        }
        // Concave (cwnd < W_max) and convex regions alike: target = W_cubic(t + RTT) within
        // [cwnd, 1.5 cwnd] (4.2), cwnd += (target - cwnd) / cwnd per SMSS acked (4.4, 4.5).
        double target = wCubic(t + rttNs / NANOS_PER_SECOND);
        target = Math.max(cwnd, Math.min(target, 1.5 * cwnd));
        growthCarry += (target - cwnd) * ackedBytes / cwnd;
        if (growthCarry >= 1) {
            long whole = (long) growthCarry;
            growthCarry -= whole;
            cwnd = (int) Math.min(cwnd + whole, CongestionControls.MAX_CWND);
        }
    }

    /** RFC 9438 equation 1 in bytes: W_cubic(t) = SMSS * C * (t - K)^3 + W_max, t in seconds. */
    double wCubic(double tSeconds) {
        double d = tSeconds - k;
        return mss * C * d * d * d + wMax;
    }

    @Override
    public void onEnterRecovery(long now, int bytesInFlight) {
        // RFC 9438 4.7 then 4.6: W_max, cwnd_prior and ssthresh at a congestion event; cwnd = ssthresh.
        if (fastConvergence && cwnd < wMax) {
            wMax = cwnd * (1.0 + BETA) / 2.0;
        } else {
            wMax = cwnd;
        }
        cwndPrior = cwnd;
        ssthresh = reducedWindow();
        enterRecovery();
        epochStarted = false;
        epochAfterTimeout = false;
    }

    private int reducedWindow() {
        return (int) Math.max(cwnd * BETA, 2.0 * mss);
    }

    @Override
    public void onRetransmitTimeout(long now, int bytesInFlight) {
        if (!timeoutOutstanding) {
            cwndPrior = cwnd; // RFC 9438 4.8: Reno's response with beta_cubic, held on a repeated timeout
        }
        // W_max is left alone: the next stage replaces it with cwnd_epoch.
        lossWindow(reducedWindow());
        epochStarted = false;
        epochAfterTimeout = true;
    }

    @Override
    public String name() {
        return NAME;
    }

    /** W_max, bytes (RFC 9438 4.1.2); 0 before the first congestion event. */
    public double wMax() {
        return wMax;
    }

    /** K of the current or last congestion avoidance stage, seconds (RFC 9438 equation 2). */
    public double k() {
        return k;
    }

    /** W_est, bytes (RFC 9438 4.3). */
    public double wEst() {
        return wEst;
    }

    /** t of the current stage, nanoseconds of cwnd-limited time since it started. */
    public long epochElapsed() {
        return epochElapsedNs;
    }

    public boolean fastConvergence() {
        return fastConvergence;
    }

    @Override
    public String toString() {
        return NAME + "[cwnd=" + cwnd + " ssthresh=" + ssthresh + " wMax=" + (long) wMax
                + (inRecovery ? " recovery" : "") + "]";
    }
}
