package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a close means to data that comes after it, two TcpLayers on virtual time: after close (the
 * application reads no more) new data is answered with a reset (RFC 1122 4.2.2.13); after a
 * shutdown of output only (half-close, RFC 9293 3.6) it is still received.
 */
class TcpCloseRulesTest {
    static final int PORT = 7000;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();
    private TcpLayer server;
    private TcpLayer client;

    @AfterEach
    void close() {
        wire.close();
    }

    /** A connection from node 1 to node 0; returns {client side, server side}. */
    private TcpConnection[] connected() {
        server = wire.tcp(0, CONFIG);
        server.listen(PORT, 8, CONFIG, accepted::add);
        client = wire.tcp(1, CONFIG);
        TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        wire.pump();
        assertSame(TcpState.ESTABLISHED, c.state());
        return new TcpConnection[] {c, accepted.get(0)};
    }

    @Test
    void rfc1122_4_2_2_13_dataArrivingAfterTheApplicationClosedIsAnsweredWithAReset() {
        TcpConnection[] p = connected();
        TcpConnection c = p[0];
        TcpConnection s = p[1];
        s.close(wire.now);
        wire.pump();
        assertSame(TcpState.CLOSE_WAIT, c.state(), "the server's FIN arrived");
        assertSame(TcpState.FIN_WAIT_2, s.state());
        assertEquals(100, c.write(MemorySegment.ofArray(new byte[100]), 0, 100, wire.now)); // legal in CLOSE-WAIT
        wire.pump();
        assertSame(TcpState.CLOSED, s.state(), "the closed end answered the data with a reset");
        assertSame(TcpState.CLOSED, c.state());
        assertSame(TcpError.RESET, c.error(), "the writer learns that its data went nowhere");
        assertEquals(1, server.counter(TcpCounter.ABORTS_ON_DATA));
    }

    @Test
    void rfc9293_3_10_4_aCloseThatLeavesReceivedDataUnreadResetsTheConnection() {
        TcpConnection[] p = connected();
        TcpConnection c = p[0];
        TcpConnection s = p[1];
        assertEquals(100, c.write(MemorySegment.ofArray(new byte[100]), 0, 100, wire.now));
        wire.pump();
        assertEquals(100, s.readable());
        long resets = server.counter(TcpCounter.RESETS_SENT);
        s.close(wire.now); // as Linux's tcp_close: unread data was tossed, zap the connection
        assertSame(TcpState.CLOSED, s.state(), "no FIN-WAIT: the closing end is gone at once");
        assertSame(TcpError.CLOSED_WITH_UNREAD_DATA, s.error());
        assertEquals(1, server.counter(TcpCounter.ABORTS_ON_CLOSE));
        wire.pump();
        assertSame(TcpState.CLOSED, c.state(), "the peer got a reset, not a FIN");
        assertSame(TcpError.RESET, c.error());
        assertEquals(0, server.connections());
        assertEquals(resets, server.counter(TcpCounter.RESETS_SENT), "a connection's own reset is not the layer's answer");
    }

    @Test
    void aCloseAfterEveryByteWasReadSendsAFin() {
        TcpConnection[] p = connected();
        TcpConnection c = p[0];
        TcpConnection s = p[1];
        assertEquals(100, c.write(MemorySegment.ofArray(new byte[100]), 0, 100, wire.now));
        wire.pump();
        assertEquals(100, s.read(MemorySegment.ofArray(new byte[100]), 0, 100, wire.now));
        s.close(wire.now);
        wire.pump();
        assertSame(TcpState.CLOSE_WAIT, c.state(), "an orderly FIN");
        assertEquals(0, server.counter(TcpCounter.ABORTS_ON_CLOSE));
    }

    @Test
    void rfc9293_3_6_afterAShutdownOfOutputOnlyDataStillArrives() {
        TcpConnection[] p = connected();
        TcpConnection c = p[0];
        TcpConnection s = p[1];
        s.shutdownOutput(wire.now);
        wire.pump();
        assertSame(TcpState.CLOSE_WAIT, c.state());
        assertEquals(100, c.write(MemorySegment.ofArray(new byte[100]), 0, 100, wire.now));
        wire.pump();
        assertSame(TcpState.FIN_WAIT_2, s.state(), "a half-closed end goes on receiving");
        assertEquals(100, s.readable());
    }

    @Test
    void afterThePeersFinReadingSendsNoWindowUpdateThatAClosedPeerWouldAnswerWithAReset() {
        TcpConnection[] p = connected();
        TcpConnection c = p[0];
        TcpConnection s = p[1];
        c.shutdownOutput(wire.now); // the client is done sending, and reads what the server still sends
        wire.pump();
        assertSame(TcpState.CLOSE_WAIT, s.state());
        // The server all but fills the client's receive buffer (the window left is too small to leave as it is
        // once read), then closes: its FIN comes last, and the client waits in TIME-WAIT with the bytes unread.
        int size = CONFIG.receiveBuffer() - 1000;
        byte[] data = new byte[size];
        int written = 0;
        while (written < size) {
            int n = s.write(MemorySegment.ofArray(data), written, size - written, wire.now);
            wire.pump();
            if (n <= 0) {
                break;
            }
            written += n;
        }
        s.close(wire.now);
        wire.pump();
        assertSame(TcpState.TIME_WAIT, c.state());
        assertEquals(0, server.connections(), "the server's close completed: nothing is left of it");
        long out = client.counter(TcpCounter.SEGMENTS_OUT);
        byte[] sink = new byte[size];
        int read = 0;
        while (c.readable() > 0) {
            read += c.read(MemorySegment.ofArray(sink), 0, sink.length, wire.now);
            wire.pump();
        }
        assertEquals(written, read, "every byte is read after the peer's FIN");
        assertEquals(out, client.counter(TcpCounter.SEGMENTS_OUT), "no window update went to the closed peer");
        assertEquals(0, server.counter(TcpCounter.RESETS_SENT));
    }
}
