package dev.nupa.tcp.wire;

import static dev.nupa.tcp.wire.WireBytes.LOCALHOST;
import static dev.nupa.tcp.wire.WireBytes.hex;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * A steady-state segment allocates nothing. Measured with the JVM's per-thread
 * allocation counter around what the datapath does per segment: wrap and verify a received one,
 * parse its options, and emit an answer (header, options, checksum) in place.
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
}
