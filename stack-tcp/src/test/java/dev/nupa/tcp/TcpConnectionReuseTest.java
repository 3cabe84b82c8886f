package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A layer reuses the object of a connection that is closed and released for the next one: the reused
 * object starts exactly as a new one does, a holder of the old connection that checks its generation
 * learns that it is stale, and connect-request-close churn allocates nothing and leaves memory where
 * it started.
 */
class TcpConnectionReuseTest {
    static final int PORT = 7000;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0).withNoDelay(true).withTimeWait(LayerWire.MS);

    private LayerWire wire;

    @AfterEach
    void close() {
        if (wire != null) {
            wire.close();
        }
    }

    /** Two connections joined back to back in memory, on virtual time. */
    private static final class Pair {
        final ArrayDeque<Object[]> queue = new ArrayDeque<>();
        final TcpConnection a;
        final TcpConnection b;
        final Segment scratch = new Segment();
        long now = 1_000_000_000L;

        Pair(TcpConfig config) {
            a = new TcpConnection(Wire.LOCAL, 1000, Wire.REMOTE, 2000, config, (c, s) -> queue.add(new Object[] {"b", Wire.Seg.of(s)}), null);
            b = new TcpConnection(Wire.REMOTE, 2000, Wire.LOCAL, 1000, config, (c, s) -> queue.add(new Object[] {"a", Wire.Seg.of(s)}), null);
        }

        void pump() {
            Object[] next;
            while ((next = queue.poll()) != null) {
                TcpConnection to = next[0].equals("a") ? a : b;
                to.onSegment(((Wire.Seg) next[1]).into(scratch), now);
            }
        }

        void advance(long ns) {
            now += ns;
            a.poll(now);
            b.poll(now);
            pump();
        }
    }

    @Test
    void aReusedConnectionStartsExactlyAsANewOne() throws Exception {
        TcpConfig other = CONFIG.withBuffers(100_000, 50_000);
        Pair p = new Pair(CONFIG);
        // A whole life: handshake, data both ways with an out-of-order arrival, close from both ends, TIME-WAIT.
        p.a.connect(100, p.now);
        p.b.accept(((Wire.Seg) p.queue.poll()[1]).into(p.scratch), 900, p.now);
        p.pump();
        assertEquals(TcpState.ESTABLISHED, p.a.state());
        MemorySegment data = MemorySegment.ofArray(new byte[30_000]);
        p.a.write(data, 0, 30_000, p.now);
        Object[] first = p.queue.poll();
        p.pump(); // the rest arrives before the first segment: out of order, SACKed
        p.queue.add(first);
        p.pump();
        assertEquals(30_000, p.b.readable());
        p.b.read(MemorySegment.ofArray(new byte[30_000]), 0, 30_000, p.now);
        p.b.write(data, 0, 1000, p.now);
        p.pump();
        p.a.close(p.now);
        p.pump();
        p.b.close(p.now);
        p.pump();
        p.advance(10 * LayerWire.MS);
        assertEquals(TcpState.CLOSED, p.a.state());
        int generation = p.a.generation();

        p.a.reuse(Wire.LOCAL, 1001, Wire.REMOTE, 2001, other, other.mss(), null);
        TcpConnection fresh = new TcpConnection(Wire.LOCAL, 1001, Wire.REMOTE, 2001, other, (c, s) -> true, null);
        assertEquals(generation + 1, p.a.generation());
        assertSameState(fresh, p.a, "TcpConnection");
        p.a.connect(5000, p.now);
        fresh.connect(5000, p.now);
        assertSameState(fresh, p.a, "TcpConnection after connect");
    }

    @Test
    void onlyAClosedAndReleasedConnectionIsReused() {
        Pair p = new Pair(CONFIG);
        p.a.connect(100, p.now);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> p.a.reuse(Wire.LOCAL, 1001, Wire.REMOTE, 2001, CONFIG, CONFIG.mss(), null));
        assertTrue(e.getMessage().contains("only once closed and released"), e.getMessage());
        p.a.abort(p.now); // closed and released at once
        p.a.reuse(Wire.LOCAL, 1001, Wire.REMOTE, 2001, CONFIG, CONFIG.mss(), null);
        assertEquals(TcpState.CLOSED, p.a.state());
    }

    @Test
    void aStaleHolderLearnsItFromTheGeneration() {
        wire = new LayerWire(2);
        TcpLayer server = wire.tcp(0, CONFIG);
        closeWhenThePeerCloses(server, 8, CONFIG);
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection old = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        int generation = old.generation();
        wire.pump();
        old.close(wire.now);
        wire.pump();
        wire.advance(10 * LayerWire.MS); // TIME-WAIT ends: closed and released
        assertEquals(TcpState.CLOSED, old.state());
        old.checkGeneration(generation); // not reused yet

        TcpConnection next = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        assertSame(old, next, "the released connection's object serves the next one");
        assertEquals(1, client.counter(TcpCounter.CONNECTIONS_REUSED));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> old.checkGeneration(generation));
        assertTrue(e.getMessage().contains("keep no reference to a connection after closing it"), e.getMessage());
        wire.pump();
        assertEquals(TcpState.ESTABLISHED, next.state());
    }

    @Test
    void aConnectionTheApplicationHasNotClosedIsNotReused() {
        wire = new LayerWire(2);
        TcpLayer server = wire.tcp(0, CONFIG);
        List<TcpConnection> accepted = new ArrayList<>();
        server.listen(PORT, 8, CONFIG, accepted::add);
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        wire.pump();
        accepted.get(0).abort(wire.now); // the client's connection is reset: closed, but its application still has it
        wire.pump();
        assertEquals(TcpState.CLOSED, c.state());
        assertEquals(TcpError.RESET, c.error());
        TcpConnection next = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        assertNotSame(c, next);
        assertEquals(TcpError.RESET, c.error(), "the reset connection keeps its state for its application");
        assertEquals(0, client.counter(TcpCounter.CONNECTIONS_REUSED));
    }

    @Test
    void pastTheTimeWaitLimitAConnectionClosesWithoutWaitingAndThePeerClosesCleanly() {
        wire = new LayerWire(2);
        TcpLayer server = wire.tcp(0, CONFIG);
        closeWhenThePeerCloses(server, 8, CONFIG);
        TcpLayer client = wire.tcp(1, CONFIG.withTimeWait(60_000 * LayerWire.MS));
        client.setTimeWaitLimit(2);
        List<TcpConnection> all = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG.withTimeWait(60_000 * LayerWire.MS), null, wire.now);
            wire.pump();
            c.close(wire.now);
            wire.pump();
            all.add(c);
        }
        wire.advance(LayerWire.MS);
        assertEquals(java.util.Map.of(TcpState.TIME_WAIT, 2), client.states(), "two wait; the others closed at once");
        assertEquals(3, client.counter(TcpCounter.TIME_WAIT_OVERFLOWS));
        assertEquals(2, client.counter(TcpCounter.TIME_WAIT_RECORDS), "the two wait as records");
        assertEquals(5, client.counter(TcpCounter.CONNECTIONS_CLOSED), "every connection object closed");
        assertEquals(0, server.connections(), "the server's ends got their ACKs and closed");
        assertEquals(5, server.counter(TcpCounter.CONNECTIONS_CLOSED));
        assertEquals(0, server.counter(TcpCounter.CONNECTIONS_FAILED));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> client.setTimeWaitLimit(-1));
        assertTrue(e.getMessage().contains("give 0 or more"), e.getMessage());
    }

    @Test
    void whenEveryEphemeralPortWaitsInTimeWaitTheOldestGivesWay() {
        wire = new LayerWire(2);
        TcpConfig longWait = CONFIG.withTimeWait(60_000 * LayerWire.MS);
        TcpLayer server = wire.tcp(0, longWait);
        closeWhenThePeerCloses(server, 64, longWait);
        TcpLayer client = wire.tcp(1, longWait);
        client.setTimeWaitLimit(100_000);
        int ports = 65536 - dev.nupa.ip.Ipv4Stack.EPHEMERAL_FIRST;
        for (int i = 0; i < ports + 100; i++) {
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, longWait, null, wire.now);
            wire.pump();
            assertEquals(TcpState.ESTABLISHED, c.state(), "connection " + i);
            c.close(wire.now);
            wire.pump();
        }
        assertEquals(100, client.counter(TcpCounter.TIME_WAIT_REUSED));
        assertEquals(java.util.Map.of(TcpState.TIME_WAIT, ports), client.states());
        assertEquals(0, server.counter(TcpCounter.CONNECTIONS_FAILED));
    }

    /**
     * 100,000 connections opened, used for one byte each way and closed, in a row: once warm, the layers
     * allocate nothing per connection (objects, arrays and buffers are reused), and at the end nothing is
     * held: no connection, no buffer memory, a pool within its bound.
     */
    @Test
    void churnAllocatesNothingAndLeavesMemoryWhereItStarted() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        wire = new LayerWire(2);
        TcpLayer server = wire.tcp(0, CONFIG);
        MemorySegment one = MemorySegment.ofArray(new byte[1]);
        MemorySegment sink = MemorySegment.ofArray(new byte[16]);
        TcpConnection.Events echo = wire.echo(true);
        server.listen(PORT, 64, CONFIG, c -> server.setEvents(c, echo));
        TcpLayer client = wire.tcp(1, CONFIG);
        long[] got = {0};
        TcpConnection.Events counting = new TcpConnection.Events() {
            @Override
            public void onReadable(TcpConnection c) {
                got[0] += c.read(sink, 0, 16, wire.now);
            }
        };
        int total = 100_000;
        int chunk = 10_000;
        long[] allocated = new long[total / chunk];
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < total; i++) {
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, counting, wire.now);
            wire.pump();
            c.write(one, 0, 1, wire.now);
            wire.pump();
            c.close(wire.now);
            wire.pump();
            if (i % 64 == 63) {
                wire.advance(2 * LayerWire.MS); // TIME-WAIT of the last ones ends
            }
            if (i % chunk == chunk - 1) {
                long after = threads.getCurrentThreadAllocatedBytes();
                allocated[i / chunk] = after - before;
                before = after;
            }
        }
        wire.advance(10 * LayerWire.MS);
        assertEquals(total, got[0], "every connection's byte came back");
        assertEquals(0, client.connections());
        assertEquals(0, server.connections());
        assertEquals(0, client.bufferMemoryUsed());
        assertEquals(0, server.bufferMemoryUsed());
        assertTrue(client.pooledConnections() <= TcpLayer.DEFAULT_CONNECTION_POOL_LIMIT, "pool " + client.pooledConnections());
        assertTrue(client.counter(TcpCounter.CONNECTIONS_REUSED) >= total - 200,
                "reused " + client.counter(TcpCounter.CONNECTIONS_REUSED) + " of " + total);
        assertTrue(server.counter(TcpCounter.CONNECTIONS_REUSED) >= total - 200,
                "reused " + server.counter(TcpCounter.CONNECTIONS_REUSED) + " of " + total);
        // The first chunks warm up (the JIT, the pools and tables growing to their working size). After that no
        // chunk allocates a byte per connection: any object made per connection would be 16 bytes or more each
        // (a rare few hundred bytes of the JIT recompiling a path stay under the bound).
        for (int k = allocated.length / 2; k < allocated.length; k++) {
            assertTrue(allocated[k] < chunk, "bytes allocated by each 10,000 connections in a row: "
                    + java.util.Arrays.toString(allocated));
        }
    }

    /** The server closes each connection it accepted once the peer closed its side. */
    private void closeWhenThePeerCloses(TcpLayer server, int backlog, TcpConfig config) {
        TcpConnection.Events closing = new TcpConnection.Events() {
            @Override
            public void onPeerClosed(TcpConnection c) {
                c.close(wire.now);
            }
        };
        server.listen(PORT, backlog, config, c -> server.setEvents(c, closing));
    }

    /**
     * Every field of the two objects is equal, but for the generation and what the owner gave each; a part's
     * reference back to its connection ({@link TcpTimers}) is not followed.
     */
    private static void assertSameState(Object expected, Object actual, String path) throws IllegalAccessException {
        for (Class<?> k = expected.getClass(); k != null && k != Object.class; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.getType().isArray() || f.getType() == MemorySegment.class
                        || f.getType() == BufferBudget.class || f.getType() == TcpConnection.Output.class
                        || f.getType() == TcpConnection.Events.class || f.getType() == TcpConnection.class
                        || f.getName().equals("generation")) {
                    continue;
                }
                f.setAccessible(true);
                Object e = f.get(expected);
                Object a = f.get(actual);
                String where = path + "." + f.getName();
                if (e == null || a == null || f.getType().isPrimitive() || f.getType().isEnum() || e instanceof String
                        || e instanceof Number || e instanceof Boolean || f.getType().isRecord() || f.getType() == TcpConfig.class) {
                    assertEquals(e, a, where);
                } else {
                    assertEquals(e.getClass(), a.getClass(), where);
                    assertSameState(e, a, where);
                }
            }
        }
    }
}
