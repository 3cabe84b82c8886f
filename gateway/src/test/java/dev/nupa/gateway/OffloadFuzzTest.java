package dev.nupa.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.nupa.ip.wire.Checksum;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Fuzzes the offloads with what Linux (or anyone writing to the TAP) may hand over: {@link TcpSegmenter} on any
 * bytes and segment size never throws, and when it cuts, every segment has a good IP and TCP checksum, fits 64 KiB,
 * carries the super-frame's headers with its sequence number advanced, and the segments' payloads put together are
 * the super-frame's; {@link TcpCoalescer} joining those segments again never throws and gives back the same payload.
 * docs/fuzzing.md says how to run it; seeds live in {@code dev/nupa/gateway/OffloadFuzzTestInputs/offload/}.
 *
 * <p>Input: the segment size (2 bytes, big-endian), then the IPv4 datagram.
 */
class OffloadFuzzTest {
    private final TcpSegmenter segmenter = new TcpSegmenter();
    private final TcpCoalescer coalescer = new TcpCoalescer();

    @FuzzTest
    void offload(byte[] input) {
        if (input.length < 2) {
            return;
        }
        int mss = ((input[0] & 0xFF) << 8) | (input[1] & 0xFF);
        MemorySegment d = MemorySegment.ofArray(java.util.Arrays.copyOfRange(input, 2, input.length));
        int length = (int) d.byteSize();
        List<byte[]> segments = new ArrayList<>();
        int n = segmenter.segment(d, 0, length, mss, (m, o, len) -> segments.add(m.asSlice(o, len).toArray(ValueLayout.JAVA_BYTE)));
        assertEquals(n < 0 ? 0 : n, segments.size());
        if (n < 0) {
            return;
        }
        int ihl = (d.get(ValueLayout.JAVA_BYTE, 0) & 0xF) * 4;
        int thl = ((d.get(ValueLayout.JAVA_BYTE, ihl + 12) & 0xFF) >>> 4) * 4;
        int total = d.get(EthernetFrame.BE_SHORT, 2) & 0xFFFF;
        int seq = d.get(EthernetFrame.BE_INT, ihl + 4);
        ByteArrayOutputStream payload = new ByteArrayOutputStream();
        for (byte[] b : segments) {
            MemorySegment s = MemorySegment.ofArray(b);
            assertTrue(b.length <= TcpCoalescer.MAX_DATAGRAM && b.length >= ihl + thl);
            assertEquals(b.length, s.get(EthernetFrame.BE_SHORT, 2) & 0xFFFF);
            assertTrue(Checksum.verifies(s, 0, ihl), "IP checksum");
            int sum = Checksum.pseudoHeaderSum(s.get(EthernetFrame.BE_INT, 12), s.get(EthernetFrame.BE_INT, 16), 6, b.length - ihl);
            assertEquals(0xFFFF, Checksum.sum(s, ihl, b.length - ihl, sum), "TCP checksum");
            assertEquals(seq + payload.size(), s.get(EthernetFrame.BE_INT, ihl + 4), "sequence number");
            assertEquals(-1, MemorySegment.mismatch(s, 12, 20, d, 12, 20), "addresses");
            assertEquals(-1, MemorySegment.mismatch(s, ihl, ihl + 4, d, ihl, ihl + 4), "ports");
            payload.write(b, ihl + thl, b.length - ihl - thl);
        }
        byte[] all = payload.toByteArray();
        assertEquals(total - ihl - thl, all.length);
        assertEquals(-1, MemorySegment.mismatch(MemorySegment.ofArray(all), 0, all.length, d, ihl + thl, total));

        // Join them again: whatever joins, the bytes come back in order, once.
        ByteArrayOutputStream joined = new ByteArrayOutputStream();
        for (byte[] b : segments) {
            MemorySegment s = MemorySegment.ofArray(b);
            if (!coalescer.extend(1, s, 0, b.length)) {
                drain(joined);
                if (!coalescer.start(1, 2, s, 0, b.length)) {
                    joined.write(b, ihl + thl, b.length - ihl - thl);
                }
            }
        }
        drain(joined);
        assertEquals(-1, java.util.Arrays.mismatch(all, joined.toByteArray()));
    }

    private void drain(ByteArrayOutputStream into) {
        if (coalescer.segments() == 0) {
            return;
        }
        int len = coalescer.finish();
        MemorySegment b = coalescer.buffer();
        int ip = VnetHeader.LENGTH + EthernetFrame.HEADER;
        int thl = ((b.get(ValueLayout.JAVA_BYTE, ip + 32) & 0xFF) >>> 4) * 4;
        assertEquals(len - ip, b.get(EthernetFrame.BE_SHORT, ip + 2) & 0xFFFF);
        into.write(b.asSlice(ip + 20 + thl, len - ip - 20 - thl).toArray(ValueLayout.JAVA_BYTE), 0, len - ip - 20 - thl);
    }
}
