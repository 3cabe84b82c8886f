package dev.nupa.l2;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A flyweight view of the 8-byte link header at an offset of a segment (docs/link-layer.md):
 *
 * <pre>
 *  0               1               2               3
 *  +-------------------------------+-------------------------------+
 *  |  destination fabric address   |     source fabric address     |
 *  +-------------------------------+-------------------------------+
 *  |     protocol (EtherType)      |        payload length         |
 *  +-------------------------------+-------------------------------+
 * </pre>
 *
 * Every field is an unsigned 16-bit integer in network byte order. {@link #wrap} checks once that
 * the 8 bytes lie inside the segment; the accessors then cannot fail. Reusable: wrap it again for
 * the next frame, so reading a frame allocates nothing. Whether the payload the header announces
 * fits in the frame is a separate question, {@link #payloadFits}.
 */
public final class LinkHeader {
    /** Bytes of a link header. */
    public static final int LENGTH = 8;
    static final int DESTINATION = 0;
    static final int SOURCE = 2;
    static final int PROTOCOL = 4;
    static final int PAYLOAD_LENGTH = 6;
    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private MemorySegment memory = MemorySegment.NULL;
    private long offset;

    /** Whether a header fits at {@code offset} of {@code memory}. */
    public static boolean fits(MemorySegment memory, long offset) {
        return offset >= 0 && offset <= memory.byteSize() - LENGTH;
    }

    /** Views the header at {@code offset}; throws IndexOutOfBoundsException if its 8 bytes do not lie inside {@code memory}. */
    public LinkHeader wrap(MemorySegment memory, long offset) {
        if (!fits(memory, offset)) {
            throw new IndexOutOfBoundsException("a link header needs " + LENGTH + " bytes at offset " + offset
                    + " of a segment of " + memory.byteSize() + " bytes");
        }
        this.memory = memory;
        this.offset = offset;
        return this;
    }

    public MemorySegment memory() {
        return memory;
    }

    public long offset() {
        return offset;
    }

    /** Where the payload starts. */
    public long payloadOffset() {
        return offset + LENGTH;
    }

    public int destination() {
        return destination(word());
    }

    public int source() {
        return source(word());
    }

    public int protocol() {
        return protocol(word());
    }

    public int payloadLength() {
        return payloadLength(word());
    }

    /** Whether the announced payload lies inside a frame of {@code frameLength} bytes that starts at this header. */
    public boolean payloadFits(int frameLength) {
        return frameLength >= LENGTH && payloadLength() <= frameLength - LENGTH;
    }

    /** Sets the destination; only the low 16 bits are stored. */
    public LinkHeader destination(int v) {
        return set(DESTINATION, v);
    }

    public LinkHeader source(int v) {
        return set(SOURCE, v);
    }

    public LinkHeader protocol(int v) {
        return set(PROTOCOL, v);
    }

    public LinkHeader payloadLength(int v) {
        return set(PAYLOAD_LENGTH, v);
    }

    /** Writes all four fields (low 16 bits of each). */
    public LinkHeader set(int destination, int source, int protocol, int payloadLength) {
        // One big-endian 64-bit store: the four u16 fields in wire order (one checked access on the send path).
        memory.set(U64, offset, (long) (destination & 0xFFFF) << 48 | (long) (source & 0xFFFF) << 32
                | (long) (protocol & 0xFFFF) << 16 | (payloadLength & 0xFFFF));
        return this;
    }

    /** The whole header as one big-endian 64-bit word: destination, source, protocol, payload length from the top. */
    public long word() {
        return memory.get(U64, offset);
    }

    /** The destination field of a {@link #word()}. */
    public static int destination(long word) {
        return (int) (word >>> 48);
    }

    /** The source field of a {@link #word()}. */
    public static int source(long word) {
        return (int) (word >>> 32) & 0xFFFF;
    }

    /** The protocol field of a {@link #word()}. */
    public static int protocol(long word) {
        return (int) (word >>> 16) & 0xFFFF;
    }

    /** The payload length field of a {@link #word()}. */
    public static int payloadLength(long word) {
        return (int) word & 0xFFFF;
    }

    private LinkHeader set(int field, int v) {
        memory.set(U16, offset + field, (short) v);
        return this;
    }

    @Override
    public String toString() {
        return memory == MemorySegment.NULL ? "LinkHeader[unwrapped]"
                : "LinkHeader[" + source() + " -> " + destination() + ", " + EtherType.name(protocol()) + ", "
                        + payloadLength() + " bytes]";
    }
}
