package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * An ICMP message as a value, for tests and the control plane (the datapath uses
 * {@link IcmpHeader}). Every ICMP message is an 8-byte header and data (RFC 792), so one record
 * covers all types; the factories and typed accessors name the fields of the common ones.
 *
 * @param restOfHeader the 32-bit word after the checksum (echo id and sequence, unused/MTU word, ...)
 * @param data echo payload, or for an error the quoted original header + 8 bytes; not copied, do not mutate
 */
public record IcmpRepr(int type, int code, int restOfHeader, byte[] data) {

    public IcmpRepr {
        if (type < 0 || type > 255 || code < 0 || code > 255) {
            throw new IllegalArgumentException("ICMP type and code must be 0..255: " + type + "/" + code);
        }
        if (data == null) {
            throw new IllegalArgumentException("ICMP data must not be null (use an empty array)");
        }
        if (data.length > Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER - IcmpHeader.HEADER) {
            throw new IllegalArgumentException("ICMP data too long for one IPv4 datagram: " + data.length);
        }
    }

    public static IcmpRepr echoRequest(int identifier, int sequence, byte[] data) {
        return new IcmpRepr(IcmpHeader.TYPE_ECHO_REQUEST, 0, echoWord(identifier, sequence), data);
    }

    public static IcmpRepr echoReply(int identifier, int sequence, byte[] data) {
        return new IcmpRepr(IcmpHeader.TYPE_ECHO_REPLY, 0, echoWord(identifier, sequence), data);
    }

    /** Destination unreachable with an unused (zero) word; for code 4 use {@link #fragmentationNeeded}. */
    public static IcmpRepr destinationUnreachable(int code, byte[] quoted) {
        return new IcmpRepr(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, code, 0, quoted);
    }

    /** Destination unreachable, code 4, with the next-hop MTU (RFC 1191 4). */
    public static IcmpRepr fragmentationNeeded(int nextHopMtu, byte[] quoted) {
        if (nextHopMtu < 0 || nextHopMtu > 0xFFFF) {
            throw new IllegalArgumentException("next-hop MTU must be 0..65535: " + nextHopMtu);
        }
        return new IcmpRepr(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.UNREACHABLE_FRAGMENTATION_NEEDED,
                nextHopMtu, quoted);
    }

    public static IcmpRepr timeExceeded(int code, byte[] quoted) {
        return new IcmpRepr(IcmpHeader.TYPE_TIME_EXCEEDED, code, 0, quoted);
    }

    /** The bytes an error quotes from {@code original}: its header and up to 8 payload bytes (RFC 792). */
    public static byte[] quote(Ipv4Header original) {
        int n = IcmpHeader.quotedLength(original);
        return original.segment().asSlice(original.offset(), n).toArray(ValueLayout.JAVA_BYTE);
    }

    private static int echoWord(int identifier, int sequence) {
        if (identifier < 0 || identifier > 0xFFFF || sequence < 0 || sequence > 0xFFFF) {
            throw new IllegalArgumentException("ICMP echo identifier and sequence must be 0..65535: "
                    + identifier + "/" + sequence);
        }
        return identifier << 16 | sequence;
    }

    /** Reads a view that wrapped with {@link WireStatus#OK}; copies the data. */
    public static IcmpRepr parse(IcmpHeader h) {
        byte[] data = h.segment().asSlice(h.dataOffset(), h.dataLength()).toArray(ValueLayout.JAVA_BYTE);
        return new IcmpRepr(h.type(), h.code(), h.restOfHeader(), data);
    }

    public int identifier() {
        return restOfHeader >>> 16;
    }

    public int sequence() {
        return restOfHeader & 0xFFFF;
    }

    public int nextHopMtu() {
        return restOfHeader & 0xFFFF;
    }

    public boolean isError() {
        return IcmpHeader.isError(type);
    }

    /** For an error: the quoted original header, or null when the data holds no well-formed one. */
    public Ipv4Repr quotedHeader() {
        Ipv4Header ip = new Ipv4Header();
        if (ip.wrapQuoted(MemorySegment.ofArray(data), 0, data.length) != WireStatus.OK) {
            return null;
        }
        return Ipv4Repr.parse(ip);
    }

    public int headerLength() {
        return IcmpHeader.HEADER;
    }

    /** The whole message: header and data. */
    public int length() {
        return IcmpHeader.HEADER + data.length;
    }

    /** Writes the whole message with its checksum (always computed: RFC 792 has no "none"). */
    public void emitInto(MemorySegment seg, long offset) {
        IcmpHeader h = new IcmpHeader();
        if (!h.wrapForWrite(seg, offset, length())) {
            throw new IndexOutOfBoundsException("no room for a " + length() + "-byte ICMP message at " + offset
                    + " in " + seg.byteSize() + " bytes");
        }
        h.setType(type).setCode(code).setChecksum(0).setRestOfHeader(restOfHeader);
        MemorySegment.copy(data, 0, seg, ValueLayout.JAVA_BYTE, h.dataOffset(), data.length);
        h.fillChecksum();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IcmpRepr r && r.type == type && r.code == code && r.restOfHeader == restOfHeader
                && Arrays.equals(r.data, data);
    }

    @Override
    public int hashCode() {
        return ((type * 31 + code) * 31 + restOfHeader) * 31 + Arrays.hashCode(data);
    }

    @Override
    public String toString() {
        return "IcmpRepr[type " + type + " code " + code + " rest 0x" + Integer.toHexString(restOfHeader)
                + " data " + HexFormat.of().formatHex(data) + "]";
    }
}
