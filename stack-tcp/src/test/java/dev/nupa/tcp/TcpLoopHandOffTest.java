package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tcp.LayerWire.Got;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpRepr;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node whose two event loops share one address (fabric nodes 0, the primary, and 2; the peer is node 1):
 * a connection the primary accepted moves to the other loop, the primary hands on the segments its peer
 * still sends there, the loop answers from its own fabric node, and a peer that is a TCP layer learns that
 * node and sends there directly. Connections the other loop opens take ports of its share, by which the
 * primary hands their segments on.
 */
class TcpLoopHandOffTest {
    static final int NODES = 2;
    static final int PORT = 7000;
    static final int PEER_PORT = 40_000;
    static final int LOOP_NODE = 2;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0).withNoDelay(true)
            .withTimeWait(1_000 * LayerWire.MS);

    private final LayerWire wire = new LayerWire(NODES, true, 2);
    private final List<TcpConnection> accepted = new ArrayList<>();
    private final TcpLayer primary = wire.tcp(0, CONFIG);
    private final TcpLayer loop1 = wire.loopTcp(NODES, 1, primary);

    @AfterEach
    void close() {
        wire.close();
    }

    private static void send(LayerWire.Raw peer, int seq, int ack, int flags, byte[] data) {
        peer.send(LayerWire.ip(0), new TcpRepr(PEER_PORT, PORT, seq, ack, flags, 65_535), data);
    }

    @Test
    void anAcceptedConnectionMovesAndTheSegmentsThatReachThePrimaryAreHandedOn() {
        primary.listen(PORT, 8, CONFIG, accepted::add);
        LayerWire.Raw peer = wire.raw(1);
        send(peer, 1000, 0, TcpHeader.SYN, new byte[0]);
        Got synAck = peer.only();
        assertEquals(0, synAck.fromNode(), "the primary answers the SYN");
        int iss = synAck.h().sequenceNumber();
        send(peer, 1001, iss + 1, TcpHeader.ACK, new byte[0]);
        TcpConnection c = accepted.getFirst();

        primary.handOff(c, loop1);
        assertEquals(Map.of(), primary.states(), "the connection left the primary");
        send(peer, 1001, iss + 1, TcpHeader.ACK | TcpHeader.PSH, "hello".getBytes());
        assertEquals(5, c.readable(), "the other loop took it in and received the bytes the primary handed on");
        Got ack = peer.only();
        assertEquals(LOOP_NODE, ack.fromNode(), "the loop answers from its own fabric node");
        assertEquals(1006, ack.h().acknowledgmentNumber());
        assertEquals(1, primary.counter(TcpCounter.CONNECTIONS_MOVED_OUT));
        assertEquals(1, loop1.counter(TcpCounter.CONNECTIONS_MOVED_IN));
        assertEquals(1, primary.counter(TcpCounter.SEGMENTS_HANDED_ON));
        assertEquals(Map.of(TcpState.ESTABLISHED, 1), loop1.states());

        c.read(MemorySegment.ofArray(new byte[5]), 0, 5, wire.now);
        c.close(wire.now);
        wire.pump();
        Got fin = peer.only();
        assertTrue(fin.has(TcpHeader.FIN) && fin.fromNode() == LOOP_NODE, "its FIN leaves from the loop: " + fin);
        send(peer, 1006, iss + 2, TcpHeader.FIN | TcpHeader.ACK, new byte[0]);
        assertEquals(iss + 2, peer.only().h().sequenceNumber(), "the loop acknowledged the FIN handed on to it");
        assertEquals(Map.of(TcpState.TIME_WAIT, 1), loop1.states(), "it waits on the loop that had it");
        assertEquals(2, primary.counter(TcpCounter.SEGMENTS_HANDED_ON));
        send(peer, 1007, iss + 2, TcpHeader.ACK, new byte[0]);
        assertEquals(2, primary.counter(TcpCounter.SEGMENTS_HANDED_ON),
                "once the connection left the loop's table, the primary no longer hands its four-tuple on");
    }

    @Test
    void aConnectionTheOtherLoopOpensTakesAPortOfItsShareAndItsPeersAnswersAreHandedOn() {
        LayerWire.Raw peer = wire.raw(1);
        TcpConnection c = loop1.connect(LayerWire.ip(1), 80, CONFIG, null, wire.now);
        wire.pump();
        Got syn = peer.only();
        assertEquals(LOOP_NODE, syn.fromNode());
        int port = syn.h().sourcePort();
        assertEquals(1, wire.loopStack(NODES, 1).loopGroup().ephemeralOwner(port), "port " + port + " is of loop 1's share");
        // The raw peer answers the address, which the neighbor directory resolves to the primary.
        peer.send(LayerWire.ip(0), new TcpRepr(80, port, 5000, syn.h().sequenceNumber() + 1,
                TcpHeader.SYN | TcpHeader.ACK, 65_535), new byte[0]);
        assertEquals(TcpState.ESTABLISHED, c.state());
        assertEquals(1, primary.counter(TcpCounter.SEGMENTS_HANDED_ON));
        Got ack = peer.only();
        assertEquals(LOOP_NODE, ack.fromNode());
        assertEquals(5001, ack.h().acknowledgmentNumber());
    }

    @Test
    void aPeerLayerLearnsTheLoopsNodeAndSendsThereDirectly() {
        TcpLayer peerLayer = wire.tcp(1, CONFIG);
        primary.listen(PORT, 8, CONFIG, accepted::add);
        TcpConnection client = peerLayer.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        wire.pump();
        TcpConnection server = accepted.getFirst();
        primary.handOff(server, loop1);
        loop1.adoptArrivals();
        MemorySegment bytes = MemorySegment.ofArray("x".getBytes());
        server.write(bytes, 0, 1, wire.now);
        wire.pump();
        assertEquals(1, client.readable());
        assertEquals(LOOP_NODE, client.via(), "the peer learned the loop's node from its segment");
        client.write(bytes, 0, 1, wire.now);
        wire.pump();
        assertEquals(1, server.readable());
        assertEquals(0, primary.counter(TcpCounter.SEGMENTS_HANDED_ON), "nothing went through the primary");
    }

    @Test
    void theOtherLoopsDoNotListenAndOnlyAnEstablishedConnectionMoves() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> loop1.listen(PORT, 8, CONFIG, accepted::add));
        assertTrue(e.getMessage().contains("first event loop"), e.getMessage());
        TcpConnection c = primary.connect(LayerWire.ip(1), 80, CONFIG, null, wire.now); // SYN-SENT
        IllegalStateException moving = assertThrows(IllegalStateException.class, () -> primary.handOff(c, loop1));
        assertTrue(moving.getMessage().contains("established"), moving.getMessage());
        assertThrows(IllegalArgumentException.class, () -> primary.handOff(c, primary));
    }
}
