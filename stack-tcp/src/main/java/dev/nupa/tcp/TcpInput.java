package dev.nupa.tcp;

import dev.nupa.device.Trace;
import dev.nupa.tcp.wire.Seq;

/**
 * The receiving half of a {@link TcpConnection}: a segment arrives (RFC 9293 3.10.7). The SYN-SENT
 * rules and simultaneous open, PAWS (RFC 7323 5) before the acceptability test of 3.10.7.4, RST
 * and SYN in a synchronized state answered by challenge ACKs (RFC 5961), ACK processing with the
 * RTT sample, SACK scoreboard updates and the entry into loss recovery (RFC 6675, RFC 5681, RFC
 * 6582), the send window update (SND.WL1/SND.WL2), data into the receive buffer and the
 * out-of-order assembler with delayed and immediate ACKs (RFC 1122 4.2.3.2, RFC 5681 4.2), and the
 * FIN with the closing states and TIME-WAIT.
 */
abstract class TcpInput extends TcpOutput {
    TcpInput(TcpConnection.Output output, ByteRing sendBuf, ByteRing recvBuf) {
        super(output, sendBuf, recvBuf);
    }

    /** A segment in SYN-SENT (RFC 9293 3.10.7.3): the peer's SYN-ACK, its SYN (simultaneous open), or a reset. */
    void synSent(Segment in, long now) {
        boolean ack = in.has(Segment.ACK);
        if (ack && (Seq.le(in.ack, iss) || Seq.gt(in.ack, sndMax))) {
            if (!in.has(Segment.RST)) {
                sendRst(in.ack, 0, false);
            }
            return;
        }
        if (in.has(Segment.RST)) {
            if (ack) {
                finish(TcpError.REFUSED);
            }
            return;
        }
        if (!in.has(Segment.SYN)) {
            return;
        }
        irs = in.seq;
        rcvNxt = in.seq + 1;
        rcvAdvertised = rcvNxt + Math.min(recvBuf.free(), 65_535); // what our SYN offered, now anchored
        negotiate(in, now);
        if (ack) {
            via = in.fromNode;
            ackAdvance(in.ack, now);
            sndWnd = in.window; // SYN: never scaled
            sndWl1 = in.seq;
            sndWl2 = in.ack;
            maxSndWnd = Math.max(maxSndWnd, sndWnd);
            establish();
            ackNow = true;
        } else {
            // Simultaneous open (RFC 9293 3.5, figure 8): answer SYN-ACK from SYN-RECEIVED.
            sndNxt = iss;
            state = TcpState.SYN_RECEIVED;
            sndWnd = in.window;
            sndWl1 = in.seq;
        }
    }

