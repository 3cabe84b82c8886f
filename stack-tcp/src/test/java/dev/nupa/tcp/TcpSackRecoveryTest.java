package dev.nupa.tcp;

import static dev.nupa.tcp.Segment.ACK;
import static dev.nupa.tcp.Segment.SYN;
import static dev.nupa.tcp.Wire.MS;
import static dev.nupa.tcp.Wire.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.nupa.tcp.Wire.One;
import dev.nupa.tcp.Wire.Seg;

/**
 * RFC 6675 conservative SACK-based loss recovery, scripted on virtual time as in
 * {@link TcpConnectionTest}: each test injects ACKs that SACK chosen segments and checks exactly
 * which segments come out. The sender has SMSS 1460 (no timestamps), IW 10 segments, NewReno (so
 * entering recovery sets cwnd = ssthresh = FlightSize / 2 = 7300), and a peer window of 65535.
 * Segment k is the 1460 bytes at {@code seg(k)}.
 */
class TcpSackRecoveryTest {
    static final int ISS = TcpConnectionTest.ISS;
    static final int IRS = TcpConnectionTest.IRS;
    static final int MSS = 1460;

    static TcpConfig sackConfig() {
        return TcpConfig.defaults(1500).withOptions(false, false, true).withDelayedAck(0).withNoDelay(true)
                .withCongestionControl("newreno");
    }

    /** Established with SACK agreed; the SYN-ACK offered 65535 and MSS 1460. */
    static One established() {
        One o = new One(sackConfig());
        o.c.connect(ISS, o.now);
        o.sent();
        o.inject(new Seg(SYN | ACK, IRS, ISS + 1, 65_535, MSS, -1, true, false, 0, 0, new int[0], new int[0], new byte[0]));
        o.sent();
        return o;
    }

    /** The first sequence number of segment {@code k}. */
    static int seg(int k) {
        return ISS + 1 + k * MSS;
    }

    /** An ACK of {@code ack} whose SACK blocks are whole segments: pairs {@code [from, to)} of segment numbers. */
    static Seg sackAck(int ack, int... segments) {
        int[] edges = new int[segments.length];
        for (int i = 0; i < segments.length; i++) {
            edges[i] = seg(segments[i]);
        }
        return Wire.withSack(Wire.seg(ACK, IRS + 1, ack, 65_535), edges);
    }

    /** Writes {@code n} segments of data and checks how many left at once. */
    static void writeSegments(One o, int n, int expectSent) {
        o.write(bytes(n * MSS, 7));
        assertEquals(expectSent, o.sent().size(), "segments sent by the write");
    }

    static List<Integer> seqs(List<Seg> out) {
        List<Integer> l = new ArrayList<>();
        for (Seg s : out) {
            assertEquals(MSS, s.data().length, "whole segments: " + out);
            l.add(s.seq());
        }
        return l;
    }

    @Test
    void rfc6675_isLost_threeSegmentsSackedAboveTheFirstHoleEnterRecoveryOnTheFirstDuplicateAck() {
        One o = established();
        writeSegments(o, 10, 10);
        // One ACK SACKs segments 1-3: more than (DupThresh - 1) * SMSS above HighACK + 1, so
        // IsLost(HighACK + 1) holds with DupAcks at 1 (RFC 6675 section 5 step (2)).
        o.inject(sackAck(seg(0), 1, 4));
        Seg fr = o.onlySent();
        assertEquals(seg(0), fr.seq(), "(4.3): the segment at HighACK + 1");
        assertEquals(MSS, fr.data().length);
        assertEquals(1, o.c.fastRetransmits());
        assertTrue(o.c.congestionControl().inRecovery());
        assertEquals(7300, o.c.congestionControl().cwnd(), "(4.2): cwnd = ssthresh = FlightSize / 2");
    }

    @Test
    void rfc6675_isLost_twoSegmentsSackedAboveAreNotYetALoss() {
        One o = established();
        writeSegments(o, 10, 10);
        o.inject(sackAck(seg(0), 1, 3)); // 2 * SMSS: not more than (DupThresh - 1) * SMSS, and one range
        assertTrue(o.sent().isEmpty(), "no retransmission");
        assertEquals(0, o.c.fastRetransmits());
        assertFalse(o.c.congestionControl().inRecovery());
    }

