package dev.nupa.tcp;

import static dev.nupa.tcp.Segment.ACK;
import static dev.nupa.tcp.Segment.FIN;
import static dev.nupa.tcp.Segment.PSH;
import static dev.nupa.tcp.Segment.RST;
import static dev.nupa.tcp.Segment.SYN;
import static dev.nupa.tcp.Wire.MS;
import static dev.nupa.tcp.Wire.bytes;
import static dev.nupa.tcp.Wire.seg;
import static dev.nupa.tcp.Wire.syn;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.nupa.tcp.Wire.One;
import dev.nupa.tcp.Wire.Seg;

/**
 * Scripted tests of one connection on virtual time, packetdrill's idea: inject a segment at time T,
 * check exactly what comes out. Each test is named after the rule it checks.
 */
class TcpConnectionTest {
    static final int ISS = 1_000_000;
    static final int IRS = 5_000_000;

    static TcpConfig plain() {
        // No options and no delayed ACK, so the scripts see plain RFC 9293 behaviour.
        return TcpConfig.defaults(1500).withOptions(false, false, false).withDelayedAck(0).withNoDelay(true)
                .withCongestionControl("newreno");
    }

    /** An established connection (active open) with the given config; the SYN-ACK offered {@code window}. */
    static One established(TcpConfig config, int window) {
        One o = new One(config);
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(new Seg(SYN | ACK, IRS, ISS + 1, window, 1460, -1, false, false, 0, 0, new int[0], new int[0], new byte[0]));
        o.sent();
        return o;
    }

    @Test
    void rfc9293_3_5_activeOpenSendsSynThenAcksTheSynAck() {
        One o = new One(TcpConfig.defaults(1500));
        o.c.connect(ISS, o.now);
        Seg s = o.onlySent();
        assertEquals(SYN, s.flags());
        assertEquals(ISS, s.seq());
        assertEquals(1460, s.mss());
        assertTrue(s.wscale() > 0 && s.sackOk() && s.ts(), "offers window scaling, SACK and timestamps: " + s);
        assertEquals(TcpState.SYN_SENT, o.c.state());

        o.inject(new Seg(SYN | ACK, IRS, ISS + 1, 29_200, 1400, 7, true, true, 777, s.tsVal(), new int[0], new int[0],
                new byte[0]));
        Seg ack = o.onlySent();
        assertEquals(ACK, ack.flags());
        assertEquals(ISS + 1, ack.seq());
        assertEquals(IRS + 1, ack.ack());
        assertEquals(777, ack.tsEcr(), "echoes the peer's timestamp (RFC 7323 4.3)");
        assertEquals(TcpState.ESTABLISHED, o.c.state());
        assertTrue(o.established);
        assertEquals(1400, o.c.sendMss(), "the least of both MSS options");
    }

