package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tcp.LayerWire.Got;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpRepr;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The layer polls a connection's timers when they fall due, also after a user call made straight on the
 * {@link TcpConnection} (without {@link TcpLayer#touched}): the
 * connection tells its layer when its deadline moves earlier. A raw peer that never acknowledges data
 * shows the retransmission timer at work (RFC 6298 5.4).
 */
class TcpLayerTimersTest {
    static final int PORT = 80;
    static final int CLIENT_PORT = 40_000;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();

    @AfterEach
    void close() {
        wire.close();
    }

    @Test
    void rfc6298_5_4_dataWrittenStraightOnTheConnectionIsRetransmittedWhenTheTimerExpires() {
        TcpLayer server = wire.tcp(0, CONFIG);
        server.listen(PORT, 8, CONFIG, accepted::add);
        LayerWire.Raw peer = wire.raw(1);
        peer.send(LayerWire.ip(0), new TcpRepr(CLIENT_PORT, PORT, 1000, 0, TcpHeader.SYN, 65_535, 0, 1460, -1, false, null,
                List.of()));
        Got synAck = peer.only();
        int iss = synAck.h().sequenceNumber();
        peer.send(LayerWire.ip(0), new TcpRepr(CLIENT_PORT, PORT, 1001, iss + 1, TcpHeader.ACK, 65_535, 0, -1, -1, false,
                null, List.of()));
        assertEquals(1, accepted.size());
        TcpConnection c = accepted.get(0);
        assertEquals(TcpState.ESTABLISHED, c.state());
        wire.advance(2_000 * LayerWire.MS); // the layer polls its timers: none left, so it waits for news
        assertEquals(Long.MAX_VALUE, server.poll(wire.now), "no timer pending before the write");

        assertEquals(100, c.write(MemorySegment.ofArray(new byte[100]), 0, 100, wire.now)); // no touched()
        wire.pump();
        Got first = peer.only();
        assertEquals(100, first.data().length);

        wire.advance(3_000 * LayerWire.MS); // past any RTO (RFC 6298: 1 s initial, 200 ms minimum here)
        List<Got> again = peer.take();
        assertTrue(!again.isEmpty() && again.get(0).h().sequenceNumber() == first.h().sequenceNumber() && again.get(0).data().length == 100,
                "the unacknowledged data was sent again: " + again);
        assertTrue(c.retransmits() >= 1);
    }

    @Test
    void rfc6298_5_4_eachOfManyConnectionsIsRetransmittedWhenItsOwnTimerExpires() {
        TcpLayer server = wire.tcp(0, CONFIG);
        server.listen(PORT, 128, CONFIG, accepted::add);
        LayerWire.Raw peer = wire.raw(1);
        int n = 40;
        for (int i = 0; i < n; i++) {
            peer.send(LayerWire.ip(0), new TcpRepr(CLIENT_PORT + i, PORT, 1000, 0, TcpHeader.SYN, 65_535, 0, 1460, -1, false,
                    null, List.of()));
            int iss = peer.only().h().sequenceNumber();
            peer.send(LayerWire.ip(0), new TcpRepr(CLIENT_PORT + i, PORT, 1001, iss + 1, TcpHeader.ACK, 65_535, 0, -1, -1,
                    false, null, List.of()));
        }
        assertEquals(n, accepted.size());
        wire.advance(2_000 * LayerWire.MS);
        assertEquals(Long.MAX_VALUE, server.poll(wire.now), "no timer pending before the writes");

        // One write every 10 ms, so the retransmission timers fall due one after another, latest-written last.
        for (TcpConnection c : accepted) {
            assertEquals(10, c.write(MemorySegment.ofArray(new byte[10]), 0, 10, wire.now));
            wire.pump();
            wire.advance(10 * LayerWire.MS);
        }
        assertEquals(n, peer.take().size(), "one data segment per connection");
        TcpConnection last = accepted.get(n - 1);
        long due = server.poll(wire.now);
        assertTrue(due > wire.now && due < Long.MAX_VALUE, "the earliest retransmission timer is pending");
        assertEquals(0, last.retransmits());

        wire.advance(3_000 * LayerWire.MS);
        List<Got> again = peer.take();
        for (TcpConnection c : accepted) {
            assertTrue(c.retransmits() >= 1, "connection from port " + c.remotePort() + " retransmitted: " + c.retransmits());
        }
        assertTrue(again.size() >= n, "each connection's data was sent again: " + again.size());
    }
}
