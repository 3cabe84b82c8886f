package dev.nupa.l2;

import java.lang.foreign.MemorySegment;

/**
 * The value of a link header (see {@link LinkHeader} and docs/link-layer.md). Every field is an
 * unsigned 16-bit integer.
 */
public record LinkRepr(int destination, int source, int protocol, int payloadLength) {

    public LinkRepr {
        check("destination", destination);
        check("source", source);
        check("protocol", protocol);
        check("payload length", payloadLength);
    }

    /** Reads the header of a {@code frameLength}-byte frame at {@code offset}; throws IllegalArgumentException if it is truncated or announces more payload than the frame holds. */
    public static LinkRepr parse(MemorySegment memory, long offset, int frameLength) {
        if (frameLength < LinkHeader.LENGTH) {
            throw new IllegalArgumentException("truncated link frame: " + frameLength + " bytes, a header needs "
                    + LinkHeader.LENGTH);
        }
        if (offset < 0 || offset > memory.byteSize() - frameLength) {
            throw new IllegalArgumentException("a frame of " + frameLength + " bytes at offset " + offset
                    + " lies outside a segment of " + memory.byteSize() + " bytes");
        }
        LinkHeader h = new LinkHeader().wrap(memory, offset);
        if (!h.payloadFits(frameLength)) {
            throw new IllegalArgumentException("link header announces " + h.payloadLength() + " payload bytes but the "
                    + frameLength + "-byte frame holds only " + (frameLength - LinkHeader.LENGTH));
        }
        return parse(h);
    }

    /** The fields of a wrapped header, without any check of the frame around it. */
    public static LinkRepr parse(LinkHeader header) {
        return new LinkRepr(header.destination(), header.source(), header.protocol(), header.payloadLength());
    }

    /** Bytes of the header this emits. */
    public int length() {
        return LinkHeader.LENGTH;
    }

    /** Bytes of the whole frame: header and payload. */
    public int frameLength() {
        return LinkHeader.LENGTH + payloadLength;
    }

    /** Writes the header at {@code offset}; throws IndexOutOfBoundsException if it does not fit. */
    public void emitInto(MemorySegment memory, long offset) {
        new LinkHeader().wrap(memory, offset).set(destination, source, protocol, payloadLength);
    }

    /** Writes the header through a reusable view (no allocation). */
    public void emitInto(LinkHeader header) {
        header.set(destination, source, protocol, payloadLength);
    }

    private static void check(String field, int v) {
        if (v < 0 || v > 0xFFFF) {
            throw new IllegalArgumentException("link header " + field + " " + v + " is outside 0..65535");
        }
    }
}