    /** A segment in SYN-RECEIVED or a synchronized state (RFC 9293 3.10.7.4, "Otherwise"), check by check. */
    void synchronizedOrSynReceived(Segment in, long now) {
        if (state == TcpState.SYN_RECEIVED && in.has(Segment.SYN) && in.seq == irs) {
            if (!in.has(Segment.ACK) && !in.has(Segment.RST)) {
                // The peer's SYN again: our SYN-ACK was lost or is slow. Answer it now, as Linux does
                // (tcp_check_req), at most once per DUP_SYN_INTERVAL_NS, rather than leave the peer to
                // wait for our retransmission timer (RFC 9293 would only ACK it, which a SYN-SENT peer drops).
                if (dupSynAnsweredAt == NEVER || now - dupSynAnsweredAt >= DUP_SYN_INTERVAL_NS) {
                    dupSynAnsweredAt = now;
                    sndNxt = iss; // transmit() sends the SYN-ACK again; no back-off, not counted as a timeout
                    timing = false; // Karn: an RTT sample of the handshake would now be ambiguous
                    retransmits++;
                }
                return;
            }
            // Simultaneous open (RFC 9293 figure 8): the peer's SYN-ACK repeats the SYN we already
            // have; only its new part, the ACK, is processed (3.10.7.4: "straddle" the boundary).
            in.flags &= ~Segment.SYN;
            in.seq++;
        }
        int len = in.segmentLength();
        // RFC 7323 5.3 (PAWS), before the window check.
        if (tsOk && in.timestamps && !in.has(Segment.RST) && tsRecentAt != NEVER && Seq.lt(in.tsVal, tsRecent)
                && now - tsRecentAt < PAWS_IDLE_NS) {
            pawsDrops++;
            ackNow = true;
            return;
        }
        if (!acceptable(in.seq, len)) {
            if (rcvAdvertised == rcvNxt && in.has(Segment.ACK) && !in.has(Segment.RST) && !in.has(Segment.SYN)
                    && Seq.ge(in.seq, rcvNxt) && state.synchronizedState()) {
                // RFC 9293 3.10.7.4: with a zero receive window no segment is acceptable, "but special
                // allowance should be made to accept valid ACKs": take the acknowledgment, not the data.
                processAck(in, now);
            }
            if (!in.has(Segment.RST)) {
                ackNow = true; // RFC 9293 3.10.7.4: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>
                if (state == TcpState.TIME_WAIT && in.has(Segment.FIN)) {
                    timers.restartTimeWait(now); // a retransmitted FIN: restart 2 MSL
                }
            }
            return;
        }
        if (in.has(Segment.RST)) {
            // RFC 5961 3.2: only an exact match resets; in-window otherwise draws a challenge ACK.
            if (in.seq != rcvNxt) {
                challengeAck(now);
                return;
            }
            boolean quiet = state == TcpState.CLOSING || state == TcpState.LAST_ACK || state == TcpState.TIME_WAIT;
            finish(quiet ? null : TcpError.RESET);
            return;
        }
        if (in.has(Segment.SYN)) {
            challengeAck(now); // RFC 5961 4.2: a SYN in a synchronized state
            return;
        }
        if (!in.has(Segment.ACK)) {
            return;
        }
        if (state == TcpState.SYN_RECEIVED) {
            if (completesHandshake(in.ack)) {
                ackAdvance(in.ack, now);
                sndWnd = in.window << sndShift;
                sndWl1 = in.seq;
                sndWl2 = in.ack;
                maxSndWnd = Math.max(maxSndWnd, sndWnd);
                establish();
            } else {
                sendRst(in.ack, 0, false);
                return;
            }
        } else if (!processAck(in, now)) {
            return;
        }
        if (in.fromNode >= 0) {
            via = in.fromNode; // an acceptable segment with a valid ACK: the peer's loop answers from there
        }
        if (in.urgentPointer != 0 && in.has(Segment.URG)) {
            // RFC 6093: urgent data is delivered inline like any other; nothing to do.
        }
        if (in.payloadLength > 0 && (state == TcpState.ESTABLISHED || state == TcpState.FIN_WAIT_1
                || state == TcpState.FIN_WAIT_2)) {
            receiveText(in, now);
        }
        if (tsOk && in.timestamps && Seq.le(in.seq, lastAckSent) && Seq.lt(lastAckSent, in.seq + Math.max(1, len))) {
            tsRecent = in.tsVal; // RFC 7323 4.3
            tsRecentAt = now;
        }
        if (in.has(Segment.FIN) && in.seq + in.payloadLength == rcvNxt && !finReceived) {
            receiveFin(now);
        }
    }

    /** Whether {@code ack} is the one ACK that completes this SYN-RECEIVED connection's handshake (RFC 9293 3.10.7.4). */
    boolean completesHandshake(int ack) {
        return Seq.gt(ack, sndUna) && Seq.le(ack, sndMax);
    }

