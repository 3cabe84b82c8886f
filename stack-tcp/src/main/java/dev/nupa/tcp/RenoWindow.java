package dev.nupa.tcp;

/**
 * The window state and rules that Reno-style controllers share ({@link NewReno}, {@link Cubic}): cwnd and
 * ssthresh in bytes, slow start with appropriate byte counting (RFC 3465), recovery entered and left as
 * RFC 6582 asks, and the loss window after a retransmission timeout (RFC 5681 3.1). A controller decides
 * what ssthresh becomes at a congestion event and how cwnd grows in congestion avoidance.
 */
abstract class RenoWindow implements CongestionControl {
    /** RFC 3465 2.2: L, the slow-start growth limit per ACK in SMSS; 2 is the most allowed. */
    static final int ABC_LIMIT = 2;

    int mss;
    int cwnd;
    int ssthresh;
    boolean inRecovery;
    /** Slow start after a retransmission timeout, where L = 1 SMSS (RFC 3465 2.3). */
    boolean slowStartAfterTimeout;
    /** A timeout happened and no new data was acknowledged since: another one keeps ssthresh. */
    boolean timeoutOutstanding;

    /** The shared part of {@link #reset}: the initial window of a fresh connection, no loss seen. */
    final void resetWindow(int mss, int initialWindow) {
        CongestionControls.requireMss(mss);
        CongestionControls.requireWindow(initialWindow);
        this.mss = mss;
        this.cwnd = Math.min(initialWindow, CongestionControls.MAX_CWND);
        this.ssthresh = Integer.MAX_VALUE;
        this.inRecovery = false;
        this.slowStartAfterTimeout = false;
        this.timeoutOutstanding = false;
    }

    /**
     * RFC 5681 3.1 slow start counting bytes (RFC 3465): cwnd grows by the bytes acknowledged, at most
     * L = 2 SMSS per ACK (1 SMSS in the slow start after a timeout, RFC 3465 2.3), and not past ssthresh.
     */
    final void slowStart(int ackedBytes) {
        int limit = (slowStartAfterTimeout ? 1 : ABC_LIMIT) * mss;
        long grown = (long) cwnd + Math.min(ackedBytes, limit);
        cwnd = (int) Math.min(Math.min(grown, ssthresh), CongestionControls.MAX_CWND);
        if (cwnd >= ssthresh) {
            slowStartAfterTimeout = false;
        }
    }

    /** Recovery begins with cwnd already set to the new ssthresh: no growth and no inflation until it ends. */
    final void enterRecovery() {
        cwnd = ssthresh;
        inRecovery = true;
        slowStartAfterTimeout = false;
    }

    @Override
    public void onExitRecovery(long now) {
        if (inRecovery) {
            // RFC 6582 3.2 step 5, full acknowledgment: "Set cwnd to ssthresh" (option 2).
            cwnd = ssthresh;
            inRecovery = false;
        }
    }

    /**
     * RFC 5681 3.1 after a retransmission timeout: cwnd to the loss window, LW = 1 SMSS, and slow start
     * again; {@code reducedSsthresh} is the controller's new ssthresh, taken only when this is not a second
     * timeout before new data was acknowledged (then ssthresh is held).
     */
    final void lossWindow(int reducedSsthresh) {
        if (!timeoutOutstanding) {
            ssthresh = reducedSsthresh;
        }
        cwnd = mss;
        inRecovery = false;
        slowStartAfterTimeout = true;
        timeoutOutstanding = true;
    }

    @Override
    public int cwnd() {
        return cwnd;
    }

    @Override
    public int ssthresh() {
        return ssthresh;
    }

    @Override
    public boolean inSlowStart() {
        return cwnd < ssthresh;
    }

    @Override
    public boolean inRecovery() {
        return inRecovery;
    }

    /** The sender maximum segment size this controller counts in. */
    public int mss() {
        return mss;
    }
}