    @Test
    void rfc6675_isLost_threeDiscontiguousSackedRangesAboveAreALossWhateverTheirSize() {
        One o = established();
        for (int i = 0; i < 10; i++) {
            o.write(bytes(100, i)); // ten 100-byte segments (no Nagle)
        }
        assertEquals(10, o.sent().size());
        int s = ISS + 1;
        // Three ranges of 100 octets above the first hole: 300 octets are far below 2 * SMSS.
        o.inject(Wire.withSack(Wire.seg(ACK, IRS + 1, s, 65_535), s + 100, s + 200, s + 300, s + 400, s + 500, s + 600));
        List<Seg> out = o.sent();
        assertEquals(s, out.get(0).seq(), "fast retransmit of the first hole: " + out);
        assertEquals(100, out.get(0).data().length, "up to the first SACKed octet");
        assertEquals(1, o.c.fastRetransmits());
        // cwnd is 2 * SMSS (the least ssthresh), pipe 700: the holes not lost yet follow by rule 3.
        assertEquals(3, out.size(), out.toString());
        assertEquals(s + 200, out.get(1).seq());
        assertEquals(s + 400, out.get(2).seq());
    }

    @Test
    void rfc6675_5_step1_dupThreshDuplicateAcksEnterRecoveryWhenSmallSegmentsKeepIsLostFalse() {
        One o = established();
        for (int i = 0; i < 5; i++) {
            o.write(bytes(100, i)); // 100-byte segments (no Nagle)
        }
        assertEquals(5, o.sent().size());
        int s = ISS + 1;
        o.inject(Wire.withSack(Wire.seg(ACK, IRS + 1, s, 65_535), s + 100, s + 200));
        o.inject(Wire.withSack(Wire.seg(ACK, IRS + 1, s, 65_535), s + 100, s + 300));
        assertTrue(o.sent().isEmpty(), "two duplicate ACKs, one range of 200 octets: no loss yet");
        o.inject(Wire.withSack(Wire.seg(ACK, IRS + 1, s, 65_535), s + 100, s + 400));
        Seg fr = o.onlySent();
        assertEquals(s, fr.seq(), "DupAcks reached DupThresh: step (1) goes to (4) though IsLost is false");
        assertEquals(100, fr.data().length);
    }

    @Test
    void rfc6675_2_anAckRepeatingKnownSackInformationIsNoDuplicate() {
        One o = established();
        writeSegments(o, 10, 10);
        for (int i = 0; i < 5; i++) {
            o.inject(sackAck(seg(0), 1, 2)); // RFC 5681 would count five duplicates; RFC 6675 counts one
        }
        assertTrue(o.sent().isEmpty());
        assertEquals(0, o.c.fastRetransmits());
        o.inject(sackAck(seg(0), 1, 3));
        o.inject(sackAck(seg(0), 1, 3, 4, 5)); // the third ACK with new SACK information
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        assertEquals(1, o.c.fastRetransmits());
    }

    @Test
    void rfc6675_3_limitedTransmitSendsNewDataAsSackedSegmentsLeaveThePipeAndStaysOutOfFlightSize() {
        One o = established();
        writeSegments(o, 14, 10);
        o.inject(sackAck(seg(0), 1, 2));
        assertEquals(List.of(seg(10)), seqs(o.sent()), "(3.3): pipe fell by one segment: one new segment");
        o.inject(sackAck(seg(0), 1, 3));
        assertEquals(List.of(seg(11)), seqs(o.sent()));
        o.inject(sackAck(seg(0), 1, 4));
        assertEquals(List.of(seg(0)), seqs(o.sent()), "IsLost: recovery");
        // FlightSize 12 segments, less the 2 of limited transmit (4.2): cwnd 7300, not 8760.
        assertEquals(7300, o.c.congestionControl().cwnd());
    }

    @Test
    void rfc6675_setPipe_unsackedOctetsCountOnceUnlessLostAndRetransmittedOctetsOnceMore() {
        One o = established();
        writeSegments(o, 10, 10);
        // Segments 2, 4 and 6 SACKed: three ranges above segments 0-1, so those are lost; 3, 5 and 7-9 are not.
        o.inject(sackAck(seg(0), 2, 3, 4, 5, 6, 7));
        assertEquals(List.of(seg(0)), seqs(o.sent()), "(4.3)");
        // pipe: segment 0 lost but retransmitted (1), segment 1 lost (0), 3 (1), 5 (1), 7-9 (3).
        assertEquals(6 * MSS, o.c.pipe());
        // Segment 8 SACKed: four ranges; 3 now has three ranges above it and is lost; 5 has two ranges
        // and exactly 2 * SMSS above it, not more, so it is not.
        o.inject(sackAck(seg(0), 2, 3, 4, 5, 6, 7, 8, 9));
        // Before sending: 0 (1), 1 (0), 3 (0), 5 (1), 7 (1), 9 (1) = 4 segments; cwnd 5: one more
        // segment (rule 1: segment 1), which counts once as lost-and-retransmitted.
        assertEquals(List.of(seg(1)), seqs(o.sent()));
        assertEquals(5 * MSS, o.c.pipe());
    }

