package dev.nupa.tcp;

/**
 * The timers of one {@link TcpConnection}, apart from its input and output as Linux's tcp_timer.c is
 * apart from tcp_input.c and tcp_output.c: when each is due, arming and stopping it, its back-off, and
 * what happens when it fires. The retransmission timer with Karn's rule and exponential back-off (RFC
 * 6298 5), the delayed ACK (RFC 1122 4.2.3.2), zero-window probes (RFC 9293 3.8.6.1), keep-alive (RFC
 * 1122 4.2.3.6), TIME-WAIT's 2*MSL (RFC 9293 3.6), the bounded FIN-WAIT-2 of an application that closed
 * fully (Linux's tcp_fin_timeout), the user timeout (RFC 9293 3.8.3) and the retry of a segment the
 * output refused. Times are absolute nanoseconds given by the caller, {@link #NEVER} when a timer is off;
 * nothing here reads a clock or allocates. The connection holds one for all its lives ({@link #clear}).
 */
final class TcpTimers {
    static final long NEVER = Long.MAX_VALUE;

    private final TcpConnection c;

    long rtoAt;
    long delayedAckAt;
    long persistAt;
    long keepAliveAt;
    long timeWaitAt;
    long finWait2At;
    /** Since when data has waited for its acknowledgment: the user timeout counts from here. */
    long unackedSince;
    long blockedRetryAt;
    /** Retransmission timeouts in a row, without an acknowledgment between. */
    int retries;
    int keepAliveProbes;
    int persistBackoff;

    TcpTimers(TcpConnection c) {
        this.c = c;
        clear();
    }

    /** Every timer off, every count zero: a new connection. */
    void clear() {
        rtoAt = delayedAckAt = persistAt = keepAliveAt = timeWaitAt = finWait2At = unackedSince = blockedRetryAt = NEVER;
        retries = keepAliveProbes = persistBackoff = 0;
    }

    /** The connection closed: nothing is due any more. */
    void stopAll() {
        rtoAt = NEVER;
        delayedAckAt = NEVER;
        persistAt = NEVER;
        keepAliveAt = NEVER;
        timeWaitAt = NEVER;
        finWait2At = NEVER;
    }

    /** When the next timer is due. */
    long next() {
        return Math.min(Math.min(Math.min(rtoAt, delayedAckAt), blockedRetryAt),
                Math.min(Math.min(persistAt, keepAliveAt), Math.min(timeWaitAt, finWait2At)));
    }

    /**
     * Runs the timers that are due, then has the connection send what may leave; returns when the next
     * timer is due ({@link #NEVER} once the connection closed).
     */
    long poll(long now) {
        if (c.state == TcpState.CLOSED) {
            return NEVER;
        }
        if (now >= timeWaitAt) {
            c.finish(null);
            return NEVER;
        }
        if (now >= finWait2At) {
            c.sendRst(c.sndNxt, 0, false); // the peer, likely still in CLOSE-WAIT, learns it is gone
            c.finish(TcpError.FIN_WAIT_2_TIMEOUT);
            return NEVER;
        }
        long userTimeout = c.config.userTimeoutNs();
        if (userTimeout > 0 && unackedSince != NEVER && now - unackedSince >= userTimeout) {
            c.sendRst(c.sndNxt, 0, false);
            c.finish(TcpError.USER_TIMEOUT);
            return NEVER;
        }
        if (now >= rtoAt && !retransmitTimeout(now)) {
            return NEVER;
        }
        if (now >= delayedAckAt) {
            c.ackNow = true;
        }
        blockedRetryAt = NEVER; // transmit() below tries again; a new refusal sets it anew
        if (now >= persistAt) {
            probeZeroWindow(now);
        }
        if (now >= keepAliveAt && !keepAlive(now)) {
            return NEVER;
        }
        c.transmit(now);
        scheduleKeepAlive();
        return next();
    }

    // ---- retransmission (RFC 6298) ----

    /** Something that must be acknowledged left: the timer runs unless it already does (RFC 6298 5.1). */
    void armRetransmit(long now) {
        if (rtoAt == NEVER) {
            rtoAt = now + c.rtt.rto();
        }
    }

    /** Data left: the retransmission timer runs, and the user timeout counts from the first unacknowledged. */
    void dataSent(long now) {
        armRetransmit(now);
        if (unackedSince == NEVER) {
            unackedSince = now;
        }
    }

    /** An ACK moved SND.UNA: the back-off ends; the timer stops when all is acknowledged, else restarts (RFC 6298 5.2, 5.3). */
    void acked(boolean all, long now) {
        retries = 0;
        persistBackoff = 0;
        if (all) {
            rtoAt = NEVER;
            unackedSince = NEVER;
        } else {
            rtoAt = now + c.rtt.rto();
            unackedSince = now;
        }
    }

    /** Fires the retransmission timer at the next poll (the peer reneged on its SACKs). */
    void expireRetransmit(long now) {
        rtoAt = now;
    }

