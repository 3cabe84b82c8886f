package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;

/**
 * A UDP header as a value, for tests and the control plane (the datapath uses {@link UdpHeader}).
 * The payload stays where it is: {@link #emitInto} writes the header in front of payload bytes the
 * caller has already placed, as the datapath does.
 */
public record UdpRepr(int sourcePort, int destinationPort, int payloadLength) {

    public UdpRepr {
        if (sourcePort < 0 || sourcePort > 0xFFFF || destinationPort < 0 || destinationPort > 0xFFFF) {
            throw new IllegalArgumentException("UDP ports must be 0..65535: " + sourcePort + " > " + destinationPort);
        }
        int max = Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER - UdpHeader.HEADER;
        if (payloadLength < 0 || payloadLength > max) {
            throw new IllegalArgumentException("UDP payload length out of range 0.." + max + ": " + payloadLength);
        }
    }

    /** Reads a view that wrapped with {@link WireStatus#OK}. */
    public static UdpRepr parse(UdpHeader h) {
        return new UdpRepr(h.sourcePort(), h.destinationPort(), h.payloadLength());
    }

    public int headerLength() {
        return UdpHeader.HEADER;
    }

    /** Header plus payload: the UDP length field. */
    public int length() {
        return UdpHeader.HEADER + payloadLength;
    }

    /**
     * Writes the header at {@code offset}, before the {@link #payloadLength} bytes already there.
     * With {@code computeChecksum} false the field is 0, "no checksum" (RFC 768), for links whose
     * policy skips it.
     */
    public void emitInto(MemorySegment seg, long offset, int source, int destination, boolean computeChecksum) {
        UdpHeader h = new UdpHeader();
        if (!h.wrapForWrite(seg, offset, length())) {
            throw new IndexOutOfBoundsException("no room for a " + length() + "-byte UDP datagram at " + offset
                    + " in " + seg.byteSize() + " bytes");
        }
        emit(h, source, destination, computeChecksum);
    }

    /** Writes the header through a view prepared with {@link UdpHeader#wrapForWrite}. */
    public void emit(UdpHeader h, int source, int destination, boolean computeChecksum) {
        h.setSourcePort(sourcePort).setDestinationPort(destinationPort).setLength(length()).setChecksum(0);
        if (computeChecksum) {
            h.fillChecksum(source, destination);
        }
    }
}
