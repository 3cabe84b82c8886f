package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.nupa.tcp.wire.TcpRepr;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A peer's fabric node that dies (or restarts) takes its connections with it: every connection to it ends at once,
 * reset, or "No route to host" while opening, with nothing sent and its buffers back in the budget, instead of
 * retransmitting into nothing for minutes. Driven on virtual time through {@link TcpLayer#endConnectionsTo}, and
 * once through the fabric's liveness itself.
 */
class TcpPeerDownTest {
    static final TcpConfig CONFIG = TcpConfig.defaults(9000);
    static final int PORT = 80;
    static final long MS = 1_000_000L;

    private final LayerWire wire = new LayerWire(3);

    @AfterEach
    void close() {
        wire.close();
    }

    /** Events that keep the error each connection ended with. */
    private static TcpConnection.Events recording(List<TcpError> ended) {
        return new TcpConnection.Events() {
            @Override
            public void onClosed(TcpConnection c, TcpError error) {
                ended.add(error);
            }
        };
    }

    /**
     * Segments the layer's connections tried to send; not the resets it answers segments for no connection with
     * (here the client, alive in this test, still talks to the server).
     */
    private static long sentByConnections(TcpLayer l) {
        return l.counter(TcpCounter.SEGMENTS_OUT) - l.counter(TcpCounter.RESETS_SENT) + l.counter(TcpCounter.SEND_FAILURES)
                + l.counter(TcpCounter.SEND_DEFERRED);
    }

    @Test
    void everyConnectionToALostNodeIsResetAtOnceWithNothingSentAndItsBuffersFreed() {
        TcpLayer server = wire.tcp(0, CONFIG);
        TcpLayer client = wire.tcp(1, CONFIG);
        List<TcpConnection> accepted = new ArrayList<>();
        List<TcpError> serverSaw = new ArrayList<>();
        server.listen(PORT, 16, CONFIG, c -> {
            accepted.add(c);
            server.setEvents(c, recording(serverSaw));
        });
        List<TcpConnection> opened = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            opened.add(client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now));
        }
        wire.pump();
        byte[] data = new byte[1000];
        for (TcpConnection c : opened) {
            c.write(java.lang.foreign.MemorySegment.ofArray(data), 0, data.length, wire.now);
        }
        wire.pump();
        assertEquals(3, accepted.size());
        assertTrue(server.bufferMemoryUsed() > 0, "the server's connections hold buffers");
        long sent = sentByConnections(server);

        assertEquals(3, server.endConnectionsTo(1, new int[] {LayerWire.ip(1)}));

        assertEquals(0, server.connections(), "nothing is left of them");
        assertEquals(List.of(TcpError.RESET, TcpError.RESET, TcpError.RESET), serverSaw, "the application saw resets");
        for (TcpConnection c : accepted) {
            assertSame(TcpState.CLOSED, c.state());
        }
        assertEquals(3, server.counter(TcpCounter.PEER_DOWN_RESETS));
        assertEquals(0, server.bufferMemoryUsed(), "their buffers went back to the budget");
        assertEquals(sent, sentByConnections(server), "no segment goes to a dead node");
        wire.advance(60_000 * MS);
        assertEquals(sent, sentByConnections(server), "nor later: no timer of theirs is left");
    }

    @Test
    void aConnectInProgressFailsWithNoRouteToHostAndAHalfOpenConnectionIsDropped() {
        TcpLayer server = wire.tcp(0, CONFIG);
        TcpLayer client = wire.tcp(1, CONFIG);
        LayerWire.Raw silent = wire.raw(2); // takes SYNs and never answers
        List<TcpError> clientSaw = new ArrayList<>();
        TcpConnection opening = client.connect(LayerWire.ip(2), PORT, CONFIG, recording(clientSaw), wire.now);
        wire.pump();
        assertSame(TcpState.SYN_SENT, opening.state());

        // a half-open connection on the server: node 2's SYN, answered, never acknowledged
        server.listen(PORT, 16, CONFIG, c -> { });
        silent.send(LayerWire.ip(0), new TcpRepr(40000, PORT, 1, 0, Segment.SYN, 65535, 0, -1, -1, false, null, List.of()));
        wire.pump();
        assertEquals(Map.of(TcpState.SYN_RECEIVED, 1), server.states());

        assertEquals(1, client.endConnectionsTo(2, new int[] {LayerWire.ip(2)}));
        assertSame(TcpError.HOST_UNREACHABLE, opening.error());
        assertEquals(List.of(TcpError.HOST_UNREACHABLE), clientSaw);
        assertEquals(1, server.endConnectionsTo(2, new int[] {LayerWire.ip(2)}));
        assertEquals(0, server.connections());
        assertEquals(0, client.connections());
    }

    @Test
    void connectionsToOtherNodesAreLeftAlone() {
        TcpLayer server = wire.tcp(0, CONFIG);
        TcpLayer client = wire.tcp(1, CONFIG);
        server.listen(PORT, 16, CONFIG, c -> { });
        TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        wire.pump();
        assertEquals(0, server.endConnectionsTo(2, new int[] {LayerWire.ip(2)}));
        assertEquals(0, client.endConnectionsTo(2, new int[] {LayerWire.ip(2)}));
        assertSame(TcpState.ESTABLISHED, c.state());
        assertEquals(1, server.connections());
        assertEquals(0, server.counter(TcpCounter.PEER_DOWN_RESETS));
    }

    /** Through the fabric: node 1 leaves; the server's liveness reports it DOWN and the layer ends its connections. */
    @Test
    void theFabricsLivenessEndsTheConnectionsOfANodeThatLeft() throws InterruptedException {
        TcpLayer server = wire.tcp(0, CONFIG);
        // Node 0's liveness must have seen node 1 up, or it has nothing to see go down. It reports a peer UP on its
        // first heartbeat after the peer attached: either that is still to come (and this listener hears it), or it
        // came already (and the wait runs out, harmlessly).
        java.util.concurrent.CountDownLatch up = new java.util.concurrent.CountDownLatch(1);
        server.ip().link().device().addPeerListener(e -> {
            if (e.kind() == dev.nupa.device.PeerEvent.Kind.UP && e.address() == 1) {
                up.countDown();
            }
        });
        up.await(1, java.util.concurrent.TimeUnit.SECONDS);
        TcpLayer client = wire.tcp(1, CONFIG);
        List<TcpError> serverSaw = new ArrayList<>();
        server.listen(PORT, 16, CONFIG, c -> server.setEvents(c, recording(serverSaw)));
        for (int i = 0; i < 4; i++) {
            client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        }
        wire.pump();
        assertEquals(4, server.connections());
        wire.leave(1);
        long deadline = System.nanoTime() + 10_000 * MS; // liveness runs on real time (a 10 ms heartbeat)
        while (server.connections() > 0 && System.nanoTime() < deadline) {
            server.poll(wire.now); // the liveness thread queued the node; the owner ends its connections on its poll
            Thread.onSpinWait();
        }
        assertEquals(0, server.connections(), "the connections of the node that left are gone");
        assertEquals(4, server.counter(TcpCounter.PEER_DOWN_RESETS));
        assertEquals(List.of(TcpError.RESET, TcpError.RESET, TcpError.RESET, TcpError.RESET), serverSaw);
    }
}
