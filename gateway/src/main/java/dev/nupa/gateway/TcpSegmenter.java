package dev.nupa.gateway;

import dev.nupa.ip.wire.Checksum;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Generic segmentation offload done in software: cuts a TCP/IPv4 super-frame that Linux handed the TAP with
 * {@code VIRTIO_NET_HDR_GSO_TCPV4} into the segments it stands for, as Linux's own {@code tcp_gso_segment}
 * would have put them on the wire: {@code mss} bytes of payload each (the last the rest), the IP header's
 * identification counting up, the sequence number advancing, FIN and PSH on the last segment only, CWR on
 * the first only (RFC 3168 6.1.2), and every IP and TCP checksum computed whole. One per interface, on its
 * loop; allocates nothing.
 */
final class TcpSegmenter {
    /** Where each segment goes; {@code [offset, offset + length)} is valid only during the call. */
    interface Sink {
        void segment(MemorySegment datagram, long offset, int length);
    }

    static final int FIN = 0x01;
    static final int PSH = 0x08;
    static final int CWR = 0x80;
    private static final int PROTOCOL_TCP = 6;

    private final MemorySegment out = Arena.ofAuto().allocate(65_536, 8);

    /**
     * Cuts the IPv4 datagram of {@code length} bytes at {@code offset} of {@code m} into segments of {@code mss}
     * payload bytes and hands each to {@code sink}; returns how many, or -1 when it is not a whole TCP/IPv4
     * datagram whose headers fit (nothing was handed on).
     */
    int segment(MemorySegment m, long offset, int length, int mss, Sink sink) {
        if (length < 40 || mss < 1) {
            return -1;
        }
        int vihl = m.get(ValueLayout.JAVA_BYTE, offset) & 0xFF;
        int ihl = (vihl & 0xF) * 4;
        int total = m.get(EthernetFrame.BE_SHORT, offset + 2) & 0xFFFF;
        if (vihl >>> 4 != 4 || ihl < 20 || (m.get(ValueLayout.JAVA_BYTE, offset + 9) & 0xFF) != PROTOCOL_TCP
                || (m.get(EthernetFrame.BE_SHORT, offset + 6) & 0x3FFF) != 0 || ihl + 20 > length) {
            return -1;
        }
        // A super-frame's total length is its own (it is at most 64 KiB here); trailing bytes are padding.
        if (total < ihl + 20 || total > length) {
            return -1;
        }
        int thl = ((m.get(ValueLayout.JAVA_BYTE, offset + ihl + 12) & 0xFF) >>> 4) * 4;
        int headers = ihl + thl;
        if (thl < 20 || headers > total) {
            return -1;
        }
        int payload = total - headers;
        int src = m.get(EthernetFrame.BE_INT, offset + 12);
        int dst = m.get(EthernetFrame.BE_INT, offset + 16);
        int id = m.get(EthernetFrame.BE_SHORT, offset + 4) & 0xFFFF;
        int seq = m.get(EthernetFrame.BE_INT, offset + ihl + 4);
        int flags = m.get(ValueLayout.JAVA_BYTE, offset + ihl + 13) & 0xFF;
        int count = 0;
        int at = 0;
        do {
            int n = Math.min(mss, payload - at);
            boolean first = at == 0;
            boolean last = at + n >= payload;
            MemorySegment.copy(m, offset, out, 0, headers);
            MemorySegment.copy(m, offset + headers + at, out, headers, n);
            int len = headers + n;
            out.set(EthernetFrame.BE_SHORT, 2, (short) len);
            out.set(EthernetFrame.BE_SHORT, 4, (short) (id + count));
            out.set(EthernetFrame.BE_SHORT, 10, (short) 0);
            out.set(EthernetFrame.BE_SHORT, 10, (short) Checksum.compute(out, 0, ihl));
            out.set(EthernetFrame.BE_INT, ihl + 4, seq + at);
            int f = flags & (last ? 0xFF : ~(FIN | PSH)) & (first ? 0xFF : ~CWR);
            out.set(ValueLayout.JAVA_BYTE, ihl + 13, (byte) f);
            out.set(EthernetFrame.BE_SHORT, ihl + 16, (short) 0);
            int sum = Checksum.pseudoHeaderSum(src, dst, PROTOCOL_TCP, thl + n);
            out.set(EthernetFrame.BE_SHORT, ihl + 16, (short) Checksum.finish(Checksum.sum(out, ihl, thl + n, sum)));
            sink.segment(out, 0, len);
            count++;
            at += n;
        } while (at < payload);
        return count;
    }
}