    /** The acceptability test of RFC 9293 3.10.7.4 (the table of four cases). */
    private boolean acceptable(int seq, int len) {
        int wnd = Math.max(0, rcvAdvertised - rcvNxt);
        if (len == 0) {
            return wnd == 0 ? seq == rcvNxt : Seq.le(rcvNxt, seq) && Seq.lt(seq, rcvNxt + wnd);
        }
        if (wnd == 0) {
            return false;
        }
        return Seq.le(rcvNxt, seq) && Seq.lt(seq, rcvNxt + wnd)
                || Seq.le(rcvNxt, seq + len - 1) && Seq.lt(seq + len - 1, rcvNxt + wnd);
    }

    /** ACK processing in a synchronized state; returns false when the segment is to be dropped. */
    private boolean processAck(Segment in, long now) {
        int ack = in.ack;
        if (Seq.gt(ack, sndMax)) {
            ackNow = true; // acknowledges something not yet sent (RFC 9293 3.10.7.4 fifth check)
            return false;
        }
        if (Seq.lt(ack, sndUna - Math.max(maxSndWnd, 1))) {
            challengeAck(now); // RFC 5961 5.2: far too old
            return false;
        }
        int flightBefore = sndMax - sndUna;
        boolean advanced = Seq.gt(ack, sndUna);
        if (advanced) {
            int acked = ack - sndUna;
            long rttNs = rttSample(in, ack, now);
            ackAdvance(ack, now);
            dupAcks = 0; // RFC 6675 section 5, RFC 5681 3.2: a cumulative ACK resets DupAcks
            limitedTransmit = 0;
            if (inRecovery) {
                if (Seq.ge(ack, recover)) {
                    // RFC 6675 (A), RFC 6582 3.2 step 3: a full acknowledgment ends recovery; the
                    // scoreboard above SND.UNA stays.
                    inRecovery = false;
                    cc.onExitRecovery(now);
                } else if (!sackOk) {
                    retransmitFirstUnacknowledged(now); // RFC 6582 3.2 step 3: a partial ACK
                }
                // With SACK, (B) and (C) follow in transmit(): SetPipe, then NextSeg while cwnd allows.
            } else {
                cc.onAck(now, acked, rttNs, flightBefore);
            }
        }
        int newlySacked = sackOk && in.sackBlocks > 0 ? recordSack(in) : 0;
        if (advanced && !scoreboard.isEmpty() && scoreboard.left(0) == sndUna) {
            reneged(now);
        }
        if (sackOk) {
            // RFC 6675 section 2: an ACK is a duplicate when it SACKs octets not SACKed before,
            // whatever else it carries.
            if (newlySacked > 0 && !inRecovery) {
                dupAcks++;
                // RFC 6675 section 5 (1) and (2); 5.1: not again before SND.UNA reaches RecoveryPoint + 1.
                if ((dupAcks >= SackScoreboard.DUP_THRESH || scoreboard.isLost(sndUna, maxPayload()))
                        && Seq.ge(sndUna, recover)) {
                    enterSackRecovery(now);
                }
                // Otherwise (3): limited transmit, governed by pipe, in transmit().
            }
        } else if (!advanced && ack == sndUna && in.segmentLength() == 0 && flightBefore > 0
                && (in.window << sndShift) == sndWnd && !in.has(Segment.FIN)) {
            // RFC 5681 section 2: a duplicate acknowledgment.
            dupAcks++;
            if (dupAcks == SackScoreboard.DUP_THRESH && !inRecovery && Seq.gt(ack, recover)) { // RFC 6582 3.2 step 2
                inRecovery = true;
                recover = sndMax;
                fastRetransmits++;
                cc.onEnterRecovery(now, flightBefore);
                retransmitFirstUnacknowledged(now);
            }
        }
        // Window update (RFC 9293 3.10.7.4: SND.WL1 / SND.WL2 rule).
        if (Seq.lt(sndWl1, in.seq) || sndWl1 == in.seq && Seq.le(sndWl2, ack)) {
            sndWnd = in.window << sndShift;
            sndWl1 = in.seq;
            sndWl2 = ack;
            maxSndWnd = Math.max(maxSndWnd, sndWnd);
            if (sndWnd > 0) {
                timers.windowOpened();
            }
        }
        switch (state) {
            case FIN_WAIT_1 -> {
                if (finAcked()) {
                    state = TcpState.FIN_WAIT_2;
                    if (appClosed) {
                        timers.startFinWait2(now);
                    }
                }
            }
            case CLOSING -> {
                if (finAcked()) {
                    enterTimeWait(now);
                }
            }
            case LAST_ACK -> {
                if (finAcked()) {
                    finish(null);
                    return false;
                }
            }
            default -> {
            }
        }
        return true;
    }

