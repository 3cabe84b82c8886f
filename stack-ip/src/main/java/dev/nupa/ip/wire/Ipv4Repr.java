package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;

/**
 * The meaning of an IPv4 header as a value, for tests and the control plane (the datapath uses
 * {@link Ipv4Header}). Options are not represented: {@link #parse} skips them and
 * {@link #emitInto} writes a 20-byte header.
 *
 * @param fragmentOffset in bytes, a multiple of 8
 */
public record Ipv4Repr(int sourceAddress, int destinationAddress, int protocol, int payloadLength, int ttl,
        int dscp, int ecn, int identification, boolean dontFragment, boolean moreFragments, int fragmentOffset) {

    public Ipv4Repr {
        check("protocol", protocol, 255);
        check("payload length", payloadLength, Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER);
        check("TTL", ttl, 255);
        check("DSCP", dscp, 63);
        check("ECN", ecn, 3);
        check("identification", identification, 0xFFFF);
        check("fragment offset", fragmentOffset, Ipv4Header.OFFSET_MASK * 8);
        if ((fragmentOffset & 7) != 0) {
            throw new IllegalArgumentException("IPv4 fragment offset must be a multiple of 8 bytes: " + fragmentOffset);
        }
    }

    /** An unfragmented datagram with DSCP, ECN and identification zero. */
    public Ipv4Repr(int sourceAddress, int destinationAddress, int protocol, int payloadLength, int ttl) {
        this(sourceAddress, destinationAddress, protocol, payloadLength, ttl, 0, 0, 0, false, false, 0);
    }

    private static void check(String what, int value, int max) {
        if (value < 0 || value > max) {
            throw new IllegalArgumentException("IPv4 " + what + " out of range 0.." + max + ": " + value);
        }
    }

    /** Reads a view that wrapped with {@link WireStatus#OK}. */
    public static Ipv4Repr parse(Ipv4Header h) {
        return new Ipv4Repr(h.sourceAddress(), h.destinationAddress(), h.protocol(), h.payloadLength(), h.ttl(),
                h.dscp(), h.ecn(), h.identification(), h.dontFragment(), h.moreFragments(), h.fragmentOffset());
    }

    public int headerLength() {
        return Ipv4Header.MIN_HEADER;
    }

    /** Total length: header plus payload. */
    public int length() {
        return Ipv4Header.MIN_HEADER + payloadLength;
    }

    /**
     * Writes the 20-byte header at {@code offset} (the payload is the caller's). With
     * {@code computeChecksum} false the field is left zero, for links that skip it.
     */
    public void emitInto(MemorySegment seg, long offset, boolean computeChecksum) {
        Ipv4Header h = new Ipv4Header();
        if (!h.wrapForWrite(seg, offset, Ipv4Header.MIN_HEADER)) {
            throw new IndexOutOfBoundsException("no room for an IPv4 header at " + offset + " in " + seg.byteSize() + " bytes");
        }
        emit(h, computeChecksum);
    }

    /** Writes the header through a view prepared with {@link Ipv4Header#wrapForWrite}. */
    public void emit(Ipv4Header h, boolean computeChecksum) {
        h.emit(dscp << 2 | (ecn & 3), length(), identification, Ipv4Header.flagsWord(dontFragment, moreFragments, fragmentOffset),
                ttl, protocol, sourceAddress, destinationAddress);
        if (!computeChecksum) {
            h.setHeaderChecksum(0);
        }
    }

    @Override
    public String toString() {
        return "Ipv4Repr[" + Ipv4Address.toString(sourceAddress) + " > " + Ipv4Address.toString(destinationAddress)
                + " proto " + protocol + " len " + payloadLength + " ttl " + ttl + " dscp " + dscp + " ecn " + ecn
                + " id " + identification + (dontFragment ? " DF" : "") + (moreFragments ? " MF" : "")
                + " off " + fragmentOffset + "]";
    }
}
