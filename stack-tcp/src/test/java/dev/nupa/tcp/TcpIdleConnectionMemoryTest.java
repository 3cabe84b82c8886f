package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * 10,000 concurrent connections on one node, idle after a request and its answer: what each holds of the
 * Java heap, beyond the buffers it was configured with (native memory, counted apart by the layer's
 * budget). Measured as what the two layers allocate while the connections open, exchange a byte each way
 * and settle: nothing else allocates meanwhile (the stack allocates nothing per segment), so it is what the
 * connections keep. Goal: under 4 KB a connection.
 */
class TcpIdleConnectionMemoryTest {
    static final int PORT = 7000;
    static final int CONNECTIONS = 10_000;
    /** Small buffers (an MSS of 1460 fits), so the test holds 80 MB of native memory, not gigabytes. */
    static final TcpConfig CONFIG = TcpConfig.defaults(1500).withDelayedAck(0).withNoDelay(true).withBuffers(2048, 2048);

    private final LayerWire wire = new LayerWire(2);

    @AfterEach
    void close() {
        wire.close();
    }

    @Test
    void anIdleConnectionHoldsUnder4KbOfHeapBeyondItsBuffers() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        TcpLayer server = wire.tcp(0, CONFIG);
        MemorySegment scratch = MemorySegment.ofArray(new byte[16]);
        TcpConnection.Events echo = wire.echo(false);
        List<TcpConnection> accepted = new ArrayList<>(CONNECTIONS);
        server.listen(PORT, 1024, CONFIG, c -> {
            accepted.add(c);
            server.setEvents(c, echo);
        });
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection.Events drain = new TcpConnection.Events() {
            @Override
            public void onReadable(TcpConnection c) {
                c.read(scratch, 0, 16, wire.now);
            }
        };
        List<TcpConnection> open = new ArrayList<>(CONNECTIONS);
        MemorySegment one = MemorySegment.ofArray(new byte[] {42});
        // The lists' own arrays are made before counting; every connection object is made while counting.
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < CONNECTIONS; i++) {
            TcpConnection c = client.connect(LayerWire.ip(0), PORT, CONFIG, drain, wire.now);
            open.add(c);
            wire.pump();
            c.write(one, 0, 1, wire.now);
            wire.pump();
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertEquals(CONNECTIONS, accepted.size());
        assertEquals(CONNECTIONS, client.connections());
        assertEquals(CONNECTIONS, server.connections());
        for (TcpConnection c : open) {
            assertEquals(TcpState.ESTABLISHED, c.state());
        }
        double perEnd = allocated / (2.0 * CONNECTIONS);
        long buffers = client.bufferMemoryUsed() + server.bufferMemoryUsed();
        System.out.printf(Locale.ROOT, "TcpIdleConnectionMemoryTest: %,d idle connections: %.0f B of heap per connection end"
                + " (beyond its buffers); buffers %,d B in all (%.0f B per end, configured 2 x 2 KiB)%n",
                CONNECTIONS, perEnd, buffers, buffers / (2.0 * CONNECTIONS));
        assertTrue(perEnd < 4096, "heap per idle connection end: " + perEnd + " B");
    }
}