    private boolean finAcked() {
        return finQueued && finSent && Seq.gt(sndUna, finSeq());
    }

    /** SND.UNA moves to {@code ack}: free acknowledged bytes, restart or stop the retransmission timer. */
    private void ackAdvance(int ack, long now) {
        if (Seq.gt(ack, bufSeq)) {
            int dataAcked = Math.min(ack - bufSeq, sendBuf.size());
            sendBuf.consume(dataAcked);
            bufSeq += dataAcked;
            if (dataAcked > 0) {
                events.onWritable(self());
            }
        }
        sndUna = ack;
        if (Seq.lt(sndNxt, sndUna)) {
            sndNxt = sndUna;
        }
        scoreboard.dropBelow(ack);
        timers.acked(sndUna == sndMax, now);
    }

    /** An RTT sample from the timestamp echo (RFC 7323 4) or the one timed segment (Karn); -1 if none. */
    private long rttSample(Segment in, int ack, long now) {
        // One timed segment per round trip (RFC 6298 3); timestamps tick in milliseconds (RFC 7323
        // 5.4), far too coarse for fabric round trips of microseconds, so they serve PAWS only.
        long sample = -1;
        if (timing && Seq.gt(ack, timedSeq)) {
            sample = now - timedAt;
            timing = false;
        }
        if (sample >= 0) {
            rtt.sample(sample);
            events.onRttSample(self(), sample);
        }
        return sample;
    }

    void establish() {
        state = TcpState.ESTABLISHED;
        events.onEstablished(self());
    }

    private void receiveText(Segment in, long now) {
        int seq = in.seq;
        long off = in.payloadOffset;
        int len = in.payloadLength;
        if (Seq.lt(seq, rcvNxt)) { // trim what we already have
            int skip = rcvNxt - seq;
            if (skip >= len) {
                ackNow = true; // a pure duplicate: tell the sender where we are
                return;
            }
            seq += skip;
            off += skip;
            len -= skip;
        }
        if (appClosed) {
            // RFC 1122 4.2.2.13: new data for an application that has closed is answered with a reset
            // (nobody will read it), so the sender learns at once that it went nowhere.
            sendRst(sndNxt, 0, false);
            finish(TcpError.DATA_AFTER_CLOSE);
            return;
        }
        int window = recvBuf.free();
        int at = seq - rcvNxt;
        if (at >= window) {
            ackNow = true;
            return;
        }
        len = Math.min(len, window - at); // trim what lies beyond the window
        if (!recvBuf.reserve()) {
            // No memory for the receive buffer (the layer's budget or the JVM's bound): the data is dropped
            // unacknowledged, as if lost on the way. The peer's retransmission timer sends it again, and it
            // lands once other connections have given memory back; a shortage that outlasts the peer's
            // retries ends the connection there with a timeout, so the sender is told.
            bufferDrops++;
            events.onBufferShortage(self());
            return;
        }
        if (at == 0) {
            recvBuf.writeAt(0, in.payload, off, len);
            int more = outOfOrder.advance(len); // bytes held beyond the new RCV.NXT that are now in order
            int gained = len + more;
            recvBuf.commit(gained);
            rcvNxt += gained;
            if (more > 0 || !outOfOrder.isEmpty()) {
                ackNow = true; // a hole filled: acknowledge at once (RFC 5681 4.2)
            } else if (++unackedSegments >= 2 || config.delayedAckNs() == 0) {
                ackNow = true; // every second full segment at once (RFC 1122 4.2.3.2)
            } else {
                timers.delayAck(now);
            }
            if (Trace.ENABLED) {
                Trace.mark(Trace.CALLBACK);
            }
            events.onReadable(self());
        } else {
            outOfOrderSegments++;
            if (outOfOrder.add(at, at + len)) {
                recvBuf.writeAt(at, in.payload, off, len);
            }
            ackNow = true; // RFC 5681 4.2: out-of-order data gets an immediate (duplicate) ACK
        }
    }