    @Test
    void rfc7323_5_4_aStaleNowNeverSendsAnOlderTimestamp() {
        One o = new One(TcpConfig.defaults(1500).withNoDelay(true)); // each write a segment of its own
        o.c.connect(ISS, o.now);
        Seg syn = o.onlySent();
        // The application's connect handler runs from within the SYN-ACK's input, 70 ms of its own on a fresh clock
        // (as NupaSocketChannel's connect promise and channelActive do): its first write leaves at once, its second is
        // queued, and the input then sends it with the clock it came with.
        long synAckAt = o.now;
        o.whenEstablished = () -> {
            o.c.write(MemorySegment.ofArray(bytes(100, 1)), 0, 100, synAckAt + 70 * MS);
            o.c.queue(MemorySegment.ofArray(bytes(100, 2)), 0, 100);
        };
        o.inject(new Seg(SYN | ACK, IRS, ISS + 1, 29_200, 1400, 7, true, true, 777, syn.tsVal(), new int[0], new int[0],
                new byte[0]));
        List<Seg> sent = o.sent();
        assertEquals(List.of(ISS + 1, ISS + 101), sent.stream().map(Seg::seq).toList(), "both writes: " + sent);
        assertEquals(syn.tsVal() + 70, sent.get(0).tsVal());
        assertEquals(sent.get(0).tsVal(), sent.get(1).tsVal(), "not the input's older clock, " + syn.tsVal()
                + ", which the peer's PAWS check drops");
        o.c.write(MemorySegment.ofArray(bytes(100, 3)), 0, 100, synAckAt + 90 * MS);
        assertEquals(syn.tsVal() + 90, o.onlySent().tsVal(), "the clock goes on from its own reading");
        // 30 days idle: past half the clock's 32 bits, so it reads as behind the last TSval, but far behind: it goes on.
        long days30 = 30L * 24 * 3600 * 1000;
        o.c.write(MemorySegment.ofArray(bytes(100, 4)), 0, 100, synAckAt + (90 + days30) * MS);
        List<Seg> afterIdle = o.sent(); // the write, and the unacknowledged bytes again
        assertFalse(afterIdle.isEmpty());
        for (Seg late : afterIdle) {
            assertEquals((int) (syn.tsVal() + 90 + days30), late.tsVal(), "RFC 7323 5.5: not held at the last: " + late);
        }
    }

    @Test
    void rfc7323_2_2_noScalingUnlessBothOfferIt() {
        One o = new One(TcpConfig.defaults(1500));
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(seg(SYN | ACK, IRS, ISS + 1, 1000)); // the peer offered no options at all
        o.sent();
        byte[] data = bytes(3000, 1);
        o.write(data);
        List<Seg> out = o.sent();
        assertEquals(1, out.size(), "a 1000-byte unscaled window admits one segment of 536 (no MSS option): " + out);
        assertEquals(536, out.get(0).data().length);
        assertFalse(out.get(0).ts(), "no timestamps unless both offered them");
    }

    @Test
    void rfc9293_3_10_7_2_passiveOpenAnswersSynAckAndEstablishesOnTheAck() {
        One o = new One(plain());
        o.c.accept(syn(IRS, 1460, -1, false, false, 0).into(new Segment()), ISS, o.now);
        Seg synAck = o.onlySent();
        assertEquals(SYN | ACK, synAck.flags());
        assertEquals(ISS, synAck.seq());
        assertEquals(IRS + 1, synAck.ack());
        assertEquals(-1, synAck.wscale(), "no window scale in a SYN-ACK when the SYN had none");
        o.inject(seg(ACK, IRS + 1, ISS + 1, 65_535));
        assertEquals(TcpState.ESTABLISHED, o.c.state());
        assertTrue(o.sent().isEmpty());
    }

    /** Linux's tcp_check_req: a retransmitted SYN means our SYN-ACK went missing; send it again, rate-limited. */
    @Test
    void linuxTcpCheckReq_aDuplicateSynInSynReceivedDrawsTheSynAckAgainAtMostOncePerHalfSecond() {
        One o = new One(plain());
        o.c.accept(syn(IRS, 1460, -1, false, false, 0).into(new Segment()), ISS, o.now);
        assertEquals(SYN | ACK, o.onlySent().flags());
        long start = o.now;
        o.advanceTo(start + 100 * MS);
        o.inject(syn(IRS, 1460, -1, false, false, 0));
        Seg again = o.onlySent();
        assertEquals(SYN | ACK, again.flags(), "the SYN-ACK again, at once: " + again);
        assertEquals(ISS, again.seq());
        assertEquals(IRS + 1, again.ack());
        o.advanceTo(start + 300 * MS);
        o.inject(syn(IRS, 1460, -1, false, false, 0));
        assertTrue(o.sent().isEmpty(), "a second duplicate within 500 ms draws nothing");
        o.advanceTo(start + 600 * MS);
        o.inject(syn(IRS, 1460, -1, false, false, 0));
        assertEquals(SYN | ACK, o.onlySent().flags(), "500 ms after the last answer: answered again");
        o.advanceTo(start + 1000 * MS);
        assertEquals(SYN | ACK, o.onlySent().flags(), "the retransmission timer still runs from the first SYN-ACK");
        assertEquals(TcpState.SYN_RECEIVED, o.c.state());
        o.inject(seg(ACK, IRS + 1, ISS + 1, 65_535));
        assertEquals(TcpState.ESTABLISHED, o.c.state());
        assertTrue(o.sent().isEmpty());
    }