    @Test
    void rfc6675_nextSegRule1_retransmitsLostHolesInOrderAboveHighRxtWhileCwndLeavesRoom() {
        One o = established();
        writeSegments(o, 10, 10);
        o.inject(sackAck(seg(0), 2, 3, 4, 5, 6, 7));
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        o.inject(sackAck(seg(0), 2, 3, 4, 5, 6, 7, 8, 9));
        assertEquals(List.of(seg(1)), seqs(o.sent()));
        // Segment 9 SACKed: 5 now has 3 * SMSS SACKed above it and is lost too. pipe = 0, 1 (1 each,
        // retransmitted), 7 (1) = 3 segments: two more, the lost holes above HighRxt, in order.
        o.inject(sackAck(seg(0), 2, 3, 4, 5, 6, 7, 8, 10));
        assertEquals(List.of(seg(3), seg(5)), seqs(o.sent()));
        assertEquals(5 * MSS, o.c.pipe());
        // Segment 7 SACKed: pipe 4 segments leaves room, but every hole lies below HighRxt now, and
        // nothing there is sent again.
        o.inject(sackAck(seg(0), 2, 3, 4, 5, 6, 10));
        assertEquals(4 * MSS, o.c.pipe());
        assertTrue(o.sent().isEmpty());
    }

    @Test
    void rfc6675_nextSegRule2_sendsNewDataBeforeAHoleThatIsNotLostYet() {
        One o = established();
        writeSegments(o, 20, 10); // 10 segments wait in the send buffer
        o.inject(sackAck(seg(0), 1, 4));
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        o.inject(sackAck(seg(0), 1, 5));
        o.inject(sackAck(seg(0), 1, 5, 6, 7));
        assertTrue(o.sent().isEmpty(), "pipe 8760 then 7300: no room");
        // Segment 7 SACKed: pipe 5840, room for one segment. Hole 5 has 2 * SMSS SACKed above it:
        // not lost, so no rule 1; rule 2 sends new data first.
        o.inject(sackAck(seg(0), 1, 5, 6, 8));
        assertEquals(List.of(seg(10)), seqs(o.sent()));
        // Segment 8 SACKed: hole 5 is lost now; pipe 4380 leaves room for two: rule 1, then rule 2.
        o.inject(sackAck(seg(0), 1, 5, 6, 9));
        assertEquals(List.of(seg(5), seg(11)), seqs(o.sent()));
    }

    @Test
    void rfc6675_nextSegRule3_retransmitsAHoleNotYetLostWhenNoNewDataWaits() {
        One o = established();
        writeSegments(o, 10, 10); // nothing beyond: rule 2 has nothing to send
        o.inject(sackAck(seg(0), 1, 4));
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        o.inject(sackAck(seg(0), 1, 5));
        o.inject(sackAck(seg(0), 1, 5, 6, 7));
        assertTrue(o.sent().isEmpty());
        o.inject(sackAck(seg(0), 1, 5, 6, 8));
        assertEquals(List.of(seg(5)), seqs(o.sent()), "rule 3: hole 5 is not lost, but nothing else may go");
        // Hole 5 is lost now, but it lies below HighRxt: not sent again; nothing else qualifies.
        o.inject(sackAck(seg(0), 1, 5, 6, 9));
        assertTrue(o.sent().isEmpty());
    }

    @Test
    void rfc6675_nextSegRule4_rescuesTheTailOncePerRecoveryAfterHighAckPassedRescueRxt() {
        One o = established();
        writeSegments(o, 10, 10); // segments 0 and 9 are lost
        o.inject(sackAck(seg(0), 1, 4));
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        o.inject(sackAck(seg(0), 1, 9));
        assertTrue(o.sent().isEmpty(), "room, but HighACK has not passed RescueRxt (the end of segment 0)");
        // The retransmitted segment 0 arrives: a partial ACK up to the lost tail, with nothing SACKed
        // above it. Rules 1-3 find nothing; rule 4 sends the highest unSACKed segment.
        o.inject(Wire.seg(ACK, IRS + 1, seg(9), 65_535));
        assertEquals(List.of(seg(9)), seqs(o.sent()));
        assertTrue(o.c.congestionControl().inRecovery(), "a partial ACK: still in recovery");
        o.inject(Wire.seg(ACK, IRS + 1, seg(9), 65_535));
        assertTrue(o.sent().isEmpty(), "RescueRxt = RecoveryPoint: one rescue per recovery");
        o.inject(Wire.seg(ACK, IRS + 1, seg(10), 65_535));
        assertFalse(o.c.congestionControl().inRecovery());
    }

