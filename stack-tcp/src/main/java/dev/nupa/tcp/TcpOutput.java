package dev.nupa.tcp;

import dev.nupa.device.Trace;
import dev.nupa.tcp.wire.Seq;

/**
 * The sending half of a {@link TcpConnection}: what leaves. Segments within
 * the send and congestion windows with Nagle and sender silly-window avoidance (RFC 9293 3.7.4,
 * 3.8.6.2.1), the window advertised with receiver SWS avoidance (3.8.6.2.2), SYN, FIN and pure ACKs
 * (numbered as Linux's tcp_acceptable_seq), timestamps and SACK blocks on every segment (RFC 7323,
 * RFC 2018); what the timers send ({@link TcpTimers} decides when): the go-back after a retransmission
 * timeout with Karn's rule (RFC 6298), zero-window probes (RFC 9293 3.8.6.1), keep-alive probes (RFC
 * 1122 4.2.3.6); loss recovery's sending side: RFC 6675 NextSeg and SetPipe with a SACK peer, RFC 5681 and RFC 6582 NewReno
 * retransmission without one.
 */
abstract class TcpOutput extends TcpControlBlock {
    TcpOutput(TcpConnection.Output output, ByteRing sendBuf, ByteRing recvBuf) {
        super(output, sendBuf, recvBuf);
    }

    /** The sequence number of our FIN: fixed once close() was called, since no data is added after it. */
    int finSeq() {
        return bufSeq + sendBuf.size();
    }

    /**
     * A retransmission timeout (RFC 6298 5.4): go back to the first unacknowledged octet; outside the
     * handshake, loss recovery ends and the congestion window falls back.
     */
    void enterLoss(boolean handshake, long now) {
        timing = false; // Karn: a retransmitted segment is never timed
        if (!handshake) {
            cc.onRetransmitTimeout(now, sndMax - sndUna);
            // RFC 6675 5.1: recovery ends, RecoveryPoint = HighData, and no new recovery before
            // SND.UNA reaches it (RFC 6582 section 4 likewise). HighRxt starts over. The scoreboard
            // stays (RFC 6675 5.1, RFC 2018 erratum 1610), guarded by the reneging check.
            inRecovery = false;
            recover = sndMax;
            highRxt = sndUna;
            dupAcks = 0;
            limitedTransmit = 0;
        }
        // Go back to the first unacknowledged octet; sendData() skips what the peer SACKed (5.1:
        // "filling in" the holes it reports).
        sndNxt = sndUna;
        retransmits++;
    }

    void transmit(long now) {
        if (state == TcpState.SYN_SENT || state == TcpState.SYN_RECEIVED) {
            if (sndNxt == iss) {
                sendSyn(now);
            }
            if (!ackNow || state == TcpState.SYN_SENT) {
                return;
            }
        }
        boolean sent = false;
        if (state.synchronizedState() && state != TcpState.TIME_WAIT) {
            int pipe = pipe();
            if (inRecovery && sackOk) {
                // RFC 6675 step (C): while cwnd - pipe >= 1 SMSS, NextSeg(); (C.4) pipe grows by what left.
                while (cc.cwnd() - pipe >= maxPayload()) {
                    int n = sendNextSegment(cc.cwnd() - pipe, now);
                    if (n <= 0) {
                        break;
                    }
                    pipe += n;
                    sent = true;
                }
            } else {
                while (true) {
                    int n = sendData(now, cc.cwnd() - pipe);
                    if (n <= 0) {
                        break;
                    }
                    pipe += n;
                    sent = true;
                }
            }
            if (finQueued && sndNxt == finSeq()) {
                sent |= sendFin(now); // all data out, FIN not (or, after going back, no longer)
            }
        }
        if (!sent && (ackNow || windowUpdateWorthSending() && state.synchronizedState())) {
            sendAck(now);
        }
    }