    @Test
    void rfc9293_3_5_simultaneousOpenGoesThroughSynReceived() {
        One o = new One(plain());
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(syn(IRS, 1460, -1, false, false, 0));
        Seg synAck = o.onlySent();
        assertEquals(SYN | ACK, synAck.flags());
        assertEquals(ISS, synAck.seq());
        assertEquals(TcpState.SYN_RECEIVED, o.c.state());
        o.inject(seg(SYN | ACK, IRS, ISS + 1, 65_535));
        assertEquals(TcpState.ESTABLISHED, o.c.state());
    }

    @Test
    void rfc9293_3_10_7_3_resetAnsweringOurSynRefusesTheConnection() {
        One o = new One(plain());
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(seg(RST | ACK, 0, ISS + 1, 0));
        assertEquals(TcpState.CLOSED, o.c.state());
        assertEquals(TcpError.REFUSED, o.closedWith);
    }

    @Test
    void rfc9293_3_10_7_3_synAckAcknowledgingTheWrongNumberIsAnsweredWithReset() {
        One o = new One(plain());
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(seg(SYN | ACK, IRS, ISS + 77, 65_535));
        Seg rst = o.onlySent();
        assertEquals(RST, rst.flags());
        assertEquals(ISS + 77, rst.seq());
        assertEquals(TcpState.SYN_SENT, o.c.state());
    }

    @Test
    void rfc6298_synIsRetransmittedWithBackoffThenTheConnectTimesOut() {
        One o = new One(plain().withRetries(2, 15));
        o.c.connect(ISS, o.now);
        o.sent();
        long start = o.now;
        o.advanceTo(start + 999 * MS);
        assertTrue(o.sent().isEmpty(), "initial RTO is 1 s (RFC 6298 2.1)");
        o.advanceTo(start + 1000 * MS);
        assertEquals(SYN, o.onlySent().flags());
        o.advanceTo(start + 2999 * MS);
        assertTrue(o.sent().isEmpty(), "doubled to 2 s (5.5)");
        o.advanceTo(start + 3000 * MS);
        assertEquals(SYN, o.onlySent().flags());
        o.advanceTo(start + 7000 * MS);
        assertEquals(TcpState.CLOSED, o.c.state());
        assertEquals(TcpError.TIMED_OUT, o.closedWith);
    }

    @Test
    void rfc9293_dataIsSentInMssSegmentsAndAcknowledged() {
        One o = established(plain(), 65_535);
        byte[] data = bytes(4000, 2);
        assertEquals(4000, o.write(data));
        List<Seg> out = o.sent();
        assertEquals(3, out.size(), out.toString());
        assertEquals(1460, out.get(0).data().length);
        assertEquals(ISS + 1, out.get(0).seq());
        assertEquals(ISS + 1 + 2920, out.get(2).seq());
        assertTrue(out.get(2).has(PSH), "the last segment of the write is pushed");
        o.inject(seg(ACK, IRS + 1, ISS + 1 + 4000, 65_535));
        assertEquals(0, o.c.unacknowledged());
        // and receiving: in-order data is readable and acknowledged
        o.inject(seg(ACK | PSH, IRS + 1, ISS + 4001, 65_535, bytes(100, 3)));
        Seg ack = o.onlySent();
        assertEquals(IRS + 101, ack.ack());
        assertArrayEquals(bytes(100, 3), o.read(1000));
    }

