package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The layer's bound on buffer memory ({@link BufferBudget}, Linux's tcp_mem): data that finds no memory is
 * dropped unacknowledged and counted, the node goes on, and once memory comes back the peer's retransmission
 * lands; a write that finds none is refused with a message that says what to do. Two TcpLayers on virtual time.
 */
class TcpBufferBudgetTest {
    static final int PORT = 7000;
    /** 60,000-byte receive buffers: one fits the server's 100,000-byte budget, two do not. */
    static final TcpConfig SERVER = TcpConfig.defaults(9000).withBuffers(9000, 60_000).withDelayedAck(0);
    static final TcpConfig CLIENT = TcpConfig.defaults(9000).withBuffers(60_000, 60_000).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();

    @AfterEach
    void close() {
        wire.close();
    }

    private static MemorySegment bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed + i * 7);
        }
        return MemorySegment.ofArray(b);
    }

    private byte[] readAll(TcpConnection c) {
        byte[] b = new byte[c.readable()];
        assertEquals(b.length, c.read(MemorySegment.ofArray(b), 0, b.length, wire.now));
        return b;
    }

    @Test
    void dataThatFindsNoBufferMemoryIsDroppedAndCountedAndLandsWhenMemoryComesBack() {
        TcpLayer server = wire.tcp(0, SERVER, 100_000);
        server.listen(PORT, 8, SERVER, accepted::add);
        TcpLayer client = wire.tcp(1, CLIENT);

        TcpConnection a = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
        wire.pump();
        assertEquals(TcpState.ESTABLISHED, a.state());
        assertEquals(1000, a.write(bytes(1000, 1), 0, 1000, wire.now));
        wire.pump();
        TcpConnection serverA = accepted.get(0);
        assertArrayEquals(bytes(1000, 1).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), readAll(serverA));
        assertEquals(60_000, server.bufferMemoryUsed(), "the first connection's receive buffer");

        TcpConnection b = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
        wire.pump();
        assertEquals(TcpState.ESTABLISHED, b.state(), "a handshake needs no buffer memory");
        assertEquals(1000, b.write(bytes(1000, 2), 0, 1000, wire.now));
        client.touched(b); // a user call made on the connection: the layer learns of the retransmission timer
        wire.pump();
        TcpConnection serverB = accepted.get(1);
        assertEquals(0, serverB.readable(), "no memory for the second receive buffer: the data was dropped");
        assertTrue(serverB.bufferDrops() >= 1 && server.counter(TcpCounter.BUFFER_SHORTAGES) >= 1,
                serverB.bufferDrops() + " drops, counters " + server.counters());
        assertEquals(1000, b.unacknowledged(), "dropped unacknowledged: the client still holds it");
        assertEquals(60_000, server.bufferMemoryUsed());

        // The node goes on: the first connection still carries data.
        assertEquals(500, a.write(bytes(500, 3), 0, 500, wire.now));
        wire.pump();
        assertArrayEquals(bytes(500, 3).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), readAll(serverA));

        // The first connection closes (passive close on the server): its buffer goes back to the budget.
        a.close(wire.now);
        wire.pump();
        serverA.close(wire.now);
        wire.pump();
        assertSame(TcpState.CLOSED, serverA.state());
        assertEquals(0, server.bufferMemoryUsed(), "a closed connection gives its buffer memory back");

        // The client's retransmission of the dropped data now lands.
        wire.advance(3_000 * LayerWire.MS);
        assertArrayEquals(bytes(1000, 2).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), readAll(serverB),
                "the dropped data arrives whole once memory is back");
        assertEquals(0, b.unacknowledged());
        assertEquals(60_000, server.bufferMemoryUsed());
    }

    @Test
    void aConnectionGivesItsBufferMemoryBackWhenItEntersTimeWait() {
        TcpLayer server = wire.tcp(0, SERVER);
        server.listen(PORT, 8, SERVER, accepted::add);
        TcpLayer client = wire.tcp(1, CLIENT, 1 << 20);
        TcpConnection c = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
        wire.pump();
        assertEquals(100, c.write(bytes(100, 5), 0, 100, wire.now));
        wire.pump();
        TcpConnection s = accepted.get(0);
        readAll(s);
        assertEquals(50, s.write(bytes(50, 6), 0, 50, wire.now));
        server.touched(s);
        wire.pump();
        assertEquals(120_000, client.bufferMemoryUsed(), "the client's send and receive buffers");

        c.shutdownOutput(wire.now); // the active close, the application still reading: the client ends in TIME-WAIT
        client.touched(c);
        wire.pump();
        s.close(wire.now);
        server.touched(s);
        wire.pump();
        assertSame(TcpState.TIME_WAIT, c.state());
        assertEquals(60_000, client.bufferMemoryUsed(), "the empty send buffer went back on entering TIME-WAIT");
        assertEquals(60_000, client.bufferMemoryPooled(), "into the pool");
        assertArrayEquals(bytes(50, 6).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), readAll(c),
                "what was unread stays readable");
        assertEquals(0, client.bufferMemoryUsed(), "the receive buffer went back once read, not 2*MSL later");
        assertEquals(120_000, client.bufferMemoryPooled());

        TcpConnection next = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
        wire.pump();
        assertEquals(10, next.write(bytes(10, 7), 0, 10, wire.now));
        assertEquals(60_000, client.bufferMemoryPooled(), "the next connection's send buffer came from the pool");
        assertEquals(60_000, client.bufferMemoryUsed());
    }

    @Test
    void aWriteThatFindsNoBufferMemoryIsRefusedWithWhatToDo() {
        TcpLayer server = wire.tcp(0, SERVER);
        server.listen(PORT, 8, SERVER, accepted::add);
        TcpLayer client = wire.tcp(1, CLIENT, 10_000); // less than one 60,000-byte send buffer
        TcpConnection c = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
        wire.pump();
        assertEquals(TcpState.ESTABLISHED, c.state());
        BufferUnavailableException e = assertThrows(BufferUnavailableException.class,
                () -> c.write(bytes(100, 4), 0, 100, wire.now));
        assertTrue(e.getMessage().contains("60000-byte TCP buffer") && e.getMessage().contains("TcpConfig.withBuffers"),
                e.getMessage());
        assertEquals(0, c.unacknowledged(), "nothing of the refused write was taken");
        assertEquals(0, client.bufferMemoryUsed());
    }

    @Test
    void aNegativeLimitIsRefusedByName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new BufferBudget(-1));
        assertTrue(e.getMessage().contains("negative"), e.getMessage());
    }
}
