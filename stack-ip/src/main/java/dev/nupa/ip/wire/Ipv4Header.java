package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.Checksum.BE_INT;
import static dev.nupa.ip.wire.Checksum.BE_LONG;
import static dev.nupa.ip.wire.Checksum.BE_SHORT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A reusable flyweight view of an IPv4 header (RFC 791 3.1) in a {@link MemorySegment}.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * |Version|  IHL  |    DSCP   |ECN|          Total Length         |
 * |         Identification        |Flags|      Fragment Offset    |
 * |  Time to Live |    Protocol   |         Header Checksum       |
 * |                       Source Address                          |
 * |                    Destination Address                        |
 * |                    Options                    |    Padding    |
 * </pre>
 *
 * {@link #wrap} checks everything once; after it returns {@link WireStatus#OK} no accessor can
 * fail. It also reads the fixed 20 bytes once, and the accessors answer from that copy until a setter
 * writes through the view: bytes changed behind the view's back show only after the next wrap. After
 * a failed wrap the view must not be read. {@link #wrapForWrite} points the view at a
 * buffer to be filled by the setters. The view allocates nothing.
 */
public final class Ipv4Header extends HeaderView {
    public static final int MIN_HEADER = 20;
    /** IHL is 4 bits of 32-bit words. */
    public static final int MAX_HEADER = 60;
    public static final int MAX_TOTAL_LENGTH = 0xFFFF;
    /** RFC 791 3.1: every host must accept datagrams of 576 bytes; RFC 1191 uses 68 as the least MTU. */
    public static final int MIN_MTU = 68;

    public static final int PROTOCOL_ICMP = 1;
    public static final int PROTOCOL_TCP = 6;
    public static final int PROTOCOL_UDP = 17;

    static final int VER_IHL = 0;
    static final int TOS = 1;
    static final int TOTAL_LENGTH = 2;
    static final int IDENTIFICATION = 4;
    static final int FLAGS_FRAGMENT = 6;
    static final int TTL = 8;
    static final int PROTOCOL = 9;
    static final int CHECKSUM = 10;
    static final int SOURCE = 12;
    static final int DESTINATION = 16;

    static final int FLAG_RESERVED = 0x8000;
    static final int FLAG_DF = 0x4000;
    static final int FLAG_MF = 0x2000;
    static final int OFFSET_MASK = 0x1FFF;

    // The fixed header as read once by wrap (bytes 0-7 and 8-15 big-endian, and the destination), so the
    // accessors of the receive path read no memory; any setter drops it and the accessors read again.
    private boolean cached;
    private long w0;
    private long w1;
    private int w2;

    /** Wraps and verifies the header checksum. */
    public int wrap(MemorySegment seg, long offset, int length) {
        return wrap(seg, offset, length, true);
    }

    /**
     * Points the view at a received datagram and validates it (RFC 1122 3.2.1.1-3.2.1.3 style
     * checks). A buffer longer than the total length is fine: link padding is ignored. Never throws.
     *
     * @param verifyChecksum false where the link is trusted not to corrupt (the lossless fabric)
     * @return a {@link WireStatus} code
     */
    public int wrap(MemorySegment seg, long offset, int length, boolean verifyChecksum) {
        int status = structure(seg, offset, length, false);
        if (status == WireStatus.OK && verifyChecksum && headerSum() != 0xFFFF) {
            return WireStatus.BAD_CHECKSUM;
        }
        return status;
    }

    /**
     * The folded sum of the header's 16-bit words (RFC 1071), 0xFFFF for a header whose checksum
     * verifies (RFC 791 3.1). The fixed 20 bytes are summed from the words {@link #structure} read, as
     * 32-bit halves (their end-around carries fold out, RFC 1071 2(C)); options are read from memory.
     */
    private int headerSum() {
        long acc = (w0 >>> 32) + (w0 & 0xFFFF_FFFFL) + (w1 >>> 32) + (w1 & 0xFFFF_FFFFL) + (w2 & 0xFFFF_FFFFL);
        int sum = Checksum.fold(acc);
        int headerLength = headerLength();
        if (headerLength > MIN_HEADER) {
            sum = Checksum.add(sum, Checksum.sum(seg, base + MIN_HEADER, headerLength - MIN_HEADER));
        }
        return sum;
    }

    /**
     * Wraps the original header quoted inside an ICMP error (RFC 792): only the header and a few
     * bytes of its payload are there, so the total length may exceed the buffer, and the checksum
     * is not verified (a router may have changed TTL). Use {@link #availablePayloadLength()}.
     */
    public int wrapQuoted(MemorySegment seg, long offset, int length) {
        return structure(seg, offset, length, true);
    }

    private int structure(MemorySegment seg, long offset, int length, boolean quoted) {
        if (offset < 0 || length < MIN_HEADER || offset > seg.byteSize() - length) {
            return WireStatus.TRUNCATED;
        }
        point(seg, offset, length);
        w0 = seg.get(BE_LONG, offset);
        w1 = seg.get(BE_LONG, offset + TTL);
        w2 = seg.get(BE_INT, offset + DESTINATION);
        cached = true;
        int verIhl = u8(VER_IHL);
        if ((verIhl >>> 4) != 4) {
            return WireStatus.BAD_VERSION;
        }
        int headerLength = (verIhl & 0xF) * 4;
        if (headerLength < MIN_HEADER) {
            return WireStatus.BAD_HEADER_LENGTH;
        }
        if (headerLength > length) {
            return WireStatus.TRUNCATED;
        }
        int total = totalLength();
        if (total < headerLength) {
            return WireStatus.BAD_TOTAL_LENGTH;
        }
        if (!quoted && total > length) {
            return WireStatus.TRUNCATED;
        }
        return WireStatus.OK;
    }

    /**
     * Points the view at {@code length} writable bytes for emitting with the setters, without reading
     * them. Returns false (and leaves the view unusable) when fewer than 20 bytes or out of the segment.
     */
    public boolean wrapForWrite(MemorySegment seg, long offset, int length) {
        if (offset < 0 || length < MIN_HEADER || offset > seg.byteSize() - length) {
            return false;
        }
        point(seg, offset, length);
        cached = false;
        return true;
    }



    /** The buffer length given to wrap (at least the total length, possibly with link padding). */
    public int bufferLength() {
        return length;
    }

    public int version() {
        return (u8(VER_IHL)) >>> 4;
    }

    /** Header length in bytes (IHL * 4). */
    public int headerLength() {
        return (u8(VER_IHL) & 0xF) * 4;
    }

    public int typeOfService() {
        return u8(TOS);
    }

    /** Differentiated services code point (RFC 2474), the high 6 bits of the old TOS byte. */
    public int dscp() {
        return u8(TOS) >>> 2;
    }

    /** Explicit congestion notification (RFC 3168), the low 2 bits. */
    public int ecn() {
        return u8(TOS) & 3;
    }

    public int totalLength() {
        return u16(TOTAL_LENGTH);
    }

    public int identification() {
        return u16(IDENTIFICATION);
    }

    /** The reserved flag (must be zero per RFC 791; accepted and ignored as Linux does). */
    public boolean reservedFlag() {
        return (u16(FLAGS_FRAGMENT) & FLAG_RESERVED) != 0;
    }

    public boolean dontFragment() {
        return (u16(FLAGS_FRAGMENT) & FLAG_DF) != 0;
    }

    public boolean moreFragments() {
        return (u16(FLAGS_FRAGMENT) & FLAG_MF) != 0;
    }

    /** Fragment offset in bytes (the field counts 8-byte units). */
    public int fragmentOffset() {
        return (u16(FLAGS_FRAGMENT) & OFFSET_MASK) * 8;
    }

    /** Part of a fragmented datagram: MF set or a non-zero offset (RFC 791 3.2, reassembly). */
    public boolean isFragment() {
        return (u16(FLAGS_FRAGMENT) & (FLAG_MF | OFFSET_MASK)) != 0;
    }

    public int ttl() {
        return u8(TTL);
    }

    public int protocol() {
        return u8(PROTOCOL);
    }

    public int headerChecksum() {
        return u16(CHECKSUM);
    }

    public int sourceAddress() {
        return cached ? (int) w1 : seg.get(BE_INT, base + SOURCE);
    }

    public int destinationAddress() {
        return cached ? w2 : seg.get(BE_INT, base + DESTINATION);
    }

    /** Options are accepted and skipped (RFC 1122 3.2.1.8 lets a host ignore those it does not implement). */
    public int optionsLength() {
        return headerLength() - MIN_HEADER;
    }

    /** Offset of the payload in {@link #segment()}. */
    public long payloadOffset() {
        return base + headerLength();
    }

    /** Total length minus header length; trailing link padding excluded. */
    public int payloadLength() {
        return totalLength() - headerLength();
    }

    /** Payload bytes actually present: equals {@link #payloadLength()} except after {@link #wrapQuoted}. */
    public int availablePayloadLength() {
        return Math.min(totalLength(), length) - headerLength();
    }

    /** The checksum the header should carry (computed with the field taken as zero). */
    public int computeChecksum() {
        return Checksum.computeAround(seg, base, headerLength(), CHECKSUM, 0);
    }

    public boolean verifyChecksum() {
        return Checksum.verifies(seg, base, headerLength());
    }

    // Setters for emitting in place. They write exactly the field; callers keep values in range.

    /** Writes version 4 and IHL for a header of {@code bytes} (a multiple of 4, 20..60). */
    public Ipv4Header setVersionAndHeaderLength(int bytes) {
        cached = false;
        seg.set(ValueLayout.JAVA_BYTE, base + VER_IHL, (byte) (0x40 | (bytes >>> 2)));
        return this;
    }

    public Ipv4Header setTypeOfService(int tos) {
        cached = false;
        seg.set(ValueLayout.JAVA_BYTE, base + TOS, (byte) tos);
        return this;
    }

    public Ipv4Header setDscpEcn(int dscp, int ecn) {
        return setTypeOfService(dscp << 2 | (ecn & 3));
    }

    public Ipv4Header setTotalLength(int totalLength) {
        cached = false;
        seg.set(BE_SHORT, base + TOTAL_LENGTH, (short) totalLength);
        return this;
    }

    public Ipv4Header setIdentification(int id) {
        cached = false;
        seg.set(BE_SHORT, base + IDENTIFICATION, (short) id);
        return this;
    }

    /** Writes flags and offset together; {@code fragmentOffset} in bytes, a multiple of 8. */
    public Ipv4Header setFlagsAndFragmentOffset(boolean dontFragment, boolean moreFragments, int fragmentOffset) {
        cached = false;
        seg.set(BE_SHORT, base + FLAGS_FRAGMENT, (short) flagsWord(dontFragment, moreFragments, fragmentOffset));
        return this;
    }

    /** The wire word of flags and fragment offset; {@code fragmentOffset} in bytes, a multiple of 8. */
    public static int flagsWord(boolean dontFragment, boolean moreFragments, int fragmentOffset) {
        return (dontFragment ? FLAG_DF : 0) | (moreFragments ? FLAG_MF : 0) | ((fragmentOffset >>> 3) & OFFSET_MASK);
    }

    public Ipv4Header setTtl(int ttl) {
        cached = false;
        seg.set(ValueLayout.JAVA_BYTE, base + TTL, (byte) ttl);
        return this;
    }

    public Ipv4Header setProtocol(int protocol) {
        cached = false;
        seg.set(ValueLayout.JAVA_BYTE, base + PROTOCOL, (byte) protocol);
        return this;
    }

    public Ipv4Header setHeaderChecksum(int checksum) {
        cached = false;
        seg.set(BE_SHORT, base + CHECKSUM, (short) checksum);
        return this;
    }

    public Ipv4Header setSourceAddress(int address) {
        cached = false;
        seg.set(BE_INT, base + SOURCE, address);
        return this;
    }

    public Ipv4Header setDestinationAddress(int address) {
        cached = false;
        seg.set(BE_INT, base + DESTINATION, address);
        return this;
    }

    /**
     * Writes a whole option-less header and its checksum (RFC 791 3.1) in three stores: the send
     * path's way to emit (smoltcp's Repr::emit), where ten setters would each check the segment.
     * {@code flagsAndOffset} is the wire's 16-bit word of flags and fragment offset in 8-byte units.
     */
    public Ipv4Header emit(int tos, int totalLength, int id, int flagsAndOffset, int ttl, int protocol, int source,
                           int destination) {
        int first = 0x4500 | (tos & 0xFF);
        int ttlProtocol = (ttl & 0xFF) << 8 | (protocol & 0xFF);
        // RFC 1071: the sum of the header's 16-bit words, taken from the values, not read back.
        long words = first + (totalLength & 0xFFFF) + (id & 0xFFFF) + (flagsAndOffset & 0xFFFF) + ttlProtocol
                + (source >>> 16) + (source & 0xFFFF) + (destination >>> 16) + (destination & 0xFFFF);
        long checksum = Checksum.finish(Checksum.fold(words));
        cached = false;
        seg.set(BE_LONG, base, (long) first << 48 | (long) (totalLength & 0xFFFF) << 32 | (long) (id & 0xFFFF) << 16
                | (flagsAndOffset & 0xFFFF));
        seg.set(BE_LONG, base + TTL, (long) ttlProtocol << 48 | checksum << 32 | (source & 0xFFFF_FFFFL));
        seg.set(BE_INT, base + DESTINATION, destination);
        return this;
    }

    /** Zeroes the checksum field, then stores the computed checksum (RFC 791 3.1). */
    public Ipv4Header fillChecksum() {
        setHeaderChecksum(0);
        setHeaderChecksum(Checksum.compute(seg, base, headerLength()));
        return this;
    }

    /**
     * Decrements TTL for forwarding and patches the checksum incrementally (RFC 1624) instead of
     * summing the header again. The caller drops TTL 0 and 1 first (RFC 1812 5.3.1).
     */
    public Ipv4Header decrementTtl() {
        int oldWord = u16(TTL);
        int newWord = (oldWord - 0x100) & 0xFFFF;
        cached = false;
        seg.set(BE_SHORT, base + TTL, (short) newWord);
        setHeaderChecksum(Checksum.update(headerChecksum(), oldWord, newWord));
        return this;
    }

    /** The byte at {@code field} (below 16). */
    private int u8(int field) {
        if (cached) {
            return (int) (field < 8 ? w0 >>> (56 - 8 * field) : w1 >>> (120 - 8 * field)) & 0xFF;
        }
        return seg.get(ValueLayout.JAVA_BYTE, base + field) & 0xFF;
    }

    /** The big-endian 16 bits at {@code field} (even, below 16). */
    private int u16(int field) {
        if (cached) {
            return (int) (field < 8 ? w0 >>> (48 - 8 * field) : w1 >>> (112 - 8 * field)) & 0xFFFF;
        }
        return seg.get(BE_SHORT, base + field) & 0xFFFF;
    }
}