    @Test
    void rfc1122_4_2_3_2_delayedAckWaitsOrAcksEverySecondSegment() {
        One o = established(plain().withDelayedAck(40 * MS), 65_535);
        o.inject(seg(ACK, IRS + 1, ISS + 1, 65_535, bytes(1460, 1)));
        assertTrue(o.sent().isEmpty(), "the first segment's ACK is delayed");
        o.advance(39 * MS);
        assertTrue(o.sent().isEmpty());
        o.advance(1 * MS);
        assertEquals(IRS + 1461, o.onlySent().ack());
        o.inject(seg(ACK, IRS + 1461, ISS + 1, 65_535, bytes(1460, 2)));
        assertTrue(o.sent().isEmpty());
        o.inject(seg(ACK, IRS + 2921, ISS + 1, 65_535, bytes(1460, 3)));
        assertEquals(IRS + 4381, o.onlySent().ack(), "every second full segment is acked at once");
    }

    @Test
    void rfc9293_3_10_7_4_unacceptableSegmentIsAnsweredWithAnAckAndDropped() {
        One o = established(plain(), 65_535);
        o.inject(seg(ACK, IRS + 1 + 10_000_000, ISS + 1, 65_535, bytes(10, 1)));
        Seg ack = o.onlySent();
        assertEquals(ACK, ack.flags());
        assertEquals(IRS + 1, ack.ack());
        assertEquals(0, o.c.readable());
    }

    @Test
    void rfc5681_4_2_outOfOrderDataIsAckedAtOnceWithSackAndTheHoleFillDeliversAll() {
        TcpConfig cfg = TcpConfig.defaults(1500).withOptions(false, false, true).withDelayedAck(40 * MS);
        One o = new One(cfg);
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(new Seg(SYN | ACK, IRS, ISS + 1, 65_535, 1460, -1, true, false, 0, 0, new int[0], new int[0], new byte[0]));
        o.sent();
        o.inject(seg(ACK, IRS + 1 + 1000, ISS + 1, 65_535, bytes(500, 2)));
        Seg dup = o.onlySent();
        assertEquals(IRS + 1, dup.ack(), "a duplicate ACK for the hole");
        assertArrayEquals(new int[] {IRS + 1001}, dup.sackLeft(), "RFC 2018: the block received");
        assertArrayEquals(new int[] {IRS + 1501}, dup.sackRight());
        o.inject(seg(ACK, IRS + 1, ISS + 1, 65_535, bytes(1000, 1)));
        Seg ack = o.onlySent();
        assertEquals(IRS + 1501, ack.ack(), "the hole filled: everything acknowledged at once");
        assertEquals(0, ack.sackLeft().length);
        byte[] got = o.read(2000);
        assertEquals(1500, got.length);
        assertArrayEquals(bytes(1000, 1), java.util.Arrays.copyOf(got, 1000));
    }

    @Test
    void rfc6298_5_retransmissionTimeoutResendsTheFirstUnacknowledgedSegmentAndBacksOff() {
        One o = established(plain(), 65_535);
        o.write(bytes(1000, 1));
        o.sent();
        long t = o.now;
        o.advanceTo(t + 999 * MS);
        assertTrue(o.sent().isEmpty());
        o.advanceTo(t + 1000 * MS); // no RTT sample yet: RTO 1 s
        Seg again = o.onlySent();
        assertEquals(ISS + 1, again.seq());
        assertEquals(1000, again.data().length);
        o.advanceTo(t + 2999 * MS);
        assertTrue(o.sent().isEmpty(), "backed off to 2 s");
        o.advanceTo(t + 3000 * MS);
        assertEquals(ISS + 1, o.onlySent().seq());
        assertEquals(2, o.c.timeouts());
    }

