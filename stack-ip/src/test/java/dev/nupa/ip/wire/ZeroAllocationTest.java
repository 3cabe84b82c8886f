package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.WireBytes.hex;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * A steady-state packet allocates nothing. Measured with the JVM's per-thread
 * allocation counter around receive-side parsing and the in-place echo-to-reply rewrite (the JMH
 * -prof gc figure belongs to bench).
 */
class ZeroAllocationTest {

    @Test
    void wrappingVerifyingAndRewritingPacketsInPlaceAllocatesNothing() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        byte[] echo = hex(Captured.ECHO_REQUEST);
        byte[] udpBytes = hex(Captured.UDP_HELLO);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ping = arena.allocate(echo.length);
            MemorySegment dgram = arena.allocate(udpBytes.length);
            MemorySegment.copy(echo, 0, ping, ValueLayout.JAVA_BYTE, 0, echo.length);
            MemorySegment.copy(udpBytes, 0, dgram, ValueLayout.JAVA_BYTE, 0, udpBytes.length);
            Ipv4Header ip = new Ipv4Header();
            IcmpHeader icmp = new IcmpHeader();
            UdpHeader udp = new UdpHeader();
            long sink = 0;
            for (int round = 0; round < 3; round++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < 20_000; i++) {
                    sink += ip.wrap(ping, 0, echo.length);
                    sink += icmp.wrap(ping, ip.payloadOffset(), ip.payloadLength());
                    icmp.echoRequestToReply();
                    icmp.setType(IcmpHeader.TYPE_ECHO_REQUEST).fillChecksum();
                    sink += IcmpHeader.mayAnswerWithError(ip, false) ? 1 : 0;
                    sink += ip.wrap(dgram, 0, udpBytes.length);
                    sink += udp.wrap(dgram, ip.payloadOffset(), ip.payloadLength(), ip.sourceAddress(),
                            ip.destinationAddress(), true);
                    udp.fillChecksum(ip.sourceAddress(), ip.destinationAddress());
                    ip.decrementTtl().setTtl(64).fillChecksum();
                }
                long allocated = threads.getCurrentThreadAllocatedBytes() - before;
                if (round == 2) {
                    assertEquals(0, allocated, "bytes allocated by 20,000 packets");
                }
            }
            assertEquals(0, sink);
        }
    }
}
