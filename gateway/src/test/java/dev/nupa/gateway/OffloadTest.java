package dev.nupa.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.wire.Checksum;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Segmentation offload in software, both ways: {@link TcpSegmenter} cuts Linux's super-frames, {@link TcpCoalescer} joins ours. */
class OffloadTest {
    private static final int SRC = 0xC0A84D01; // 192.168.77.1
    private static final int DST = 0x0A000002; // 10.0.0.2
    private static final int ACK = 0x10;
    private static final int PSH = 0x08;
    private static final int FIN = 0x01;
    private static final int CWR = 0x80;
    private static final int THL = 32; // 20 bytes and the 12 of a timestamp option

    /** A TCP/IPv4 datagram (DF, TTL 64, id 7) with a timestamp option and every checksum right. */
    private static MemorySegment datagram(int seq, int flags, byte[] payload, int from, int n) {
        int total = 20 + THL + n;
        MemorySegment d = Arena.ofAuto().allocate(total);
        d.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x45);
        d.set(EthernetFrame.BE_SHORT, 2, (short) total);
        d.set(EthernetFrame.BE_SHORT, 4, (short) 7);
        d.set(EthernetFrame.BE_SHORT, 6, (short) 0x4000);
        d.set(ValueLayout.JAVA_BYTE, 8, (byte) 64);
        d.set(ValueLayout.JAVA_BYTE, 9, (byte) 6);
        d.set(EthernetFrame.BE_INT, 12, SRC);
        d.set(EthernetFrame.BE_INT, 16, DST);
        d.set(EthernetFrame.BE_SHORT, 10, (short) Checksum.compute(d, 0, 20));
        d.set(EthernetFrame.BE_SHORT, 20, (short) 40000);
        d.set(EthernetFrame.BE_SHORT, 22, (short) 7);
        d.set(EthernetFrame.BE_INT, 24, seq);
        d.set(EthernetFrame.BE_INT, 28, 0x1000);
        d.set(ValueLayout.JAVA_BYTE, 32, (byte) ((THL / 4) << 4));
        d.set(ValueLayout.JAVA_BYTE, 33, (byte) flags);
        d.set(EthernetFrame.BE_SHORT, 34, (short) 501);
        d.set(EthernetFrame.BE_INT, 40, 0x0101080A); // NOP, NOP, timestamps
        d.set(EthernetFrame.BE_INT, 44, 12345);
        d.set(EthernetFrame.BE_INT, 48, 678);
        MemorySegment.copy(MemorySegment.ofArray(payload), from, d, 20 + THL, n);
        tcpChecksum(d, total);
        return d;
    }

    private static void tcpChecksum(MemorySegment d, int total) {
        d.set(EthernetFrame.BE_SHORT, 36, (short) 0);
        int sum = Checksum.pseudoHeaderSum(SRC, DST, 6, total - 20);
        d.set(EthernetFrame.BE_SHORT, 36, (short) Checksum.finish(Checksum.sum(d, 20, total - 20, sum)));
    }

    private static boolean tcpChecksumHolds(MemorySegment d, long off, int total) {
        int sum = Checksum.pseudoHeaderSum(d.get(EthernetFrame.BE_INT, off + 12), d.get(EthernetFrame.BE_INT, off + 16), 6, total - 20);
        return Checksum.sum(d, off + 20, total - 20, sum) == 0xFFFF;
    }

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }

    @Test
    void aSuperFrameIsCutAsLinuxWouldHavePutItOnTheWire() {
        byte[] payload = bytes(10_000);
        MemorySegment sup = datagram(0xFFFFF000, ACK | PSH | FIN | CWR, payload, 0, payload.length);
        List<byte[]> segments = new ArrayList<>();
        int n = new TcpSegmenter().segment(sup, 0, (int) sup.byteSize(), 1448, (d, o, len) -> segments.add(d.asSlice(o, len).toArray(ValueLayout.JAVA_BYTE)));
        assertEquals(7, n); // 6 x 1448 + 1312
        assertEquals(7, segments.size());
        int at = 0;
        for (int i = 0; i < n; i++) {
            MemorySegment s = MemorySegment.ofArray(segments.get(i));
            int len = (int) s.byteSize();
            int data = len - 20 - THL;
            assertEquals(i < 6 ? 1448 : 1312, data);
            assertEquals(len, s.get(EthernetFrame.BE_SHORT, 2) & 0xFFFF);
            assertEquals(7 + i, s.get(EthernetFrame.BE_SHORT, 4) & 0xFFFF, "the identification counts up");
            assertTrue(Checksum.verifies(s, 0, 20), "IP header checksum of segment " + i);
            assertTrue(tcpChecksumHolds(s, 0, len), "TCP checksum of segment " + i);
            assertEquals(0xFFFFF000 + at, s.get(EthernetFrame.BE_INT, 24), "sequence number, wrapping");
            int flags = s.get(ValueLayout.JAVA_BYTE, 33) & 0xFF;
            assertEquals(ACK | (i == 0 ? CWR : 0) | (i == 6 ? PSH | FIN : 0), flags, "flags of segment " + i);
            assertEquals(-1, s.asSlice(20 + THL, data).mismatch(MemorySegment.ofArray(payload).asSlice(at, data)));
            assertEquals(-1, s.asSlice(40, 12).mismatch(sup.asSlice(40, 12)), "options copied");
            at += data;
        }
        assertEquals(payload.length, at);
    }

    @Test
    void whatIsNotAWholeTcpDatagramIsNotCut() {
        byte[] payload = bytes(3000);
        MemorySegment udp = datagram(1, ACK, payload, 0, 3000);
        udp.set(ValueLayout.JAVA_BYTE, 9, (byte) 17);
        TcpSegmenter s = new TcpSegmenter();
        TcpSegmenter.Sink none = (d, o, len) -> { throw new AssertionError("nothing is handed on"); };
        assertEquals(-1, s.segment(udp, 0, (int) udp.byteSize(), 1448, none));
        MemorySegment fragment = datagram(1, ACK, payload, 0, 3000);
        fragment.set(EthernetFrame.BE_SHORT, 6, (short) 0x2000); // MF
        assertEquals(-1, s.segment(fragment, 0, (int) fragment.byteSize(), 1448, none));
        MemorySegment tooLong = datagram(1, ACK, payload, 0, 3000);
        assertEquals(-1, s.segment(tooLong, 0, 100, 1448, none), "a total length past the bytes read");
        assertEquals(-1, s.segment(tooLong, 0, (int) tooLong.byteSize(), 0, none), "a segment size of 0");
    }

    @Test
    void consecutiveSegmentsOfAFlowJoinIntoOneSuperFrameThatLinuxCompletes() {
        byte[] payload = bytes(5000);
        TcpCoalescer c = new TcpCoalescer();
        long to = 0x0200_0000_0001L;
        long from = 0x024E_0000_0002L;
        MemorySegment first = datagram(100, ACK, payload, 0, 1448);
        assertTrue(c.start(to, from, first, 0, (int) first.byteSize()));
        assertTrue(c.extend(to, datagram(100 + 1448, ACK, payload, 1448, 1448), 0, 20 + THL + 1448));
        assertTrue(c.extend(to, datagram(100 + 2896, ACK, payload, 2896, 1448), 0, 20 + THL + 1448));
        MemorySegment last = datagram(100 + 4344, ACK | PSH, payload, 4344, 656);
        assertTrue(c.extend(to, last, 0, (int) last.byteSize()), "a short PSH segment ends the run");
        assertFalse(c.extend(to, datagram(100 + 5000, ACK, payload, 0, 100), 0, 20 + THL + 100), "nothing joins after it");
        assertEquals(4, c.segments());
        int length = c.finish();
        assertEquals(0, c.segments());
        MemorySegment b = c.buffer();
        int ip = VnetHeader.LENGTH + EthernetFrame.HEADER;
        assertEquals(ip + 20 + THL + 5000, length);
        assertEquals(VnetHeader.NEEDS_CSUM, VnetHeader.flags(b, 0));
        assertEquals(VnetHeader.GSO_TCPV4, VnetHeader.gsoType(b, 0));
        assertEquals(1448, VnetHeader.gsoSize(b, 0));
        assertEquals(EthernetFrame.HEADER + 20, VnetHeader.csumStart(b, 0));
        assertEquals(16, VnetHeader.csumOffset(b, 0));
        EthernetFrame f = new EthernetFrame();
        assertTrue(f.wrap(b, VnetHeader.LENGTH, length - VnetHeader.LENGTH));
        assertEquals(to, f.destination());
        assertEquals(from, f.source());
        assertEquals(20 + THL + 5000, b.get(EthernetFrame.BE_SHORT, ip + 2) & 0xFFFF);
        assertTrue(Checksum.verifies(b, ip, 20));
        assertEquals(ACK | PSH, b.get(ValueLayout.JAVA_BYTE, ip + 33) & 0xFF);
        assertEquals(-1, b.asSlice(ip + 20 + THL, 5000).mismatch(MemorySegment.ofArray(payload)));
        // What Linux does with NEEDS_CSUM: sum from csum_start on, the field holding the pseudo header's sum.
        int sum = Checksum.sum(b, VnetHeader.LENGTH + VnetHeader.csumStart(b, 0), THL + 5000);
        b.set(EthernetFrame.BE_SHORT, ip + 20 + 16, (short) Checksum.finish(sum));
        assertTrue(tcpChecksumHolds(b, ip, 20 + THL + 5000), "the completed checksum holds");
    }

    @Test
    void segmentsThatMustGoAloneAreNotJoined() {
        byte[] payload = bytes(3000);
        TcpCoalescer c = new TcpCoalescer();
        long to = 1;
        MemorySegment bad = datagram(1, ACK, payload, 0, 1448);
        bad.set(ValueLayout.JAVA_BYTE, 20 + THL + 5, (byte) (bad.get(ValueLayout.JAVA_BYTE, 20 + THL + 5) ^ 1));
        assertFalse(c.start(to, 2, bad, 0, (int) bad.byteSize()), "a damaged segment goes alone, for Linux to drop");
        for (int flags : new int[] {ACK | PSH, ACK | FIN, 0x02, ACK | 0x04, ACK | CWR, 0}) {
            MemorySegment d = datagram(1, flags, payload, 0, 1448);
            assertFalse(c.start(to, 2, d, 0, (int) d.byteSize()), "flags 0x" + Integer.toHexString(flags) + " go at once");
        }
        MemorySegment empty = datagram(1, ACK, payload, 0, 0);
        assertFalse(c.start(to, 2, empty, 0, (int) empty.byteSize()), "a bare ACK goes at once");

        MemorySegment first = datagram(1, ACK, payload, 0, 1000);
        assertTrue(c.start(to, 2, first, 0, (int) first.byteSize()));
        assertFalse(c.extend(to, datagram(1 + 1001, ACK, payload, 0, 1000), 0, 20 + THL + 1000), "a gap in the sequence");
        assertFalse(c.extend(to + 1, datagram(1 + 1000, ACK, payload, 0, 1000), 0, 20 + THL + 1000), "another neighbor");
        assertFalse(c.extend(to, datagram(1 + 1000, ACK, payload, 0, 1200), 0, 20 + THL + 1200), "longer than the first");
        MemorySegment otherAck = datagram(1 + 1000, ACK, payload, 0, 1000);
        otherAck.set(EthernetFrame.BE_INT, 28, 0x2000);
        tcpChecksum(otherAck, 20 + THL + 1000);
        assertFalse(c.extend(to, otherAck, 0, 20 + THL + 1000), "another acknowledgment number");
        MemorySegment otherTs = datagram(1 + 1000, ACK, payload, 0, 1000);
        otherTs.set(EthernetFrame.BE_INT, 44, 12346);
        tcpChecksum(otherTs, 20 + THL + 1000);
        assertFalse(c.extend(to, otherTs, 0, 20 + THL + 1000), "other options");
        assertEquals(1, c.segments());
        int length = c.finish();
        assertEquals(VnetHeader.LENGTH + EthernetFrame.HEADER + 20 + THL + 1000, length);
        assertEquals(0, VnetHeader.flags(c.buffer(), 0), "a lone segment goes as it came");
        assertEquals(VnetHeader.GSO_NONE, VnetHeader.gsoType(c.buffer(), 0));
        assertTrue(tcpChecksumHolds(c.buffer(), VnetHeader.LENGTH + EthernetFrame.HEADER, 20 + THL + 1000));
    }
}