    @Test
    void rfc5681_3_2_threeDuplicateAcksTriggerFastRetransmitAndRfc6582PartialAckRetransmitsTheNextHole() {
        One o = established(plain(), 65_535);
        o.write(bytes(1460 * 6, 1));
        List<Seg> out = o.sent();
        assertEquals(6, out.size());
        int s0 = ISS + 1;
        o.inject(seg(ACK, IRS + 1, s0, 65_535));
        o.inject(seg(ACK, IRS + 1, s0, 65_535));
        assertTrue(o.sent().isEmpty());
        o.inject(seg(ACK, IRS + 1, s0, 65_535));
        Seg fr = o.onlySent();
        assertEquals(s0, fr.seq(), "fast retransmit of the first unacknowledged segment");
        assertEquals(1, o.c.fastRetransmits());
        // A partial ACK (segments 0 and 1 came, 2 is lost too): RFC 6582 retransmits segment 2 at once.
        o.inject(seg(ACK, IRS + 1, s0 + 2 * 1460, 65_535));
        List<Seg> after = o.sent();
        assertEquals(s0 + 2 * 1460, after.get(0).seq(), after.toString());
        o.inject(seg(ACK, IRS + 1, s0 + 6 * 1460, 65_535));
        assertEquals(0, o.c.unacknowledged());
    }

    @Test
    void pureAckAfterGoingBackCarriesSndMaxSoThePeerCanAcceptIt() {
        // Found by TcpNodeTest: both ends had gone back after a timeout, numbered their ACKs at
        // SND.NXT below what the other had received, and bounced ACKs forever (5 million each way).
        One o = established(plain(), 65_535);
        o.write(bytes(3000, 1));
        o.sent();
        o.advance(1000 * MS); // RTO: back to SND.UNA, the first segment again
        assertEquals(ISS + 1, o.onlySent().seq());
        o.inject(seg(ACK, IRS + 1 + 1_000_000, ISS + 1, 65_535)); // unacceptable: answered with an ACK
        Seg ack = o.onlySent();
        assertEquals(ISS + 1 + 3000, ack.seq(), "the ACK is numbered at SND.MAX, inside the peer's window");
    }

    @Test
    void pureAckToAZeroWindowIsNumberedAtItsEdgeSoThePeerAcceptsIt() {
        // Found by a stalled pipeTo echo: ACKs numbered at SND.MAX, past a peer's zero window, were
        // dropped unread, and with them the acknowledgments that peer waited for.
        One o = established(plain(), 65_535);
        o.write(bytes(3000, 1));
        o.sent();
        o.inject(seg(ACK, IRS + 1, ISS + 1 + 1000, 0)); // 1000 bytes taken, then the window closes
        o.sent();
        o.inject(seg(ACK, IRS + 1 + 1_000_000, ISS + 1 + 1000, 0)); // unacceptable: answered with an ACK
        assertEquals(ISS + 1 + 1000, o.onlySent().seq(), "at SND.UNA + SND.WND, the peer's RCV.NXT");
    }

    @Test
    void rfc9293_3_10_7_4_aZeroReceiveWindowStillAcceptsValidAcks() {
        One o = established(plain().withBuffers(1460, 1460), 65_535);
        o.write(bytes(500, 1));
        o.sent();
        o.inject(seg(ACK, IRS + 1, ISS + 1, 65_535, bytes(1460, 2))); // fills our receive buffer: window 0
        o.sent();
        assertEquals(500, o.c.unacknowledged());
        o.inject(seg(ACK, IRS + 1 + 1460 + 7, ISS + 1 + 500, 65_535)); // not acceptable, but its ACK is valid
        assertEquals(0, o.c.unacknowledged(), "the acknowledgment was taken");
        assertEquals(1460, o.c.readable(), "and no data");
    }

    @Test
    void rfc5961_3_2_resetMustMatchRcvNxtExactlyElseChallengeAck() {
        One o = established(plain(), 65_535);
        o.inject(seg(RST, IRS + 100, 0, 0));
        Seg challenge = o.onlySent();
        assertEquals(ACK, challenge.flags());
        assertEquals(IRS + 1, challenge.ack());
        assertEquals(TcpState.ESTABLISHED, o.c.state());
        assertEquals(1, o.c.challengeAcks());
        o.inject(seg(RST, IRS + 1, 0, 0));
        assertEquals(TcpState.CLOSED, o.c.state());
        assertEquals(TcpError.RESET, o.closedWith);
    }