    @Test
    void rfc6675_C_transmissionIsLimitedByPipeOneSegmentPerSegmentThatLeftNoBurst() {
        One o = established();
        writeSegments(o, 30, 10);
        List<Integer> perAck = new ArrayList<>();
        for (int top = 2; top <= 12; top++) {
            o.inject(sackAck(seg(0), 1, top)); // each ACK SACKs one more segment
            perAck.add(o.sent().size());
        }
        // Limited transmit 1, 1; recovery at the third (fast retransmit only: pipe 13140 > cwnd
        // 7300); then nothing until pipe falls below cwnd - SMSS, and from there one per ACK.
        assertEquals(List.of(1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1), perAck);
        assertEquals(7300, o.c.congestionControl().cwnd());
    }

    @Test
    void rfc6675_A_recoveryEndsWhenTheCumulativeAckCoversRecoveryPointNotBefore() {
        One o = established();
        writeSegments(o, 10, 10); // segments 0 and 4 are lost; RecoveryPoint: the end of segment 9
        o.inject(sackAck(seg(0), 1, 4));
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        o.inject(sackAck(seg(4), 5, 10)); // segment 0 arrived: a partial ACK; hole 4 is lost
        assertEquals(List.of(seg(4)), seqs(o.sent()), "rule 1");
        assertTrue(o.c.congestionControl().inRecovery());
        assertEquals(7300, o.c.congestionControl().cwnd(), "cwnd does not grow in recovery");
        o.inject(Wire.seg(ACK, IRS + 1, seg(10), 65_535));
        assertFalse(o.c.congestionControl().inRecovery(), "the ACK of RecoveryPoint ends recovery");
        assertEquals(7300, o.c.congestionControl().cwnd());
        assertEquals(0, o.c.unacknowledged());
    }

    @Test
    void rfc6675_5_1_afterATimeoutTheScoreboardStaysAndOnlyTheHolesAreSentAgain() {
        One o = established();
        writeSegments(o, 10, 10); // segments 0 and 4 are lost, and so are their fast retransmissions
        o.inject(sackAck(seg(0), 1, 4));
        o.inject(sackAck(seg(0), 1, 4, 5, 10));
        assertEquals(List.of(seg(0), seg(4)), seqs(o.sent()));
        o.advance(1000 * MS); // RTO (1 s: no RTT sample yet)
        assertEquals(List.of(seg(0)), seqs(o.sent()), "cwnd is one segment after the timeout");
        assertEquals(1, o.c.timeouts());
        assertFalse(o.c.congestionControl().inRecovery(), "5.1: the timeout ends recovery");
        // Segment 0 arrives: its ACK still SACKs 5-9. Going back, only hole 4 is sent; 5-9 are skipped.
        o.inject(sackAck(seg(4), 5, 10));
        assertEquals(List.of(seg(4)), seqs(o.sent()));
        o.inject(Wire.seg(ACK, IRS + 1, seg(10), 65_535));
        assertEquals(0, o.c.unacknowledged());
        assertEquals(1, o.c.timeouts());
    }

    @Test
    void rfc6675_5_1_noNewRecoveryBeforeTheAckReachesTheRecoveryPointOfTheTimeout() {
        One o = established();
        writeSegments(o, 10, 10);
        o.advance(1000 * MS); // no ACK at all: RTO; RecoveryPoint = HighData
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        // ACKs of the first flight come late, SACKing 1, 2 and 3: DupThresh duplicates and IsLost,
        // but HighACK is below RecoveryPoint, so no fast retransmit (and cwnd holds one segment).
        o.inject(sackAck(seg(0), 1, 2));
        o.inject(sackAck(seg(0), 1, 3));
        o.inject(sackAck(seg(0), 1, 4));
        assertTrue(o.sent().isEmpty(), "no recovery");
        assertEquals(0, o.c.fastRetransmits());
        assertFalse(o.c.congestionControl().inRecovery());
    }

    @Test
    void rfc2018_8_aPeerThatRenegesOnItsSackIsCaughtAndTheDataSentAgain() {
        One o = established();
        writeSegments(o, 10, 10); // segment 0 is lost, then its fast retransmission
        o.inject(sackAck(seg(0), 1, 10));
        assertEquals(List.of(seg(0)), seqs(o.sent()));
        o.advance(1000 * MS);
        assertEquals(List.of(seg(0)), seqs(o.sent()), "RTO: segment 0 again; 1-9 were SACKed");
        // The peer acknowledges segment 0 only: it dropped 1-9, which it had SACKed. The scoreboard
        // goes, and so does the wait for another timeout: segment 1 leaves at once.
        o.inject(Wire.seg(ACK, IRS + 1, seg(1), 65_535));
        assertEquals(List.of(seg(1)), seqs(o.sent()));
        assertEquals(2, o.c.timeouts());
    }
}
