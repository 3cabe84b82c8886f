package dev.nupa.tcp;

import static dev.nupa.tcp.wire.WireBytes.LOCALHOST;
import static dev.nupa.tcp.wire.WireBytes.hex;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tcp.wire.Captured;
import dev.nupa.tcp.wire.Seq;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * A steady-state segment allocates nothing. Measured with the JVM's per-thread
 * allocation counter around what the datapath does per segment: wrap and verify a received one,
 * parse its options, and emit an answer (header, options, checksum) in place; and around a
 * connection's SACK loss recovery.
 */
class ZeroAllocationTest {

    @Test
    void wrappingParsingOptionsAndEmittingSegmentsAllocatesNothing() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        byte[] syn = hex(Captured.SYN);
        byte[] sack = hex(Captured.SACK_TWO);
        int a = 0x0A000001;
        int b = 0x0A000002;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(syn.length);
            MemorySegment inSack = arena.allocate(sack.length);
            MemorySegment out = arena.allocate(80);
            MemorySegment.copy(syn, 0, in, ValueLayout.JAVA_BYTE, 0, syn.length);
            MemorySegment.copy(sack, 0, inSack, ValueLayout.JAVA_BYTE, 0, sack.length);
            TcpHeader rx = new TcpHeader();
            TcpHeader tx = new TcpHeader();
            TcpOptions options = new TcpOptions();
            TcpOptions answer = new TcpOptions();
            long sink = 0;
            for (int round = 0; round < 3; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 20_000; i++) {
                    sink += rx.wrap(in, 20, syn.length - 20, LOCALHOST, LOCALHOST, true);
                    sink += options.parse(rx);
                    sink += rx.wrap(inSack, 20, sack.length - 20, b, a, true);
                    sink += options.parse(rx);
                    sink += Seq.inWindow(options.sackLeft(1), rx.acknowledgmentNumber(), 65535) ? 0 : 1;

                    // A SYN-ACK with Linux's options, in place.
                    answer.clear().setMss(1460).setSackPermitted(true).setTimestamps(i, options.tsVal()).setWindowScale(7);
                    int headerLength = TcpHeader.MIN_HEADER + answer.length();
                    tx.wrapForWrite(out, 0, headerLength);
                    answer.emit(out, tx.optionsOffset());
                    tx.setSourcePort(5001).setDestinationPort(41000).setSequenceNumber(i)
                            .setAcknowledgmentNumber(Seq.max(i, rx.sequenceNumber()) + 1).setHeaderLength(headerLength)
                            .setFlags(TcpHeader.SYN | TcpHeader.ACK).setWindow(65483).setUrgentPointer(0)
                            .fillChecksum(LOCALHOST, LOCALHOST);
                    sink += tx.wrap(out, 0, headerLength, LOCALHOST, LOCALHOST, true);
                }
                long allocated = threads.getCurrentThreadAllocatedBytes() - before;
                if (round == 2) {
                    assertEquals(0, allocated, "bytes allocated by 20,000 rounds of two segments in, one out");
                }
            }
            assertEquals(0, sink);
        }
    }

    /**
     * RFC 6675 recovery on the scoreboard allocates nothing either: a connection whose output
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