    @Test
    void rfc5961_4_2_synInASynchronizedStateDrawsAChallengeAck() {
        One o = established(plain(), 65_535);
        o.inject(seg(SYN, IRS + 5, 0, 65_535));
        assertEquals(ACK, o.onlySent().flags());
        assertEquals(TcpState.ESTABLISHED, o.c.state());
    }

    @Test
    void rfc5961_7_challengeAcksAreRateLimited() {
        One o = established(plain(), 65_535);
        for (int i = 0; i < TcpConnection.CHALLENGE_ACKS_PER_SECOND + 50; i++) {
            o.inject(seg(RST, IRS + 100, 0, 0));
        }
        assertEquals(TcpConnection.CHALLENGE_ACKS_PER_SECOND, o.sent().size());
    }

    @Test
    void rfc7323_5_pawsDropsAnOldTimestampAndAcks() {
        One o = new One(TcpConfig.defaults(1500).withOptions(false, true, false).withDelayedAck(0));
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(new Seg(SYN | ACK, IRS, ISS + 1, 65_535, 1460, -1, false, true, 1000, 1, new int[0], new int[0], new byte[0]));
        o.sent();
        o.inject(Wire.withTs(seg(ACK, IRS + 1, ISS + 1, 65_535, bytes(10, 1)), 1005, 1));
        o.sent();
        assertEquals(10, o.c.readable());
        o.inject(Wire.withTs(seg(ACK, IRS + 11, ISS + 1, 65_535, bytes(10, 2)), 900, 1)); // older than TS.Recent
        assertEquals(ACK, o.onlySent().flags());
        assertEquals(10, o.c.readable(), "the segment with an old timestamp was dropped");
        assertEquals(1, o.c.pawsDrops());
    }