    /** RFC 6298 5.4-5.7; returns false if the connection was dropped because its retries ran out. */
    private boolean retransmitTimeout(long now) {
        boolean handshake = c.state == TcpState.SYN_SENT || c.state == TcpState.SYN_RECEIVED;
        int limit = handshake ? c.config.synRetries() : c.config.maxRetries();
        if (retries >= limit) {
            if (c.state.synchronizedState()) {
                c.sendRst(c.sndNxt, 0, false);
            }
            c.finish(TcpError.TIMED_OUT);
            return false;
        }
        retries++;
        c.timeouts++;
        c.rtt.backOff(); // 5.5: RTO doubles, up to its maximum
        c.enterLoss(handshake, now);
        rtoAt = now + c.rtt.rto(); // 5.6
        return true;
    }

    // ---- delayed ACK (RFC 1122 4.2.3.2) ----

    /** An ACK may wait; it leaves at the latest {@link TcpConfig#delayedAckNs()} after the first data it acknowledges. */
    void delayAck(long now) {
        if (delayedAckAt == NEVER) {
            delayedAckAt = now + c.config.delayedAckNs();
        }
    }

    /** An ACK left: none is owed any more. */
    void ackSent() {
        delayedAckAt = NEVER;
    }

    /** Whether an ACK is owed: one waits to be delayed, or the output refused a segment that waits for its retry. */
    boolean ackOwed() {
        return delayedAckAt != NEVER || blockedRetryAt != NEVER;
    }

    /** The output could not take a segment (a full ring): it is tried again shortly. */
    void outputBlocked(long now) {
        blockedRetryAt = now + TcpConnection.BLOCKED_RETRY_NS;
    }

    // ---- zero-window probes (RFC 9293 3.8.6.1) ----

    /** The peer's window is zero with nothing in flight: probe it after one RTO unless a probe is due already. */
    void armPersist(long now) {
        if (persistAt == NEVER) {
            persistAt = now + c.rtt.rto();
        }
    }

    /** The peer opened its window: no more probes, and the back-off starts over. */
    void windowOpened() {
        persistAt = NEVER;
        persistBackoff = 0;
    }

    private void probeZeroWindow(long now) {
        persistAt = NEVER;
        if (c.sendZeroWindowProbe(now)) {
            persistBackoff = Math.min(persistBackoff + 1, 16);
            persistAt = now + Math.min(c.config.maxRtoNs(), c.rtt.rto() << persistBackoff);
        }
    }

    // ---- keep-alive (RFC 1122 4.2.3.6) ----

    /** A segment arrived: the peer is alive, the probes start over. */
    void peerHeard() {
        keepAliveProbes = 0;
    }

    private void scheduleKeepAlive() {
        long idle = c.config.keepAliveIdleNs();
        if (idle > 0 && c.state == TcpState.ESTABLISHED && keepAliveProbes == 0) {
            keepAliveAt = c.lastActivity + idle;
        }
    }

    /** Returns false if the connection was dropped because the peer answered no probe. */
    private boolean keepAlive(long now) {
        if (c.state != TcpState.ESTABLISHED || c.config.keepAliveIdleNs() == 0) {
            keepAliveAt = NEVER;
            return true;
        }
        if (keepAliveProbes >= c.config.keepAliveProbes()) {
            c.sendRst(c.sndNxt, 0, false);
            c.finish(TcpError.KEEPALIVE);
            return false;
        }
        keepAliveProbes++;
        c.sendKeepAliveProbe(now);
        keepAliveAt = now + c.config.keepAliveIntervalNs();
        return true;
    }

    // ---- TIME-WAIT (RFC 9293 3.6) and FIN-WAIT-2 ----

    /** TIME-WAIT begins and lasts {@code duration}: the other timers stop, nothing is sent but ACKs. */
    void startTimeWait(long now, long duration) {
        timeWaitAt = now + duration;
        finWait2At = NEVER;
        rtoAt = NEVER;
        persistAt = NEVER;
        keepAliveAt = NEVER;
    }

    /** A retransmitted FIN in TIME-WAIT: the 2*MSL wait starts over (RFC 9293 3.10.7.4). */
    void restartTimeWait(long now) {
        timeWaitAt = now + c.config.timeWaitNs();
    }

    /** When TIME-WAIT ends. */
    long timeWaitEnds() {
        return timeWaitAt;
    }

    /**
     * FIN-WAIT-2 of an application that closed fully is bounded by {@link TcpConfig#finWait2TimeoutNs()}
     * (Linux's tcp_fin_timeout; RFC 9293 3.10.4 lets a half-closed connection wait there for ever, and it does).
     */
    void startFinWait2(long now) {
        long timeout = c.config.finWait2TimeoutNs();
        if (timeout > 0 && finWait2At == NEVER) {
            finWait2At = now + Math.min(timeout, NEVER - 1 - now); // a huge timeout saturates, never wraps
        }
    }
}
