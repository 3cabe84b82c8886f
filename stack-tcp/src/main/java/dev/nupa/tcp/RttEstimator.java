package dev.nupa.tcp;

/**
 * The retransmission timer's estimator of RFC 6298: a smoothed round-trip time (SRTT), its mean
 * deviation (RTTVAR) and the retransmission timeout (RTO) derived from them, with exponential
 * back-off. All times are nanoseconds; the estimator never reads a clock (the
 * connection measures {@code now - sentAt} and hands the difference in).
 *
 * <p><b>Karn's algorithm (RFC 6298 section 3).</b> The caller must not feed a sample taken from a
 * segment that was retransmitted: its ACK may answer either transmission, so the sample is
 * ambiguous. The only exception RFC 6298 section 3 allows is an RTT measured with the TCP
 * Timestamps option (RFC 7323 section 4), because the echoed timestamp names the transmission that
 * was acknowledged. The second half of Karn's algorithm, keeping the backed-off RTO until a valid
 * sample arrives, is built in: {@link #backOff()} doubles the RTO and only {@link #sample} brings
 * it back down (RFC 6298 section 5, note after (5.7)).
 *
 * <p><b>Samples per RTT (RFC 7323 appendix G).</b> Without timestamps a sender times one segment
 * per RTT, which is what alpha = 1/8 and beta = 1/4 were tuned for. With timestamps every ACK can
 * give a sample, which would shorten the estimator's memory to a fraction of an RTT; appendix G
 * divides both gains by ExpectedSamples = ceil(FlightSize / (2 * SMSS)) (2 because of delayed
 * ACKs). {@link #sample(long, int, int)} applies that rule; {@link #sample(long)} is the one-sample-
 * per-RTT form.
 *
 * <p><b>Minimum RTO.</b> RFC 6298 (2.4) says an RTO below 1 s SHOULD be rounded up to 1 s, to be
 * conservative against spurious timeouts. The default here is 200 ms, as in Linux
 * (TCP_RTO_MIN): it stays above the delayed-ACK timers of real peers (at most 200 ms in common
 * stacks; RFC 9293 3.8.6.3 allows up to 500 ms) while recovering from a tail loss five times sooner.
 * It is configurable because on a shared-memory fabric round trips take microseconds: there a
 * 200 ms floor turns every lost segment into a stall thousands of RTTs long, and a deployment whose
 * peers are all NUPA stacks with short delayed-ACK timers can lower it to a few milliseconds.
 *
 * <p>Arithmetic is in whole nanoseconds; the truncation of the gains' divisions loses less than a
 * nanosecond a step. One estimator belongs to one connection and is not thread-safe; it allocates
 * nothing after construction.
 */
public final class RttEstimator {
    /** RFC 6298 (2.1): RTO before any sample is 1 second. */
    public static final long DEFAULT_INITIAL_RTO_NS = 1_000_000_000L;
    /** Minimum RTO: Linux's 200 ms, not RFC 6298's 1 s (see the class comment for why). */
    public static final long DEFAULT_MIN_RTO_NS = 200_000_000L;
    /** RFC 6298 (2.5): a maximum MAY be placed on the RTO provided it is at least 60 seconds. */
    public static final long MIN_MAX_RTO_NS = 60_000_000_000L;
    /** Default maximum: RFC 6298's floor for a maximum, 60 s (Linux uses 120 s). */
    public static final long DEFAULT_MAX_RTO_NS = MIN_MAX_RTO_NS;
    /**
     * Default clock granularity G: the 1 ms tick a datapath timer wheel is likely to fire RTOs at.
     * G is the resolution of the timer that fires the RTO, not of {@code now}, which is nanoseconds.
     */
    public static final long DEFAULT_GRANULARITY_NS = 1_000_000L;
    /** RFC 6298 (5.7): the RTO for data after a SYN timed out is at least 3 seconds. */
    static final long SYN_TIMEOUT_DATA_RTO_NS = 3_000_000_000L;
    /**
     * Samples are clamped to an hour: no path takes that long, and the clamp keeps
     * SRTT + 4 * RTTVAR far from overflowing a long.
     */
    static final long MAX_SAMPLE_NS = 3_600_000_000_000L;
    /** RFC 6298 (2.2)/(2.3): K = 4. */
    private static final int K = 4;

    private final long initialRtoNs;
    private final long minRtoNs;
    private final long maxRtoNs;
    private final long granularityNs;

    private boolean hasSample;
    private long srttNs;
    private long rttvarNs;
    private long rtoNs;
    private int backoffs;

    /** Defaults: initial RTO 1 s, minimum 200 ms, maximum 60 s, G = 1 ms. */
    public RttEstimator() {
        this(DEFAULT_INITIAL_RTO_NS, DEFAULT_MIN_RTO_NS, DEFAULT_MAX_RTO_NS, DEFAULT_GRANULARITY_NS);
    }

    /**
     * @param initialRtoNs RTO before the first sample (RFC 6298 (2.1) says 1 s)
     * @param minRtoNs floor of every computed RTO (RFC 6298 (2.4)); positive
     * @param maxRtoNs ceiling of the RTO and of its back-off; at least 60 s (RFC 6298 (2.5))
     * @param granularityNs the clock granularity G of RFC 6298 (2.2)/(2.3); not negative
     * @throws IllegalArgumentException unless 0 &lt; min &lt;= initial &lt;= max, max &gt;= 60 s and G &gt;= 0
     */
    public RttEstimator(long initialRtoNs, long minRtoNs, long maxRtoNs, long granularityNs) {
        if (minRtoNs <= 0 || initialRtoNs < minRtoNs || maxRtoNs < initialRtoNs) {
            throw new IllegalArgumentException("need 0 < minimum RTO <= initial RTO <= maximum RTO, got "
                    + minRtoNs + " / " + initialRtoNs + " / " + maxRtoNs + " ns");
        }
        if (maxRtoNs < MIN_MAX_RTO_NS) {
            throw new IllegalArgumentException("RFC 6298 (2.5): the maximum RTO must be at least 60 s, got "
                    + maxRtoNs + " ns");
        }
        if (granularityNs < 0) {
            throw new IllegalArgumentException("clock granularity must not be negative: " + granularityNs);
        }
        this.initialRtoNs = initialRtoNs;
        this.minRtoNs = minRtoNs;
        this.maxRtoNs = maxRtoNs;
        this.granularityNs = granularityNs;
        clear();
    }

