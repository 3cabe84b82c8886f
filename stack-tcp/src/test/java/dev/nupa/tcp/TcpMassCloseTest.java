package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A client that ends hundreds of connections at once: more resets than the server's ring has slots. Every reset
 * still arrives (the ones the full ring refused are kept and sent again: PendingResets), so no connection is left
 * open at the server; and once the churn stops, the pools of closed connections and empty buffers are let go.
 * Two TcpLayers on virtual time, over a ring of 256 slots.
 */
class TcpMassCloseTest {
    static final int PORT = 7200;
    static final int PEERS = 400;
    static final TcpConfig CONFIG = TcpConfig.defaults(1500).withBuffers(16 * 1024, 16 * 1024).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();

    @AfterEach
    void close() {
        wire.close();
    }

    @Test
    void resetsAFullRingRefusedAreSentAgainAndEveryServerConnectionEnds() {
        TcpLayer server = wire.tcp(0, CONFIG, 64L << 20);
        server.listen(PORT, PEERS + 8, CONFIG, accepted::add);
        TcpLayer client = wire.tcp(1, CONFIG);
        List<TcpConnection> peers = new ArrayList<>();
        MemorySegment request = MemorySegment.ofArray(new byte[100]);
        for (int i = 0; i < PEERS; i++) {
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
            peers.add(c);
            wire.pump();
            assertEquals(100, c.write(request, 0, 100, wire.now));
        }
        wire.pump();
        assertEquals(PEERS, accepted.size());
        for (TcpConnection s : accepted) {
            assertEquals(TcpState.ESTABLISHED, s.state());
        }

        for (TcpConnection c : peers) { // no pump between: 400 resets into a ring of 256 slots
            c.abort(wire.now);
        }
        wire.pump();
        for (int i = 0; i < PEERS; i++) {
            assertEquals(TcpState.CLOSED, accepted.get(i).state(), "server connection " + i + " heard its reset");
        }
        assertTrue(client.counter(TcpCounter.RESETS_QUEUED) > 0, "the ring refused some resets (else the test shows nothing)");
        assertEquals(0, client.pendingResets(), "every kept reset was sent");
        assertEquals(0, client.counter(TcpCounter.RESETS_DROPPED));
    }

    @Test
    void poolsNoConnectionDrewFromForASecondAreLetGoAllButWhatTheNextConnectionNeeds() {
        TcpLayer server = wire.tcp(0, CONFIG, 64L << 20);
        AtomicInteger released = new AtomicInteger();
        server.setPoolReleaseHandler(released::addAndGet);
        server.listen(PORT, PEERS + 8, CONFIG, accepted::add);
        TcpLayer client = wire.tcp(1, CONFIG);
        MemorySegment request = MemorySegment.ofArray(new byte[100]);
        byte[] sink = new byte[100];
        for (int i = 0; i < 50; i++) { // 50 open together, so that 50 closed ones are kept, not one reused
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
            wire.pump();
            assertEquals(100, c.write(request, 0, 100, wire.now));
            client.touched(c);
        }
        wire.pump();
        for (TcpConnection s : accepted) {
            assertEquals(100, s.read(MemorySegment.ofArray(sink), 0, 100, wire.now)); // a receive buffer was used
            s.abort(wire.now);
            server.touched(s);
        }
        wire.pump();
        assertEquals(0, server.bufferMemoryUsed());
        assertTrue(server.bufferMemoryPooled() > 0, "closed connections' empty buffers are pooled for the next ones");
        assertEquals(0, released.get());

        wire.advance(ConnectionPool.IDLE_NS / 2);
        assertTrue(server.bufferMemoryPooled() > 0, "half a second idle: still pooled");
        for (int i = 0; i < 5; i++) {
            wire.advance(ConnectionPool.IDLE_NS);
        }
        assertEquals(BufferBudget.KEEP_BUFFERS * 16 * 1024L, server.bufferMemoryPooled(),
                "unused for a second and more: the buffers went back to the system, all but the newest few");
        assertEquals(50 - ConnectionPool.KEEP, released.get(), "the closed connections kept for reuse were let go, all but a few");
        for (int i = 0; i < 5; i++) {
            wire.advance(ConnectionPool.IDLE_NS);
        }
        assertEquals(50 - ConnectionPool.KEEP, released.get(), "what the floor keeps stays");

        // The next connection after the quiet spell opens from what was kept, not from fresh memory.
        long reused = server.counter(TcpCounter.CONNECTIONS_REUSED);
        TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        wire.pump();
        assertEquals(100, c.write(request, 0, 100, wire.now));
        wire.pump();
        assertEquals(reused + 1, server.counter(TcpCounter.CONNECTIONS_REUSED));
        TcpConnection s = accepted.get(accepted.size() - 1);
        assertEquals(100, s.read(MemorySegment.ofArray(sink), 0, 100, wire.now));
        assertTrue(server.bufferMemoryPooled() < BufferBudget.KEEP_BUFFERS * 16 * 1024L, "its receive buffer came from the pool");
    }
}