    @Test
    void rfc9293_3_8_6_1_zeroWindowIsProbedAndSendingResumesWhenItOpens() {
        One o = established(plain(), 0);
        o.write(bytes(100, 1));
        assertTrue(o.sent().isEmpty(), "nothing fits a zero window");
        o.advance(1000 * MS);
        Seg probe = o.onlySent();
        assertEquals(1, probe.data().length, "one byte probes the window");
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535));
        Seg rest = o.onlySent();
        assertEquals(99, rest.data().length);
        assertEquals(ISS + 2, rest.seq());
    }

    /**
     * RFC 9293 3.8.6.1: "the transmitting host SHOULD send the first zero-window probe when a zero window has
     * existed for the retransmission timeout period, and SHOULD increase exponentially the interval between
     * successive probes" (MUST-35, MUST-36); Linux caps the interval at the greatest RTO (tcp_probe_timer).
     */
    @Test
    void rfc9293_3_8_6_1_zeroWindowProbesBackOffExponentiallyUpToTheGreatestRto() {
        TcpConfig config = plain().withRetries(6, 1_000);
        One o = established(config, 0);
        long start = o.now;
        o.write(bytes(100, 1));
        assertTrue(o.sent().isEmpty(), "nothing fits a zero window");
        List<Long> probes = new ArrayList<>();
        long end = start + 1_000_000 * MS;
        while (o.deadline <= end && probes.size() < 8) {
            o.advanceTo(o.deadline);
            for (Seg s : o.sent()) {
                assertEquals(1, s.data().length, "only one-byte probes go to a zero window: " + s);
                probes.add(o.now);
            }
        }
        assertEquals(8, probes.size(), "probes at " + probes);
        assertEquals(1_000 * MS, probes.get(0) - start, "the first probe after one RTO (1 s, RFC 6298 2.1)");
        long gap = probes.get(0) - start;
        for (int i = 1; i < probes.size(); i++) {
            long next = probes.get(i) - probes.get(i - 1);
            assertTrue(next >= Math.min(2 * gap, config.maxRtoNs()) && next <= config.maxRtoNs(),
                    "probe " + i + " came " + next / MS + " ms after the one before, which came " + gap / MS
                            + " ms after its own: " + probes);
            gap = next;
        }
        assertEquals(config.maxRtoNs(), gap, "the interval stops growing at the greatest RTO");
    }

    @Test
    void rfc9293_3_6_activeCloseGoesThroughFinWait2AndTimeWaitThenCloses() {
        One o = established(plain().withTimeWait(60_000 * MS), 65_535);
        o.c.shutdownOutput(o.now); // half-close: this end still reads (after close() new data draws a reset, RFC 1122 4.2.2.13)
        Seg fin = o.onlySent();
        assertEquals(FIN | ACK, fin.flags());
        assertEquals(TcpState.FIN_WAIT_1, o.c.state());
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535));
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        // half-close: the peer may still send
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535, bytes(5, 1)));
        o.sent();
        assertEquals(5, o.c.readable());
        o.inject(seg(FIN | ACK, IRS + 6, ISS + 2, 65_535));
        assertEquals(IRS + 7, o.onlySent().ack());
        assertEquals(TcpState.TIME_WAIT, o.c.state());
        assertTrue(o.peerClosed);
        // a retransmitted FIN in TIME-WAIT is acked again
        o.inject(seg(FIN | ACK, IRS + 6, ISS + 2, 65_535));
        assertEquals(ACK, o.onlySent().flags());
        o.advance(60_000 * MS);
        assertEquals(TcpState.CLOSED, o.c.state());
        assertNull(o.closedWith);
    }

    @Test
    void linuxFinTimeout_aFullyClosedConnectionLeftInFinWait2IsResetAfterTheTimeout() {
        One o = established(plain().withFinWait2Timeout(60_000 * MS), 65_535);
        o.c.close(o.now);
        assertEquals(FIN | ACK, o.onlySent().flags());
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535)); // our FIN acknowledged; the peer stays in CLOSE-WAIT
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        long t = o.now;
        o.advanceTo(t + 60_000 * MS - 1);
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        assertTrue(o.sent().isEmpty());
        o.advanceTo(t + 60_000 * MS);
        Seg rst = o.onlySent();
        assertEquals(RST, rst.flags(), "the peer learns the connection is gone");
        assertEquals(ISS + 2, rst.seq(), "at SND.NXT, past our FIN: the peer's RCV.NXT");
        assertEquals(TcpState.CLOSED, o.c.state());
        assertEquals(TcpError.FIN_WAIT_2_TIMEOUT, o.closedWith);
    }

    @Test
    void rfc9293_3_6_aHalfClosedConnectionThatStillReadsWaitsInFinWait2ForEver() {
        One o = established(plain().withFinWait2Timeout(60_000 * MS), 65_535);
        o.c.shutdownOutput(o.now);
        o.sent();
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535));
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        o.advance(3_600_000 * MS); // an hour: no timer runs
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        assertTrue(o.sent().isEmpty());
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535, bytes(7, 1))); // the peer still sends, and we read
        assertEquals(IRS + 8, o.onlySent().ack());
        assertArrayEquals(bytes(7, 1), o.read(100));
        o.inject(seg(FIN | ACK, IRS + 8, ISS + 2, 65_535));
        assertEquals(TcpState.TIME_WAIT, o.c.state());
        assertNull(o.closedWith);
    }

    @Test
    void linuxFinTimeout_closeAfterAHalfCloseStartsTheFinWait2TimerThen() {
        One o = established(plain().withFinWait2Timeout(60_000 * MS), 65_535);
        o.c.shutdownOutput(o.now);
        o.sent();
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535));
        o.advance(100_000 * MS);
        long closedAt = o.now;
        o.c.close(o.now); // the application is done with reading too
        o.deadline = o.c.deadline();
        assertEquals(closedAt + 60_000 * MS, o.deadline, "the wait counts from close()");
        o.advanceTo(closedAt + 60_000 * MS - 1);
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        o.advanceTo(closedAt + 60_000 * MS);
        assertEquals(RST, o.onlySent().flags());
        assertEquals(TcpError.FIN_WAIT_2_TIMEOUT, o.closedWith);
    }

    @Test
    void linuxFinTimeout_zeroWaitsForEverAndANegativeTimeoutIsRefusedWithTheRemedy() {
        One o = established(plain().withFinWait2Timeout(0), 65_535);
        o.c.close(o.now);
        o.sent();
        o.inject(seg(ACK, IRS + 1, ISS + 2, 65_535));
        o.advance(3_600_000 * MS);
        assertEquals(TcpState.FIN_WAIT_2, o.c.state());
        assertEquals(60_000 * MS, TcpConfig.defaults(1500).finWait2TimeoutNs(), "Linux's tcp_fin_timeout");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> plain().withFinWait2Timeout(-1));
        assertTrue(e.getMessage().contains("finWait2TimeoutNs is -1") && e.getMessage().contains("0 (wait"),
                e.getMessage());
    }

    @Test
    void rfc9293_3_6_passiveCloseGoesThroughCloseWaitAndLastAck() {
        One o = established(plain(), 65_535);
        o.inject(seg(FIN | ACK, IRS + 1, ISS + 1, 65_535));
        o.sent();
        assertEquals(TcpState.CLOSE_WAIT, o.c.state());
        o.write(bytes(10, 1)); // may still send
        o.c.close(o.now);
        List<Seg> out = o.sent();
        Seg last = out.get(out.size() - 1);
        assertTrue(last.has(FIN), out.toString());
        assertEquals(TcpState.LAST_ACK, o.c.state());
        o.inject(seg(ACK, IRS + 2, ISS + 12, 65_535));
        assertEquals(TcpState.CLOSED, o.c.state());
        assertNull(o.closedWith);
    }

    @Test
    void rfc9293_3_6_simultaneousCloseGoesThroughClosing() {
        One o = established(plain(), 65_535);
        o.c.close(o.now);
        o.sent();
        o.inject(seg(FIN | ACK, IRS + 1, ISS + 1, 65_535)); // their FIN, not acking ours
        assertEquals(TcpState.CLOSING, o.c.state());
        o.sent();
        o.inject(seg(ACK, IRS + 2, ISS + 2, 65_535));
        assertEquals(TcpState.TIME_WAIT, o.c.state());
    }

    @Test
    void rfc1122_4_2_3_6_keepAliveProbesThenDropsAnUnansweringPeer() {
        One o = established(plain().withKeepAlive(7200_000 * MS, 75_000 * MS, 3), 65_535);
        o.advance(7200_000 * MS);
        Seg probe = o.onlySent();
        assertEquals(ISS, probe.seq(), "SEG.SEQ = SND.NXT - 1, no data");
        o.advance(75_000 * MS);
        o.advance(75_000 * MS);
        assertEquals(2, o.sent().size());
        o.advance(75_000 * MS);
        assertEquals(TcpState.CLOSED, o.c.state());
        assertEquals(TcpError.KEEPALIVE, o.closedWith);
    }

    @Test
    void rfc5482_userTimeoutDropsTheConnection() {
        One o = established(plain().withUserTimeout(5_000 * MS), 65_535);
        o.write(bytes(10, 1));
        o.advance(5_000 * MS);
        assertEquals(TcpState.CLOSED, o.c.state());
        assertEquals(TcpError.USER_TIMEOUT, o.closedWith);
    }

    @Test
    void misuseThrowsWithTheReason() {
        One o = established(plain(), 65_535);
        o.c.close(o.now);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> o.write(bytes(1, 1)));
        assertTrue(e.getMessage().contains("after close() or shutdownOutput()"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> o.c.connect(1, o.now));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> plain().withCongestionControl("vegas")).getMessage()
                .contains("choose newreno or cubic"));
    }
}
