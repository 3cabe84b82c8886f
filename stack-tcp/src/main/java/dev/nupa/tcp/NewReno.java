package dev.nupa.tcp;

/**
 * Reno congestion control with NewReno's recovery window (RFC 5681, RFC 6582), counting bytes
 * (RFC 3465).
 *
 * <ul>
 *   <li>Slow start (RFC 5681 3.1) while cwnd &lt; ssthresh: each ACK grows cwnd by the bytes it
 *       acknowledges, at most L = 2 SMSS (RFC 3465 2.2, "appropriate byte counting"), so a window of
 *       ACKs doubles cwnd in one RTT whether the receiver acknowledges every segment or every other
 *       one. In the slow start that follows a retransmission timeout L is 1 SMSS (RFC 3465 2.3):
 *       those ACKs may cover data that had arrived before the timeout, and growing 2 SMSS for them
 *       would burst.</li>
 *   <li>Congestion avoidance (RFC 5681 3.1) at or above ssthresh: equation (3),
 *       cwnd += SMSS * SMSS / cwnd, applied per SMSS acknowledged, with the fraction carried from
 *       ACK to ACK instead of rounded away. That is one SMSS per window of acknowledged bytes, the
 *       byte counting RFC 5681 3.1 recommends; it stays right under delayed ACKs, where (3) per ACK
 *       would grow only half an SMSS per RTT, and never adds more than one SMSS for one ACK.</li>
 *   <li>Loss found by duplicate ACKs or SACK (RFC 5681 3.2 step 2, RFC 6582 3.2 step 2):
 *       ssthresh = max(FlightSize / 2, 2 * SMSS) and cwnd = ssthresh at once. cwnd neither grows
 *       during recovery nor is inflated by duplicate ACKs: the connection counts pipe (RFC 6675) and
 *       keeps pipe below cwnd, which is what the inflation of steps 3-4 emulated.</li>
 *   <li>Partial ACKs (RFC 6582 3.2 step 5) belong to the connection: it retransmits the next
 *       unacknowledged segment and keeps its pipe accounting; with no inflation there is nothing to
 *       deflate here.</li>
 *   <li>Full ACK, leaving recovery (RFC 6582 3.2 step 5): cwnd = ssthresh, the second of the two
 *       choices the RFC offers. The RFC asks the sender to avoid the burst this may cause when
 *       little is in flight; that is the connection's job (it paces or sends at most a few segments
 *       per ACK).</li>
 *   <li>Retransmission timeout (RFC 5681 3.1 equation (4)): ssthresh = max(FlightSize / 2,
 *       2 * SMSS), cwnd = 1 SMSS (the loss window), slow start again; a second timeout before new
 *       data is acknowledged keeps ssthresh, as RFC 5681 asks when the same segment times out again.</li>
 * </ul>
 *
 * <p>cwnd grows only while the flow is cwnd-limited ({@link CongestionControl}).
 */
public final class NewReno extends RenoWindow {
    /** The name {@link CongestionControls#create} knows this controller by. */
    public static final String NAME = "newreno";

    /** Congestion avoidance credit, SMSS * bytes acknowledged not yet turned into cwnd bytes. */
    private long avoidanceCredit;

    /** A controller with the initial window of RFC 6928 for {@code mss}. */
    public NewReno(int mss) {
        this(mss, CongestionControls.initialWindow(mss));
    }

    public NewReno(int mss, int initialWindow) {
        reset(mss, initialWindow);
    }

    @Override
    public void reset(int mss, int initialWindow) {
        resetWindow(mss, initialWindow);
        this.avoidanceCredit = 0;
    }

    @Override
    public void onAck(long now, int ackedBytes, long rttNs, int bytesInFlight) {
        if (ackedBytes <= 0) {
            return;
        }
        timeoutOutstanding = false;
        if (inRecovery || !CongestionControls.cwndLimited(cwnd, bytesInFlight, mss)) {
            return;
        }
        if (cwnd < ssthresh) {
            slowStart(ackedBytes);
            return;
        }
        // RFC 5681 3.1 equation (3) per SMSS acknowledged: SMSS * SMSS / cwnd for each SMSS is
        // SMSS * ackedBytes / cwnd for the ACK; the remainder waits for the next ACK.
        avoidanceCredit += (long) mss * ackedBytes;
        long increase = avoidanceCredit / cwnd;
        if (increase >= mss) {
            increase = mss; // never more than one SMSS for one ACK (RFC 5681 3.1)
            avoidanceCredit = 0;
        } else {
            avoidanceCredit -= increase * cwnd;
        }
        cwnd = (int) Math.min((long) cwnd + increase, CongestionControls.MAX_CWND);
    }

    @Override
    public void onEnterRecovery(long now, int bytesInFlight) {
        // RFC 5681 3.2 step 2 / RFC 6582 3.2 step 2: equation (4); cwnd drops to ssthresh at once.
        ssthresh = CongestionControls.halfFlightSize(bytesInFlight, mss);
        enterRecovery();
        avoidanceCredit = 0;
    }

    @Override
    public void onRetransmitTimeout(long now, int bytesInFlight) {
        lossWindow(CongestionControls.halfFlightSize(bytesInFlight, mss)); // RFC 5681 3.1 equation (4)
        avoidanceCredit = 0;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String toString() {
        return NAME + "[cwnd=" + cwnd + " ssthresh=" + ssthresh + (inRecovery ? " recovery" : "") + "]";
    }
}
