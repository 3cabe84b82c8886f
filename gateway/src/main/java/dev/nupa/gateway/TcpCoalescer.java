package dev.nupa.gateway;

import dev.nupa.ip.wire.Checksum;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Segmentation offload toward Linux: consecutive TCP/IPv4 segments of one flow that the gateway sends to the TAP
 * within one round of its loop are joined into one super-frame that Linux takes whole ({@code
 * VIRTIO_NET_HDR_GSO_TCPV4}, {@code NEEDS_CSUM}): one write instead of dozens, and one packet for Linux's stack to
 * receive, as GRO would have made of them. Segments join when they are plain data (ACK, perhaps PSH; no SYN,
 * FIN, RST, URG or ECN marks), follow one another in sequence, carry the same IP and TCP headers but for
 * sequence number and checksum, are all {@code mss} bytes but the last, and add up to at most 64 KiB. Each
 * segment's TCP checksum is verified before it joins, since the super-frame's is left to Linux: a segment
 * damaged on its way keeps its bad checksum and is written alone, for Linux to drop.
 *
 * <p>The buffer holds {@code [virtio_net_hdr][Ethernet][IPv4][TCP][payload...]}; {@link #finish} completes it.
 * One per interface, on its loop; allocates nothing.
 */
final class TcpCoalescer {
    static final int MAX_DATAGRAM = 65_535;
    private static final int PROTOCOL_TCP = 6;
    private static final int IP = VnetHeader.LENGTH + EthernetFrame.HEADER;
    private static final int ACK = 0x10;
    /** Flags a joined segment may carry: ACK (required) and PSH. */
    private static final int PLAIN = ACK | TcpSegmenter.PSH;

    private final MemorySegment buf = Arena.ofAuto().allocate(IP + MAX_DATAGRAM, 8);
    private int segments;
    private long to;
    private int length; // of the IPv4 datagram held
    private int thl;
    private int mss;
    private int nextSeq;
    private boolean closed; // a short or PSH segment ended the run

    /** How many segments it holds (0: nothing). */
    int segments() {
        return segments;
    }

    /**
     * Appends the datagram of {@code length} bytes at {@code offset} of {@code d}, for MAC {@code to}, to the run
     * it holds; false when it does not continue that run (or nothing is held), and nothing changed.
     */
    boolean extend(long to, MemorySegment d, long offset, int length) {
        if (segments == 0 || closed || to != this.to || !plain(d, offset, length)) {
            return false;
        }
        int ihl = 20;
        int n = length - ihl - thl;
        if (n > mss || this.length + n > MAX_DATAGRAM
                || d.get(EthernetFrame.BE_INT, offset + ihl + 4) != nextSeq
                || thl != ((d.get(ValueLayout.JAVA_BYTE, offset + ihl + 12) & 0xFF) >>> 4) * 4
                // the same addresses, TOS, TTL; ports; acknowledgment; window; options
                || d.get(ValueLayout.JAVA_BYTE, offset + 1) != buf.get(ValueLayout.JAVA_BYTE, IP + 1)
                || d.get(ValueLayout.JAVA_BYTE, offset + 8) != buf.get(ValueLayout.JAVA_BYTE, IP + 8)
                || MemorySegment.mismatch(d, offset + 12, offset + 24, buf, IP + 12, IP + 24) != -1
                || MemorySegment.mismatch(d, offset + ihl + 8, offset + ihl + 12, buf, IP + ihl + 8, IP + ihl + 12) != -1
                || MemorySegment.mismatch(d, offset + ihl + 14, offset + ihl + 16, buf, IP + ihl + 14, IP + ihl + 16) != -1
                || MemorySegment.mismatch(d, offset + ihl + 20, offset + ihl + thl, buf, IP + ihl + 20, IP + ihl + thl) != -1
                || !checksumHolds(d, offset, length)) {
            return false;
        }
        MemorySegment.copy(d, offset + ihl + thl, buf, IP + this.length, n);
        this.length += n;
        nextSeq += n;
        segments++;
        int flags = d.get(ValueLayout.JAVA_BYTE, offset + ihl + 13) & 0xFF;
        if (n < mss || (flags & TcpSegmenter.PSH) != 0) {
            closed = true;
            buf.set(ValueLayout.JAVA_BYTE, IP + ihl + 13, (byte) (buf.get(ValueLayout.JAVA_BYTE, IP + ihl + 13) | flags));
        }
        return true;
    }

    /**
     * Starts a run with the datagram (replacing nothing: call it when empty); false when the datagram should go
     * at once: not plain TCP data, a checksum that does not hold, or PSH (the end of what the sender had: waiting
     * for more would only delay it).
     */
    boolean start(long to, long from, MemorySegment d, long offset, int length) {
        if (!plain(d, offset, length) || (d.get(ValueLayout.JAVA_BYTE, offset + 33) & TcpSegmenter.PSH) != 0
                || !checksumHolds(d, offset, length)) {
            return false;
        }
        int ihl = 20;
        this.to = to;
        this.thl = ((d.get(ValueLayout.JAVA_BYTE, offset + ihl + 12) & 0xFF) >>> 4) * 4;
        this.mss = length - ihl - thl;
        this.length = length;
        this.nextSeq = d.get(EthernetFrame.BE_INT, offset + ihl + 4) + mss;
        this.closed = false;
        this.segments = 1;
        EthernetFrame.writeHeader(buf, VnetHeader.LENGTH, to, from, EthernetFrame.TYPE_IPV4);
        MemorySegment.copy(d, offset, buf, IP, length);
        return true;
    }

    /**
     * Completes the super-frame (or the lone segment) and returns its length from the virtio header on, ready for
     * {@link #buffer()} to be written; the coalescer is empty afterwards.
     */
    int finish() {
        int total = length;
        if (segments == 1) {
            VnetHeader.clear(buf, 0); // as it came, its own checksums intact
        } else {
            int ihl = 20;
            buf.set(EthernetFrame.BE_SHORT, IP + 2, (short) total);
            buf.set(EthernetFrame.BE_SHORT, IP + 10, (short) 0);
            buf.set(EthernetFrame.BE_SHORT, IP + 10, (short) Checksum.compute(buf, IP, ihl));
            // CHECKSUM_PARTIAL: the field holds the pseudo header's sum; Linux sums from csum_start on.
            int src = buf.get(EthernetFrame.BE_INT, IP + 12);
            int dst = buf.get(EthernetFrame.BE_INT, IP + 16);
            buf.set(EthernetFrame.BE_SHORT, IP + ihl + 16, (short) Checksum.pseudoHeaderSum(src, dst, PROTOCOL_TCP, total - ihl));
            VnetHeader.write(buf, 0, VnetHeader.NEEDS_CSUM, VnetHeader.GSO_TCPV4, EthernetFrame.HEADER + ihl + thl, mss,
                    EthernetFrame.HEADER + ihl, 16);
        }
        segments = 0;
        return VnetHeader.LENGTH + EthernetFrame.HEADER + total;
    }

    MemorySegment buffer() {
        return buf;
    }

    /** IPv4 without options or fragments, DF set, TCP with data and only ACK (and PSH) among its flags. */
    private static boolean plain(MemorySegment d, long offset, int length) {
        if (length < 41 || length > MAX_DATAGRAM || (d.get(ValueLayout.JAVA_BYTE, offset) & 0xFF) != 0x45
                || (d.get(ValueLayout.JAVA_BYTE, offset + 9) & 0xFF) != PROTOCOL_TCP
                || (d.get(EthernetFrame.BE_SHORT, offset + 6) & 0xFFFF) != 0x4000
                || (d.get(EthernetFrame.BE_SHORT, offset + 2) & 0xFFFF) != length) {
            return false;
        }
        int thl = ((d.get(ValueLayout.JAVA_BYTE, offset + 32) & 0xFF) >>> 4) * 4;
        int flags = d.get(ValueLayout.JAVA_BYTE, offset + 33) & 0xFF;
        return thl >= 20 && 20 + thl < length && (flags & ACK) != 0 && (flags & ~PLAIN) == 0;
    }

    private static boolean checksumHolds(MemorySegment d, long offset, int length) {
        int sum = Checksum.pseudoHeaderSum(d.get(EthernetFrame.BE_INT, offset + 12), d.get(EthernetFrame.BE_INT, offset + 16),
                PROTOCOL_TCP, length - 20);
        return Checksum.sum(d, offset + 20, length - 20, sum) == 0xFFFF;
    }
}