    /**
     * Forgets every sample and the back-off: the state of a new connection (RFC 6298 (2.1)). RFC 6298
     * section 5 also allows this after several back-offs, when SRTT and RTTVAR are likely bogus; the
     * next sample is then taken as a first sample (2.2).
     */
    public void clear() {
        hasSample = false;
        srttNs = 0;
        rttvarNs = 0;
        rtoNs = initialRtoNs;
        backoffs = 0;
    }

    /**
     * One RTT measurement, taken at most once per RTT (no timestamps), never from a retransmitted
     * segment (Karn, RFC 6298 section 3).
     *
     * @param rttNs the measured round trip; a negative value (a clock mishap) is ignored
     * @return whether the sample was used
     */
    public boolean sample(long rttNs) {
        return update(rttNs, 1);
    }

    /**
     * One RTT measurement from the Timestamps option, where every ACK may give one: the gains are
     * divided by ExpectedSamples = ceil(flightSize / (2 * smss)), at least 1 (RFC 7323 appendix G).
     *
     * @param rttNs the measured round trip; a negative value is ignored
     * @param flightSize RFC 5681's FlightSize, bytes outstanding, when the sample is taken
     * @param smss the sender maximum segment size
     * @return whether the sample was used
     */
    public boolean sample(long rttNs, int flightSize, int smss) {
        return update(rttNs, expectedSamples(flightSize, smss));
    }

    /** RFC 7323 appendix G: ceil(FlightSize / (SMSS * 2)), at least 1. */
    static int expectedSamples(int flightSize, int smss) {
        if (flightSize <= 0 || smss <= 0) {
            return 1;
        }
        long perSample = 2L * smss;
        return (int) Math.max(1, (flightSize + perSample - 1) / perSample);
    }

    private boolean update(long rttNs, int expectedSamples) {
        if (rttNs < 0) {
            return false;
        }
        long r = Math.min(rttNs, MAX_SAMPLE_NS);
        if (!hasSample) {
            // RFC 6298 (2.2): SRTT <- R, RTTVAR <- R/2.
            srttNs = r;
            rttvarNs = r / 2;
            hasSample = true;
        } else {
            // RFC 6298 (2.3), RTTVAR first because it uses the SRTT from before this sample:
            // RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|, beta = 1/4;
            // SRTT <- (1 - alpha) * SRTT + alpha * R', alpha = 1/8;
            // with RFC 7323 appendix G's beta' = beta / n and alpha' = alpha / n.
            rttvarNs += (Math.abs(srttNs - r) - rttvarNs) / (4L * expectedSamples);
            srttNs += (r - srttNs) / (8L * expectedSamples);
        }
        // A new sample collapses any back-off (RFC 6298 section 5, note after (5.7)).
        backoffs = 0;
        rtoNs = computeRto();
        return true;
    }

    /** RFC 6298 (2.2)/(2.3): RTO = SRTT + max(G, K * RTTVAR), then (2.4) and (2.5). */
    private long computeRto() {
        long rto = srttNs + Math.max(granularityNs, K * rttvarNs);
        return Math.min(maxRtoNs, Math.max(minRtoNs, rto));
    }

    /**
     * The retransmission timer expired: RTO &lt;- RTO * 2, capped at the maximum (RFC 6298 (5.5)).
     * The backed-off value stays until the next {@link #sample} (Karn).
     */
    public void backOff() {
        rtoNs = rtoNs > maxRtoNs / 2 ? maxRtoNs : rtoNs * 2;
        if (backoffs < Integer.MAX_VALUE) {
            backoffs++;
        }
    }

    /**
     * RFC 6298 (5.7): the handshake completed after a SYN timed out and no RTT was measured (the
     * SYN-ACK answered a retransmitted SYN, so Karn forbids the sample): data starts with an RTO of
     * at least 3 s, without back-off. Does nothing once a sample exists.
     */
    public void synTimedOutBeforeData() {
        if (!hasSample) {
            rtoNs = Math.min(maxRtoNs, Math.max(initialRtoNs, SYN_TIMEOUT_DATA_RTO_NS));
            backoffs = 0;
        }
    }

    /** The current RTO in nanoseconds, back-off included: arm the retransmission timer with it. */
    public long rto() {
        return rtoNs;
    }

    /** SRTT in nanoseconds; 0 before the first sample. */
    public long srtt() {
        return srttNs;
    }

    /** RTTVAR in nanoseconds; 0 before the first sample. */
    public long rttvar() {
        return rttvarNs;
    }

    /** Whether a sample has been taken since construction or {@link #clear()}. */
    public boolean hasSample() {
        return hasSample;
    }

    /** Back-offs since the last sample: the connection gives up after its own limit of these. */
    public int backoffs() {
        return backoffs;
    }

    public long minRto() {
        return minRtoNs;
    }

    public long maxRto() {
        return maxRtoNs;
    }

    public long granularity() {
        return granularityNs;
    }
}