    /**
     * Sends one segment at SND.NXT: new data, or data sent before when going back after a timeout
     * (skipping what the peer SACKed), if the receive window, {@code cwndRoom} (cwnd - pipe), Nagle
     * and SWS avoidance allow; returns its length.
     */
    private int sendData(long now, int cwndRoom) {
        boolean goingBack = Seq.lt(sndNxt, sndMax);
        if (goingBack && !scoreboard.isEmpty()) {
            sndNxt = Seq.min(scoreboard.skipSacked(sndNxt), sentDataEnd()); // RFC 6675 5.1: only the holes
            goingBack = Seq.lt(sndNxt, sndMax);
        }
        int offset = sndNxt - bufSeq;
        int unsent = sendBuf.size() - offset;
        if (unsent <= 0) {
            return 0;
        }
        int inFlight = sndNxt - sndUna;
        int room = Math.min(sndWnd - inFlight, cwndRoom);
        if (sndWnd == 0 || room <= 0) {
            if (sndWnd == 0 && inFlight == 0) {
                timers.armPersist(now); // RFC 9293 3.8.6.1: probe a zero window
            }
            return 0;
        }
        int segmentMax = maxPayload();
        int n = Math.min(Math.min(unsent, segmentMax), room);
        if (goingBack) {
            // Resent data stops at the next SACKed range and is not held by Nagle; a piece cut short by
            // the windows waits while something is in flight (SWS avoidance, RFC 9293 3.8.6.2.1).
            int piece = Math.min(Math.min(unsent, segmentMax), scoreboard.nextSackedAbove(sndNxt, sndMax) - sndNxt);
            if (room < piece && inFlight > 0) {
                return 0;
            }
            return transmitFrom(sndNxt, Math.min(piece, room), now, false);
        }
        // Nagle (RFC 9293 3.7.4) and sender SWS avoidance (3.8.6.2.1): hold a small segment while data is in flight.
        if (n < segmentMax && n < unsent && n < maxSndWnd / 2) {
            return 0; // RFC 9293 3.8.6.2.1: wait for a full segment or half the largest window
        }
        if (n < segmentMax && !config.noDelay() && inFlight > 0 && !finQueued) {
            return 0;
        }
        int sent = transmitFrom(sndNxt, n, now, false);
        if (!inRecovery && dupAcks > 0) {
            limitedTransmit += sent; // RFC 6675 (3): limited transmit, left out of FlightSize at (4.2)
        }
        return sent;
    }

    /**
     * Sends up to {@code max} bytes of buffered data starting at {@code seq} (a piece that does not
     * wrap the ring); FIN rides along when it is the end and queued. Returns the bytes sent.
     */
    private int transmitFrom(int seq, int max, long now, boolean retransmission) {
        int at = seq - bufSeq;
        int n = Math.min(max, sendBuf.contiguous(at));
        if (n <= 0) {
            return 0;
        }
        Segment s = header(Segment.ACK, seq);
        s.payload = sendBuf.segment();
        s.payloadOffset = sendBuf.offsetOf(at);
        s.payloadLength = n;
        if (at + n == sendBuf.size()) {
            s.flags |= Segment.PSH | (finQueued ? Segment.FIN : 0); // FIN rides on the last data
        }
        if (!emit(s, now)) {
            return 0;
        }
        int end = seq + n + (s.has(Segment.FIN) ? 1 : 0);
        if (s.has(Segment.FIN)) {
            finSent = true;
            closingAt = closingAt == NEVER ? now : closingAt;
            finState();
        }
        if (!retransmission) {
            if (Seq.gt(end, sndNxt)) {
                sndNxt = end;
            }
            if (!timing && Seq.ge(seq, sndMax)) {
                timing = true; // time this one (RFC 6298 and Karn: new data only)
                timedSeq = seq;
                timedAt = now;
            }
        } else if (timing && Seq.le(seq, timedSeq) && Seq.lt(timedSeq, end)) {
            timing = false; // Karn (RFC 6298 3): the timed segment was sent again; its ACK is ambiguous
        }
        if (Seq.gt(end, sndMax)) {
            sndMax = end;
        }
        timers.dataSent(now);
        return n;
    }

    /** Data bytes per segment: the MSS less the options every segment carries (RFC 6691). */
    int maxPayload() {
        return sendMss - (tsOk ? 12 : 0);
    }

    private boolean sendFin(long now) {
        Segment s = header(Segment.ACK | Segment.FIN, sndNxt);
        if (!emit(s, now)) {
            return false;
        }
        finSent = true;
        closingAt = closingAt == NEVER ? now : closingAt;
        sndNxt++;
        if (Seq.gt(sndNxt, sndMax)) {
            sndMax = sndNxt;
        }
        finState();
        timers.armRetransmit(now);
        return true;
    }

    private void finState() {
        if (state == TcpState.ESTABLISHED) {
            state = TcpState.FIN_WAIT_1;
        } else if (state == TcpState.CLOSE_WAIT) {
            state = TcpState.LAST_ACK;
        }
    }

