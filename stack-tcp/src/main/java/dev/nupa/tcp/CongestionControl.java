package dev.nupa.tcp;

/**
 * A sender's congestion controller: the congestion window (cwnd) and slow-start threshold
 * (ssthresh) of RFC 5681, in bytes, moved by events the connection reports. It never reads a clock
 * (time is an argument): every event carries {@code now} in nanoseconds.
 *
 * <p><b>Who does what.</b> The connection detects events and owns the segments: it counts duplicate
 * ACKs or runs the SACK scoreboard (RFC 6675) to decide a loss, remembers RFC 6582's "recover"
 * point so one window of data triggers one reduction, retransmits, answers partial ACKs by
 * retransmitting the next hole, and keeps what it sends within min(cwnd, receive window) using
 * RFC 6675's pipe during recovery. The controller only says how large the window is. It does not
 * inflate cwnd by one SMSS per duplicate ACK (RFC 5681 3.2 steps 3-4) because a connection that
 * counts pipe already knows those segments left the network.
 *
 * <p><b>FlightSize.</b> Each {@code bytesInFlight} is RFC 5681's FlightSize at the moment of the
 * event and before it changes anything: for {@link #onAck} that is SND.NXT - SND.UNA before the
 * ACK advances SND.UNA. Implementations grow cwnd only while the flow is cwnd-limited
 * ({@code bytesInFlight + SMSS > cwnd}); an application- or receiver-limited flow would otherwise
 * inflate a window it never tests (RFC 9438 sections 4.6 and 5.8, RFC 7661).
 *
 * <p>One instance belongs to one connection and is driven from its thread; implementations allocate
 * nothing after construction.
 */
public interface CongestionControl {

    /**
     * An ACK acknowledged new data (it advanced SND.UNA).
     *
     * @param now the time, nanoseconds
     * @param ackedBytes bytes newly acknowledged by this ACK; nothing happens unless positive
     * @param rttNs the connection's smoothed RTT ({@link RttEstimator#srtt()}), or 0 or less when
     *     none is known yet; CUBIC aims its window one RTT ahead (RFC 9438 4.2)
     * @param bytesInFlight FlightSize before this ACK was applied
     */
    void onAck(long now, int ackedBytes, long rttNs, int bytesInFlight);

    /**
     * A loss was detected by three duplicate ACKs (RFC 5681 3.2) or by the SACK scoreboard
     * (RFC 6675 section 5): fast retransmit and recovery begin. The connection calls this once per
     * window of data (RFC 6582's "recover").
     *
     * @param now the time, nanoseconds
     * @param bytesInFlight FlightSize when the loss was detected
     */
    void onEnterRecovery(long now, int bytesInFlight);

    /**
     * Recovery ended: an ACK covered the "recover" point (RFC 6582 3.2 step 5, full acknowledgment;
     * RFC 6675 section 5). Called before the {@link #onAck} of that same ACK.
     */
    void onExitRecovery(long now);

    /**
     * The retransmission timer expired (RFC 6298 (5.4)-(5.6)): RFC 5681 3.1 equation (4) sets
     * ssthresh = max(FlightSize / 2, 2 * SMSS) (CUBIC uses its own factor, RFC 9438 4.8) and cwnd to
     * the loss window of 1 SMSS. If the same segment times out again before any new data is
     * acknowledged, ssthresh is held (RFC 5681 3.1). Any recovery in progress ends.
     *
     * @param now the time, nanoseconds
     * @param bytesInFlight FlightSize when the timer expired
     */
    void onRetransmitTimeout(long now, int bytesInFlight);

    /** The congestion window, bytes. */
    int cwnd();

    /** The slow-start threshold, bytes; {@link Integer#MAX_VALUE} until the first loss (RFC 5681 3.1). */
    int ssthresh();

    /** Whether cwnd &lt; ssthresh (RFC 5681 3.1: slow start below ssthresh, congestion avoidance above). */
    boolean inSlowStart();

    /** Whether a fast recovery is in progress ({@link #onEnterRecovery} without its exit yet). */
    boolean inRecovery();

    /** The name {@link CongestionControls#create} knows this controller by. */
    String name();

    /**
     * Back to the state of a new connection: cwnd = {@code initialWindow}, ssthresh "arbitrarily
     * high" (RFC 5681 3.1), no loss remembered.
     *
     * @param mss the sender maximum segment size (SMSS), bytes, positive
     * @param initialWindow the initial window, bytes, positive; usually
     *     {@link CongestionControls#initialWindow(int)} (RFC 6928)
     */
    void reset(int mss, int initialWindow);
}