    private void receiveFin(long now) {
        finReceived = true;
        closingAt = closingAt == NEVER ? now : closingAt;
        rcvNxt++;
        ackNow = true;
        switch (state) {
            case SYN_RECEIVED, ESTABLISHED -> state = TcpState.CLOSE_WAIT;
            case FIN_WAIT_1 -> {
                if (finAcked()) {
                    enterTimeWait(now);
                } else {
                    state = TcpState.CLOSING;
                }
            }
            case FIN_WAIT_2 -> enterTimeWait(now);
            default -> {
            }
        }
        events.onPeerClosed(self());
    }

    private void enterTimeWait(long now) {
        state = TcpState.TIME_WAIT;
        // Our FIN is acknowledged and no data is taken from here on: the buffers' memory goes back to the
        // layer now, not after the 2*MSL wait (the receive buffer once the application has read it).
        sendBuf.release();
        recvBuf.release();
        // The owner may refuse the wait (its bound on connections in TIME-WAIT is reached, as Linux's
        // tcp_max_tw_buckets): the connection then closes 1 ns on, so the poll that sends the ACK of the
        // peer's FIN, at now, still finds it in TIME-WAIT.
        timers.startTimeWait(now, events.onTimeWait(self()) ? config.timeWaitNs() : 1);
    }

    private void challengeAck(long now) {
        if (challengeLimit.tryTake(now)) {
            challengeAcksSent++;
            ackNow = true;
        }
    }

    /** RFC 6675 Update(): records the ACK's SACK blocks; returns the octets SACKed for the first time. */
    private int recordSack(Segment in) {
        int dataEnd = sentDataEnd();
        int added = 0;
        for (int i = 0; i < in.sackBlocks; i++) {
            int l = in.sackLeft[i];
            int r = in.sackRight[i];
            // RFC 2018, RFC 6675: only what lies above SND.UNA and was sent counts; a D-SACK (RFC
            // 2883) below SND.UNA, a block beyond SND.MAX and one claiming our FIN do not.
            if (!Seq.lt(l, r) || Seq.le(r, sndUna) || Seq.gt(r, dataEnd)) {
                continue;
            }
            added += scoreboard.add(Seq.max(l, sndUna), r);
        }
        return added;
    }

    /** Options of the peer's SYN: MSS, and the ones that count only if both ends offer them. */
    void negotiate(Segment syn, long now) {
        sendMss = Math.min(localMss, syn.mss > 0 ? syn.mss : 536);
        scalingOk = config.windowScaling() && syn.windowScale >= 0;
        if (scalingOk) {
            sndShift = Math.min(14, syn.windowScale); // RFC 7323 2.3: larger shifts are used as 14
        } else {
            sndShift = 0; // RFC 7323 2.2: both ends must offer it, else neither scales
            rcvShift = 0;
        }
        tsOk = config.timestamps() && syn.timestamps;
        if (tsOk) {
            tsRecent = syn.tsVal;
            tsRecentAt = now;
        }
        sackOk = config.sack() && syn.sackPermitted;
        cc.reset(sendMss, CongestionControls.initialWindow(sendMss));
    }
}
