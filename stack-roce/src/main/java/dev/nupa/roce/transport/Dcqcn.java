package dev.nupa.roce.transport;

/**
 * DCQCN's reaction point for one QP (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015,
 * section 3.1, figure 7): a current rate Rc at which the QP's packets are paced, a target rate Rt, and alpha, the
 * estimate of how often the path is congested. Sans-IO: every call is given {@code now} (ns); nothing allocates.
 *
 * <ul>
 *   <li>A CNP: Rt = Rc, Rc = Rc (1 - alpha/2), alpha = (1 - g) alpha + g; the increase stage starts over.
 *   <li>Every {@link #ALPHA_PERIOD_NS} without a CNP: alpha = (1 - g) alpha.
 *   <li>Every {@link #INCREASE_PERIOD_NS} (the timer T) and every {@link #BYTE_COUNTER} bytes sent (the byte counter
 *       BC), an increase event: while both counts are below {@link #F}, fast recovery (Rc = (Rt + Rc) / 2); when one
 *       passes F, additive increase (Rt += R_AI first); when both do, hyper increase (Rt += i R_HAI, i the smaller
 *       count past F).
 * </ul>
 *
 * The parameters are the paper's (g = 1/256, K = 55 us, T = 55 us, B = 10 MB, F = 5, R_AI = 40 Mbit/s, R_HAI = 10
 * R_AI); the lowest rate is 1 Mbit/s, and the rate never exceeds the line rate. At the line rate the QP is not paced
 * at all ({@link #limited}), so a path without congestion pays nothing.
 */
public final class Dcqcn {
    public static final double G = 1.0 / 256;
    public static final long ALPHA_PERIOD_NS = 55_000;
    public static final long INCREASE_PERIOD_NS = 55_000;
    public static final long BYTE_COUNTER = 10L << 20;
    public static final int F = 5;
    public static final double RATE_AI = 40e6;
    public static final double RATE_HAI = 400e6;
    public static final double MIN_RATE = 1e6;
    /** Catch-up bound after an idle spell: at most this many timer events are replayed in one call. */
    private static final int MAX_CATCH_UP = 64;

    private final double lineRate;
    private double rc;
    private double rt;
    private double alpha = 1.0; // the paper starts alpha at 1 (mlx5's initial_alpha_value 1023 of 1023)
    private boolean limited;
    private long alphaAt;
    private long increaseAt;
    private int timerCount;
    private int byteCount;
    private long bytes;
    private long nextSendAt;
    private long decreases;
    /** The notification point's side of the same QP: when it last sent a CNP to the peer. */
    private long cnpSentAt = Long.MIN_VALUE / 2;

    /** @param lineRate the rate, in bits per second, of an unthrottled QP (the link's) */
    public Dcqcn(double lineRate) {
        if (!(lineRate >= MIN_RATE)) {
            throw new IllegalArgumentException("DCQCN line rate " + lineRate + " bit/s: must be at least " + MIN_RATE);
        }
        this.lineRate = lineRate;
        this.rc = lineRate;
        this.rt = lineRate;
    }

    /** Back to the line rate, unpaced, as a new QP (the QP was reset: its next peer may be another). */
    public void reset() {
        rc = lineRate;
        rt = lineRate;
        alpha = 1.0;
        limited = false;
        timerCount = 0;
        byteCount = 0;
        bytes = 0;
        cnpSentAt = Long.MIN_VALUE / 2;
    }

    /** The current rate Rc, bits per second. */
    public double rate() {
        return rc;
    }

    public double targetRate() {
        return rt;
    }

    public double alpha() {
        return alpha;
    }

    /** Whether the QP is paced: a CNP lowered its rate and it has not recovered to the line rate. */
    public boolean limited() {
        return limited;
    }

    public long decreases() {
        return decreases;
    }

    /** A CNP arrived for this QP (the paper's "cut rate"). */
    public void onCnp(long now) {
        advance(now);
        rt = rc;
        rc = Math.max(MIN_RATE, rc * (1 - alpha / 2));
        alpha = (1 - G) * alpha + G;
        alphaAt = now + ALPHA_PERIOD_NS;
        increaseAt = now + INCREASE_PERIOD_NS;
        timerCount = 0;
        byteCount = 0;
        bytes = 0;
        limited = true;
        decreases++;
    }

    /** Runs the alpha and increase timers up to {@code now}. */
    public void advance(long now) {
        if (!limited) {
            return;
        }
        int n = 0;
        while (now - alphaAt >= 0 && n++ < MAX_CATCH_UP) {
            alpha *= 1 - G;
            alphaAt += ALPHA_PERIOD_NS;
        }
        if (now - alphaAt >= 0) {
            alphaAt = now + ALPHA_PERIOD_NS;
        }
        n = 0;
        while (limited && now - increaseAt >= 0 && n++ < MAX_CATCH_UP) {
            increaseAt += INCREASE_PERIOD_NS;
            timerCount++;
            increase();
        }
        if (now - increaseAt >= 0) {
            increaseAt = now + INCREASE_PERIOD_NS;
        }
    }

    /** Whether a packet may leave at {@code now}; runs the timers first. */
    public boolean maySend(long now) {
        advance(now);
        return !limited || now - nextSendAt >= 0;
    }

    /** A packet of {@code length} bytes left at {@code now}: the next may leave when the current rate allows. */
    public void sent(long now, int length) {
        if (!limited) {
            return;
        }
        long start = now - nextSendAt > 0 ? now : nextSendAt; // an idle QP does not save up a burst
        nextSendAt = start + (long) (length * 8e9 / rc);
        bytes += length;
        while (limited && bytes >= BYTE_COUNTER) {
            bytes -= BYTE_COUNTER;
            byteCount++;
            increase();
        }
    }

    /** When this QP wants to be polled: its next send time while paced and waiting, else never. */
    public long nextSendAt() {
        return limited ? nextSendAt : Long.MAX_VALUE;
    }

    /**
     * The notification point: a datagram for this QP arrived with CE at {@code now}; whether a CNP goes back (at most
     * one per {@code intervalNs}: mlx5's min_time_between_cnps, the paper's N).
     */
    public boolean cnpDue(long now, long intervalNs) {
        if (now - cnpSentAt < intervalNs) {
            return false;
        }
        cnpSentAt = now;
        return true;
    }

    private void increase() {
        int lo = Math.min(timerCount, byteCount);
        int hi = Math.max(timerCount, byteCount);
        if (lo > F) {
            rt += (lo - F) * RATE_HAI; // hyper increase
        } else if (hi > F) {
            rt += RATE_AI; // additive increase
        }
        rt = Math.min(rt, lineRate);
        rc = Math.min((rt + rc) / 2, lineRate);
        if (rc >= lineRate * 0.999) {
            rc = lineRate;
            rt = lineRate;
            limited = false; // recovered: unpaced again
        }
    }
}
