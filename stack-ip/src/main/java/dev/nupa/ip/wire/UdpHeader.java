package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.Checksum.BE_LONG;
import static dev.nupa.ip.wire.Checksum.BE_SHORT;

import java.lang.foreign.MemorySegment;

/**
 * A reusable flyweight view of a UDP header (RFC 768).
 *
 * <pre>
 * |          Source Port          |       Destination Port        |
 * |            Length             |           Checksum            |
 * </pre>
 *
 * The checksum covers a pseudo header (source, destination, protocol 17, UDP length), the
 * header and the data. Zero means "not computed" (RFC 768), so a computed zero is sent as 0xFFFF.
 * After {@link #wrap} returns {@link WireStatus#OK} no accessor can fail; wrap reads the 8 header
 * bytes once and the accessors answer from that copy until a setter writes through the view (as
 * {@link Ipv4Header}).
 */
public final class UdpHeader extends HeaderView {
    public static final int HEADER = 8;

    static final int SOURCE_PORT = 0;
    static final int DESTINATION_PORT = 2;
    static final int LENGTH = 4;
    static final int CHECKSUM = 6;

    // The header as read once by wrap (big-endian), so the receive path's accessors read no memory;
    // any setter drops it and the accessors read again.
    private boolean cached;
    private long word;

    /**
     * Points the view at the IP payload ({@code length} bytes) and checks the UDP length: at least
     * 8 and at most the IP payload. A shorter UDP length than the payload is accepted; the rest is
     * ignored (RFC 1122 4.1.3.4 leaves it to the IP length, Linux trims). Does not verify the checksum.
     */
    public int wrap(MemorySegment seg, long offset, int length) {
        if (offset < 0 || length < HEADER || offset > seg.byteSize() - length) {
            return WireStatus.TRUNCATED;
        }
        point(seg, offset, length);
        word = seg.get(BE_LONG, offset);
        cached = true;
        int udpLength = length();
        if (udpLength < HEADER || udpLength > length) {
            return WireStatus.BAD_LENGTH;
        }
        return WireStatus.OK;
    }

    /**
     * {@link #wrap(MemorySegment, long, int)}, then, when {@code verifyChecksum}, the checksum with
     * the pseudo header of {@code source} and {@code destination}; a zero checksum field is accepted
     * as "none" (RFC 768; RFC 1122 4.1.3.4).
     */
    public int wrap(MemorySegment seg, long offset, int length, int source, int destination, boolean verifyChecksum) {
        int status = wrap(seg, offset, length);
        if (status == WireStatus.OK && verifyChecksum && !verifyChecksum(source, destination)) {
            return WireStatus.BAD_CHECKSUM;
        }
        return status;
    }

    /** Points the view at 8 writable bytes (the payload follows) without reading them. */
    public boolean wrapForWrite(MemorySegment seg, long offset, int length) {
        if (offset < 0 || length < HEADER || offset > seg.byteSize() - length) {
            return false;
        }
        point(seg, offset, length);
        cached = false;
        return true;
    }



    public int sourcePort() {
        return u16(SOURCE_PORT);
    }

    public int destinationPort() {
        return u16(DESTINATION_PORT);
    }

    /** The UDP length field: header plus data. */
    public int length() {
        return u16(LENGTH);
    }

    public int checksum() {
        return u16(CHECKSUM);
    }

    public long payloadOffset() {
        return base + HEADER;
    }

    public int payloadLength() {
        return length() - HEADER;
    }

    /**
     * The checksum to send, computed with the field taken as zero; never 0, since a computed 0 is
     * sent as 0xFFFF (RFC 768: zero would mean "no checksum").
     */
    public int computeChecksum(int source, int destination) {
        int len = length();
        int c = Checksum.computeAround(seg, base, len, CHECKSUM,
                Checksum.pseudoHeaderSum(source, destination, Ipv4Header.PROTOCOL_UDP, len));
        return c == 0 ? 0xFFFF : c;
    }

    /** True when the field is zero (none sent) or the sum over pseudo header, header and data is 0xFFFF. */
    public boolean verifyChecksum(int source, int destination) {
        if (checksum() == 0) {
            return true;
        }
        int len = length();
        return Checksum.sum(seg, base, len, Checksum.pseudoHeaderSum(source, destination, Ipv4Header.PROTOCOL_UDP, len))
                == 0xFFFF;
    }

    /** Writes the whole header in one store (the send path's way; see {@link Ipv4Header#emit}). */
    public UdpHeader emit(int sourcePort, int destinationPort, int length, int checksum) {
        cached = false;
        seg.set(BE_LONG, base, (long) (sourcePort & 0xFFFF) << 48 | (long) (destinationPort & 0xFFFF) << 32
                | (long) (length & 0xFFFF) << 16 | (checksum & 0xFFFF));
        return this;
    }

    public UdpHeader setSourcePort(int port) {
        cached = false;
        seg.set(BE_SHORT, base + SOURCE_PORT, (short) port);
        return this;
    }

    public UdpHeader setDestinationPort(int port) {
        cached = false;
        seg.set(BE_SHORT, base + DESTINATION_PORT, (short) port);
        return this;
    }

    public UdpHeader setLength(int length) {
        cached = false;
        seg.set(BE_SHORT, base + LENGTH, (short) length);
        return this;
    }

    public UdpHeader setChecksum(int checksum) {
        cached = false;
        seg.set(BE_SHORT, base + CHECKSUM, (short) checksum);
        return this;
    }

    /** Computes and stores the checksum; header, length and data must be in place. */
    public UdpHeader fillChecksum(int source, int destination) {
        setChecksum(0);
        return setChecksum(computeChecksum(source, destination));
    }

    /** The big-endian 16 bits at {@code field} (0, 2, 4 or 6). */
    private int u16(int field) {
        if (cached) {
            return (int) (word >>> (48 - 8 * field)) & 0xFFFF;
        }
        return seg.get(BE_SHORT, base + field) & 0xFFFF;
    }
}
