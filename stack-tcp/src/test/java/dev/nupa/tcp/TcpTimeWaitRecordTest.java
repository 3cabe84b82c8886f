package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tcp.LayerWire.Got;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpRepr;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A connection that waits in TIME-WAIT after its application closed it goes on waiting as a record of its
 * layer (its object is reused) and answers as the connection would (RFC 9293 3.10.7.4, RFC 5961, RFC 1122
 * 4.2.2.13), scripted against a raw peer in the manner of packetdrill.
 */
class TcpTimeWaitRecordTest {
    static final int PORT = 7000;
    static final int PEER_PORT = 40_000;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0).withNoDelay(true)
            .withTimeWait(1_000 * LayerWire.MS);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();
    private TcpLayer layer;
    private LayerWire.Raw peer;
    /** The layer's initial sequence number. */
    private int iss;

    @BeforeEach
    void waitInTimeWait() {
        layer = wire.tcp(0, CONFIG);
        layer.listen(PORT, 8, CONFIG, accepted::add);
        peer = wire.raw(1);
        send(1000, 0, TcpHeader.SYN);
        iss = peer.only().h().sequenceNumber();
        send(1001, iss + 1, TcpHeader.ACK);
        TcpConnection c = accepted.get(0);
        c.close(wire.now); // the layer closes first, so it is the end that waits
        wire.pump();
        Got fin = peer.only();
        assertTrue(fin.has(TcpHeader.FIN), "FIN: " + fin);
        send(1001, iss + 2, TcpHeader.FIN | TcpHeader.ACK);
        assertAck(peer.only());
        assertEquals(TcpState.CLOSED, c.state(), "the connection object closed and was let go");
        assertEquals(Map.of(TcpState.TIME_WAIT, 1), layer.states());
        assertEquals(1, layer.connections());
        assertEquals(1, layer.counter(TcpCounter.TIME_WAIT_RECORDS));
    }

    @AfterEach
    void close() {
        wire.close();
    }

    private void send(int seq, int ack, int flags) {
        send(seq, ack, flags, new byte[0]);
    }

    private void send(int seq, int ack, int flags, byte[] data) {
        peer.send(LayerWire.ip(0), new TcpRepr(PEER_PORT, PORT, seq, ack, flags, 65_535), data);
    }

    /** <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>: after our FIN and theirs. */
    private void assertAck(Got g) {
        assertEquals(TcpHeader.ACK, g.h().flags(), "an ACK alone: " + g);
        assertEquals(iss + 2, g.h().sequenceNumber());
        assertEquals(1002, g.h().acknowledgmentNumber());
    }

    @Test
    void aRetransmittedFinIsAcknowledgedAndTheWaitStartsAgainThenEnds() {
        wire.advance(600 * LayerWire.MS);
        send(1001, iss + 2, TcpHeader.FIN | TcpHeader.ACK);
        assertAck(peer.only());
        wire.advance(600 * LayerWire.MS); // 1.2 s after the first FIN, 0.6 s after the second
        assertEquals(Map.of(TcpState.TIME_WAIT, 1), layer.states(), "the wait started again");
        wire.advance(500 * LayerWire.MS);
        assertEquals(Map.of(), layer.states(), "the wait ended");
        assertEquals(0, layer.connections());
        send(1002, iss + 2, TcpHeader.ACK);
        assertEquals(TcpHeader.RST, peer.only().h().flags(), "no connection any more: a reset");
    }

    @Test
    void theAckOfOurFinDrawsNothingAndOtherSegmentsDrawAnAck() {
        send(1002, iss + 2, TcpHeader.ACK);
        assertEquals(List.of(), peer.take());
        send(1002, iss + 2, TcpHeader.ACK | TcpHeader.PSH, new byte[] {1, 2, 3});
        assertAck(peer.only());
        send(900, iss + 2, TcpHeader.ACK, new byte[] {4}); // an old duplicate
        assertAck(peer.only());
        assertEquals(Map.of(TcpState.TIME_WAIT, 1), layer.states());
    }

    @Test
    void aResetInTheWindowDrawsAChallengeAckAndOneThatMatchesEndsTheWaitQuietly() {
        send(1005, 0, TcpHeader.RST);
        assertAck(peer.only()); // RFC 5961 3.2
        assertEquals(Map.of(TcpState.TIME_WAIT, 1), layer.states());
        send(1002, 0, TcpHeader.RST);
        assertEquals(List.of(), peer.take());
        assertEquals(Map.of(), layer.states());
    }

    @Test
    void aSynAboveTheOldSequenceOpensANewConnectionAndAnOldOneDrawsAnAck() {
        send(500, 0, TcpHeader.SYN); // below RCV.NXT: a duplicate of the old connection's
        assertAck(peer.only()); // RFC 5961 4.2
        send(50_000, 0, TcpHeader.SYN); // RFC 1122 4.2.2.13: above RCV.NXT, a new incarnation
        Got synAck = peer.only();
        assertEquals(TcpHeader.SYN | TcpHeader.ACK, synAck.h().flags());
        assertEquals(50_001, synAck.h().acknowledgmentNumber());
        assertEquals(1, layer.counter(TcpCounter.TIME_WAIT_REOPENED));
        send(50_001, synAck.h().sequenceNumber() + 1, TcpHeader.ACK);
        assertEquals(2, accepted.size());
        assertEquals(TcpState.ESTABLISHED, accepted.get(1).state());
        assertEquals(Map.of(TcpState.ESTABLISHED, 1), layer.states());
    }
}