    private void sendSyn(long now) {
        boolean synAck = state == TcpState.SYN_RECEIVED;
        Segment s = header(synAck ? Segment.SYN | Segment.ACK : Segment.SYN, iss);
        s.mss = localMss;
        if (synAck ? scalingOk : config.windowScaling()) {
            s.windowScale = rcvShift; // RFC 7323 2.2: a SYN-ACK carries it only if the SYN did
        }
        s.sackPermitted = config.sack() && (!synAck || sackOk);
        if (config.timestamps() && (!synAck || tsOk)) {
            s.timestamps = true;
            s.tsVal = tsValue(now);
            s.tsEcr = synAck ? tsRecent : 0;
        }
        s.window = Math.min(recvBuf.free(), 65_535); // RFC 7323 2.2: the window in a SYN is never scaled
        rcvAdvertised = rcvNxt + s.window;
        if (!emitRaw(s, now)) {
            return;
        }
        sndNxt = iss + 1;
        if (Seq.gt(sndNxt, sndMax)) {
            sndMax = sndNxt;
        }
        timers.armRetransmit(now);
    }

    /**
     * A pure ACK carries SND.MAX, not SND.NXT: after going back to retransmit, SND.NXT lies below
     * what the peer has already received, and an ACK numbered there would fail the peer's
     * acceptability test and be dropped unread; if both ends had gone back, each would answer the
     * other's ACK with another (an ACK storm, seen in TcpNodeTest). Linux's tcp_acceptable_seq does
     * the same.
     */
    private void sendAck(long now) {
        emit(header(Segment.ACK, ackSeq()), now);
    }

    /**
     * The sequence number of a pure ACK (Linux's tcp_acceptable_seq): SND.MAX if it lies inside the
     * peer's window, else the window's end, so that a peer whose window is zero (RCV.NXT = SND.UNA
     * here) finds the ACK exactly at RCV.NXT. Found by a stalled pipeTo echo: ACKs numbered past a
     * zero window were dropped unread, and with them the acknowledgments the peer was waiting for.
     */
    private int ackSeq() {
        int windowEnd = sndUna + sndWnd;
        // A scaled window is rounded down to a multiple of 2^shift: SND.MAX within that rounding of the
        // window's end is inside the peer's real window (Linux makes the same allowance).
        if (Seq.le(sndMax, windowEnd) || sndMax - windowEnd < (1 << sndShift)) {
            return sndMax;
        }
        return windowEnd;
    }

    /**
     * RFC 9293 3.8.6.1: while the peer's window is zero and data waits, one byte beyond the window, whose
     * ACK carries the window. Returns whether there was reason to probe (the timer then backs off).
     */
    boolean sendZeroWindowProbe(long now) {
        int offset = sndNxt - bufSeq;
        if (sndWnd == 0 && sendBuf.size() - offset > 0 && state.synchronizedState()) {
            transmitFrom(sndNxt, 1, now, false);
            return true;
        }
        return false;
    }

    /** RFC 1122 4.2.3.6: a segment with SEG.SEQ = SND.NXT - 1 and no data draws an ACK. */
    void sendKeepAliveProbe(long now) {
        emit(header(Segment.ACK, ackSeq() - 1), now);
    }

    /**
     * Whether opening the advertised window now moves its right edge by enough to tell the peer (RFC 9293 3.8.6.2.2).
     * Never after the peer's FIN: nothing more can come, and an update would reach a peer that may have closed
     * (its reset in answer would end this end's TIME-WAIT; Linux sends none either).
     */
    boolean windowUpdateWorthSending() {
        if (finReceived) {
            return false;
        }
        int newRight = rcvNxt + recvBuf.free();
        int gain = newRight - rcvAdvertised;
        return gain >= Math.min(config.receiveBuffer() / 2, sendMss) && rcvAdvertised - rcvNxt < sendMss * 2;
    }

    /** The window to advertise: the free buffer, kept from shrinking the right edge, moved only in useful steps. */
    private int windowToAdvertise() {
        int free = recvBuf.free();
        int right = rcvNxt + free;
        int current = rcvAdvertised - rcvNxt;
        if (Seq.gt(right, rcvAdvertised)) {
            int gain = right - rcvAdvertised;
            // Receiver SWS avoidance: grow only by min(buffer/2, MSS) steps.
            if (gain >= Math.min(config.receiveBuffer() / 2, sendMss) || current <= 0) {
                rcvAdvertised = right;
            }
        }
        return Math.max(0, rcvAdvertised - rcvNxt);
    }

