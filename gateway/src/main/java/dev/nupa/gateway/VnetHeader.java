package dev.nupa.gateway;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The 10-byte {@code struct virtio_net_hdr} (virtio 1.2 section 5.1.6; Linux include/uapi/linux/virtio_net.h) that
 * precedes every frame read from or written to a TAP opened with {@code IFF_VNET_HDR}: how the frame's checksum is
 * left to be done ({@link #NEEDS_CSUM} from {@link #csumStart}, stored at {@link #csumOffset} past it) and, for a
 * super-frame, how it is to be cut ({@link #gsoType}, {@link #gsoSize} bytes of payload a segment). Little-endian,
 * as a TAP set to little-endian headers and every x86 and ARM64 host uses. Static accessors over a segment.
 */
final class VnetHeader {
    static final int LENGTH = 10;
    /** The checksum is partial: the field holds the pseudo header's sum; sum from csum_start on and store it. */
    static final int NEEDS_CSUM = 1;
    /** The checksum was verified (CHECKSUM_UNNECESSARY). */
    static final int DATA_VALID = 2;
    static final int GSO_NONE = 0;
    static final int GSO_TCPV4 = 1;
    /** Flag on gso_type: the segments carry ECN's CWR on the first only. */
    static final int GSO_ECN = 0x80;

    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private VnetHeader() {
    }

    static int flags(MemorySegment s, long o) {
        return s.get(ValueLayout.JAVA_BYTE, o) & 0xFF;
    }

    static int gsoType(MemorySegment s, long o) {
        return s.get(ValueLayout.JAVA_BYTE, o + 1) & 0xFF;
    }

    static int gsoSize(MemorySegment s, long o) {
        return s.get(LE_SHORT, o + 4) & 0xFFFF;
    }

    static int csumStart(MemorySegment s, long o) {
        return s.get(LE_SHORT, o + 6) & 0xFFFF;
    }

    static int csumOffset(MemorySegment s, long o) {
        return s.get(LE_SHORT, o + 8) & 0xFFFF;
    }

    /** Writes a header: {@code hdrLen} is the bytes of headers before the payload (Ethernet, IP, TCP). */
    static void write(MemorySegment s, long o, int flags, int gsoType, int hdrLen, int gsoSize, int csumStart, int csumOffset) {
        s.set(ValueLayout.JAVA_BYTE, o, (byte) flags);
        s.set(ValueLayout.JAVA_BYTE, o + 1, (byte) gsoType);
        s.set(LE_SHORT, o + 2, (short) hdrLen);
        s.set(LE_SHORT, o + 4, (short) gsoSize);
        s.set(LE_SHORT, o + 6, (short) csumStart);
        s.set(LE_SHORT, o + 8, (short) csumOffset);
    }

    /** A header that asks nothing: a whole frame with its checksums done. */
    static void clear(MemorySegment s, long o) {
        write(s, o, 0, GSO_NONE, 0, 0, 0, 0);
    }
}
