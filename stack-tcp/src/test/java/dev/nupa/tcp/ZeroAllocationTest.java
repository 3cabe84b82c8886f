package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * A connection's SACK loss recovery allocates nothing, measured with the JVM's per-thread allocation
 * counter (the wire views have their own test, {@code dev.nupa.tcp.wire.ZeroAllocationTest}).
 */
class ZeroAllocationTest {

    /**
     * RFC 6675 recovery on the scoreboard allocates nothing: a connection whose output
     * drops everything is fed, round after round, duplicate ACKs SACKing more and more (limited
     * transmit, entry into recovery, NextSeg), then the ACK that ends recovery.
     */
    @Test
    void sackLossRecoveryAllocatesNothing() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        TcpConfig cfg = TcpConfig.defaults(1500).withOptions(false, false, true).withDelayedAck(0).withNoDelay(true);
        long[] sent = {0};
        TcpConnection c = new TcpConnection(0x0A000001, 1000, 0x0A000002, 2000, cfg, (conn, s) -> {
            sent[0] += s.payloadLength + 1;
            return true;
        }, null);
        long now = 1_000_000_000L;
        c.connect(1000, now);
        Segment in = new Segment();
        in.flags = Segment.SYN | Segment.ACK;
        in.seq = 5000;
        in.ack = 1001;
        in.window = 65_535;
        in.mss = 1460;
        in.sackPermitted = true;
        c.onSegment(in, now);
        MemorySegment data = MemorySegment.ofArray(new byte[64 * 1024]);
        long allocated = -1;
        int rounds = 0;
        for (; rounds < 20 && allocated != 0; rounds++) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 2_000; i++) {
                now += 1_000_000L;
                c.write(data, 0, Math.min(c.writable(), 20 * 1460), now);
                int una = c.sndUna();
                int max = c.sndMax();
                for (int k = 1; k <= 4 && una + 1460 + k * 300 <= max; k++) {
                    ack(in, una, 1460, k * 300); // SACKs [una + 1460, una + 1460 + k * 300): new each time
                    c.onSegment(in, now);
                }
                ack(in, c.sndMax(), 0, 0);
                c.onSegment(in, now);
            }
            allocated = threads.getCurrentThreadAllocatedBytes() - before;
        }
        assertEquals(0, allocated, "bytes allocated by 2,000 rounds of SACK recovery, after 20 tries");
        assertEquals(TcpState.ESTABLISHED, c.state());
        assertTrue(c.fastRetransmits() >= rounds * 2_000 / 2,
                "recovery ran: " + c.fastRetransmits() + " in " + rounds + " rounds");
        assertTrue(sent[0] > 0);
    }

    private static void ack(Segment in, int ack, int sackFrom, int sackLength) {
        in.clear();
        in.flags = Segment.ACK;
        in.seq = 5001;
        in.ack = ack;
        in.window = 65_535;
        if (sackLength > 0) {
            in.sackBlocks = 1;
            in.sackLeft[0] = ack + sackFrom;
            in.sackRight[0] = ack + sackFrom + sackLength;
        }
    }
}