    Segment header(int flags, int seq) {
        Segment s = tx.clear();
        s.flags = flags;
        s.seq = seq;
        s.ack = rcvNxt;
        return s;
    }

    /** Fills window and options of a non-SYN segment and sends it. */
    boolean emit(Segment s, long now) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.TCP_OUT);
        }
        int wnd = windowToAdvertise();
        s.window = Math.min(wnd >>> rcvShift, 65_535);
        if (tsOk) {
            s.timestamps = true;
            s.tsVal = tsValue(now);
            s.tsEcr = tsRecent;
        }
        if (sackOk && !outOfOrder.isEmpty()) {
            int max = tsOk ? 3 : 4; // RFC 2018 3: 3 blocks fit beside timestamps
            if (s.payloadLength > 0) {
                // Options count against the MSS (RFC 6691): only as many blocks as the segment has room for.
                int room = sendMss - s.payloadLength - (tsOk ? 12 : 0) - 4;
                max = Math.min(max, Math.max(0, room / 8));
            }
            s.sackBlocks = max == 0 ? 0 : outOfOrder.sackBlocks(rcvNxt, s.sackLeft, s.sackRight, max);
        }
        return emitRaw(s, now);
    }

    private boolean emitRaw(Segment s, long now) {
        if (!output.transmit(self(), s)) {
            timers.outputBlocked(now);
            return false;
        }
        if (s.has(Segment.ACK)) {
            lastAckSent = s.ack;
            ackNow = false;
            unackedSegments = 0;
            timers.ackSent();
        }
        return true;
    }

    /**
     * The TSval to send at {@code now}. RFC 7323 5.4: a clock of 1 ms per tick (the fastest allowed, as Linux), from a
     * random-free base plus 1 so 0 never appears, and monotone: never less than the last one sent, as a lower one is
     * dropped by the peer's PAWS check (5.3) as an old duplicate. A caller's {@code now} can be older than an earlier
     * segment's: application code that an input runs (a connect's completion writing its first messages) sends with a
     * fresh clock, and the input then goes on with the one it came with. Only a clock a little behind is held back: one
     * that seems far behind has gone round its 32 bits in a connection idle for weeks, and goes on (5.5).
     */
    private int tsValue(long now) {
        int v = timestampClock(now, tsBase);
        int behind = tsLastSent - v;
        if (behind > 0 && behind <= MAX_STALE_TICKS) {
            v = tsLastSent;
        }
        tsLastSent = v;
        return v;
    }

    /** How far behind the last TSval sent a caller's clock may be and still be held back: a minute of 1 ms ticks. */
    private static final int MAX_STALE_TICKS = 60_000;

    /** The timestamp clock at {@code now} of a clock whose base is {@code base}; SYN cookies read it too. */
    static int timestampClock(long now, long base) {
        return (int) ((now - base) / 1_000_000L) + 1;
    }

    void sendRst(int seq, int ack, boolean withAck) {
        Segment s = tx.clear();
        s.flags = Segment.RST | (withAck ? Segment.ACK : 0);
        s.seq = seq;
        s.ack = ack;
        output.transmit(self(), s);
    }

    // ---- loss recovery: RFC 6675 with a SACK peer, RFC 5681 and RFC 6582 NewReno without ----

    /** One past the last data octet sent: SND.MAX, less the FIN once that was sent. */
    int sentDataEnd() {
        return finSent ? sndMax - 1 : sndMax;
    }

    /**
     * The cumulative ACK stopped at, or inside, data the peer had SACKed: it discarded what it had
     * SACKed (reneging, RFC 2018 section 8). The scoreboard is no longer trusted (RFC 6675 5.1 keeps
     * it across a timeout only with such a check) and the retransmission timer fires at once, which
     * sends everything from SND.UNA again (as Linux's tcp_check_sack_reneging, without its delay).
     */
    void reneged(long now) {
        scoreboard.clear();
        timers.expireRetransmit(now);
    }

    /** RFC 6675 section 5 step (4): fast retransmit and entry into loss recovery. */
    void enterSackRecovery(long now) {
        inRecovery = true;
        recover = sndMax; // (4.1) RecoveryPoint = HighData
        fastRetransmits++;
        // (4.2) cwnd and ssthresh from FlightSize, less what limited transmit sent.
        cc.onEnterRecovery(now, Math.max(0, sndMax - sndUna - limitedTransmit));
        limitedTransmit = 0;
        // (4.3) Retransmit the segment at HighACK + 1 (up to the first SACKed octet); HighRxt and
        // RescueRxt both mark its end. (4.4) and (4.5), SetPipe and step (C), run in transmit().
        int length = Math.min(maxPayload(), scoreboard.nextSackedAbove(sndUna, sentDataEnd()) - sndUna);
        highRxt = sndUna + retransmit(sndUna, length, now); // unmoved if the output refused it: NextSeg finds it
        rescueRxt = sndUna + length;
    }

    /** RFC 6582 3.2 steps 2 and 3: NewReno retransmits the first unacknowledged segment. */
    void retransmitFirstUnacknowledged(long now) {
        retransmit(sndUna, maxPayload(), now);
    }

    /**
     * RFC 6675 NextSeg() and the sending of its segment (step (C.1) to (C.3)); returns the octets
     * sent, 0 when there is nothing to send. {@code room} is cwnd - pipe, at least one SMSS.
     */
    private int sendNextSegment(int room, long now) {
        int smss = maxPayload();
        boolean hole = scoreboard.findHole(sndUna, Seq.max(highRxt, sndUna), smss);
        // Rule 1: the first unSACKed octet above HighRxt, below the highest SACKed one, that IsLost.
        if (hole && scoreboard.holeLost()) {
            return retransmitHole(now);
        }
        // Rule 2: new data, if any and the receive window allows.
        int n = sendData(now, room);
        if (n > 0) {
            return n;
        }
        // Rule 3: as rule 1, lost or not.
        if (hole) {
            return retransmitHole(now);
        }
        // Rule 4: once per recovery, after SND.UNA passed RescueRxt, rescue the highest unSACKed
        // octets; HighRxt stays (C.2).
        if (Seq.ge(sndUna, rescueRxt)) {
            return rescue(now);
        }
        return 0;
    }

    /** NextSeg rules 1 and 3: up to one SMSS of the hole found, which moves HighRxt (C.2). */
    private int retransmitHole(long now) {
        int start = scoreboard.holeStart();
        int sent = retransmit(start, Math.min(maxPayload(), scoreboard.holeEnd() - start), now);
        if (sent > 0) {
            highRxt = start + sent;
        }
        return sent;
    }

    /**
     * NextSeg rule 4: one segment ending at the highest unSACKed octet sent, when that lies above
     * every SACKed one (a lost tail no SACK will reveal). Unsacked octets below the highest SACKed
     * one are rules 1 and 3's, which have sent them already when rule 4 is reached, so they are not
     * sent a third time.
     */
    private int rescue(long now) {
        int count = scoreboard.count();
        int from = count == 0 ? sndUna : scoreboard.right(count - 1);
        int to = sentDataEnd();
        if (!Seq.lt(from, to)) {
            return 0;
        }
        int start = Seq.max(from, to - maxPayload());
        int sent = retransmit(start, to - start, now);
        if (sent > 0) {
            rescueRxt = recover; // RescueRxt = RecoveryPoint: no second rescue in this recovery
        }
        return sent;
    }

    /** Sends {@code max} octets again from {@code seq}; returns how many left. */
    private int retransmit(int seq, int max, long now) {
        if (max <= 0) {
            return 0;
        }
        int sent = transmitFrom(seq, max, now, true);
        if (sent > 0) {
            retransmits++;
        }
        return sent;
    }

    /**
     * RFC 6675 SetPipe(): in SACK recovery, the scoreboard's count. Outside it, the unSACKed octets
     * sent: SetPipe's count whenever nothing IsLost, which holds outside recovery unless a recovery
     * may not begin yet; going back after a timeout, what lies beyond SND.NXT counts as lost (5.1).
     * Without SACK this is FlightSize (SND.NXT - SND.UNA). Package-private for tests.
     */
    int pipe() {
        if (inRecovery && sackOk) {
            return scoreboard.pipe(sndUna, sndMax, highRxt, maxPayload());
        }
        int sent = sndNxt - sndUna;
        return scoreboard.isEmpty() ? sent : sent - scoreboard.sackedBytes(sndUna, sndNxt);
    }
}
