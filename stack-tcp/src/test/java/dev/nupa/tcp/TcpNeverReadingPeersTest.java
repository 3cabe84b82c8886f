package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Hundreds of peers that send a request and never read the answer: the server's buffer memory stays within
 * its bound (Linux's tcp_mem), answers that find no memory are refused rather than grown, and the server
 * still takes in another client's request. Two TcpLayers on virtual time.
 */
class TcpNeverReadingPeersTest {
    static final int PORT = 7100;
    static final int PEERS = 300;
    static final long LIMIT = 1 << 20;
    static final TcpConfig SERVER = TcpConfig.defaults(1500).withBuffers(32 * 1024, 32 * 1024).withDelayedAck(0);
    /** The clients' receive buffers fill and then advertise a zero window: they never read. */
    static final TcpConfig CLIENT = TcpConfig.defaults(1500).withBuffers(4096, 4096).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();
    private long mostUsed;

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

    private void pump(TcpLayer server) {
        wire.pump();
        mostUsed = Math.max(mostUsed, server.bufferMemoryUsed());
    }

    @Test
    void peersThatNeverReadHoldNoMoreThanTheBoundAndAnotherClientIsStillHeard() {
        TcpLayer server = wire.tcp(0, SERVER, LIMIT);
        server.listen(PORT, PEERS + 8, SERVER, accepted::add);
        TcpLayer client = wire.tcp(1, CLIENT);
        MemorySegment answer = bytes(32 * 1024, 3);
        List<TcpConnection> peers = new ArrayList<>();
        int answered = 0;
        int refused = 0;
        for (int i = 0; i < PEERS; i++) {
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
            peers.add(c);
            pump(server);
            assertEquals(100, c.write(bytes(100, i), 0, 100, wire.now));
            pump(server);
            TcpConnection s = accepted.get(i);
            byte[] request = new byte[100];
            assertEquals(100, s.read(MemorySegment.ofArray(request), 0, 100, wire.now), "request " + i + " was heard");
            try {
                assertTrue(s.write(answer, 0, (int) answer.byteSize(), wire.now) > 0);
                answered++;
            } catch (BufferUnavailableException e) {
                refused++; // the bound is reached: the writer is told, nothing was taken
                assertEquals(0, s.unacknowledged());
            }
            server.touched(s);
            pump(server);
            assertTrue(server.bufferMemoryUsed() <= LIMIT, server.bufferMemoryUsed() + " bytes held after peer " + i);
        }
        assertTrue(mostUsed <= LIMIT, "the budget held " + mostUsed + " bytes at most, bound " + LIMIT);
        assertTrue(answered > 0 && refused > 0, answered + " answered, " + refused + " refused");
        assertTrue(answered * 32L * 1024 <= LIMIT, answered + " send buffers of peers that never read fit the bound");

        // Another client is still heard: its request finds receive memory.
        TcpConnection other = client.connect(LayerWire.ip(0), PORT, CLIENT, null, wire.now);
        pump(server);
        assertEquals(TcpState.ESTABLISHED, other.state());
        assertEquals(100, other.write(bytes(100, 77), 0, 100, wire.now));
        pump(server);
        TcpConnection heard = accepted.get(PEERS);
        byte[] got = new byte[100];
        assertEquals(100, heard.read(MemorySegment.ofArray(got), 0, 100, wire.now),
                "a request from a client that reads lands while " + PEERS + " peers never read");
        assertArrayEquals(bytes(100, 77).toArray(ValueLayout.JAVA_BYTE), got);

        // The peers go away (reset): everything they pinned goes back.
        for (TcpConnection c : peers) {
            c.abort(wire.now);
            client.touched(c);
        }
        heard.abort(wire.now);
        server.touched(heard);
        pump(server);
        assertEquals(0, server.bufferMemoryUsed(), "reset connections hold no buffer memory");
        assertTrue(mostUsed <= LIMIT);
    }
}
