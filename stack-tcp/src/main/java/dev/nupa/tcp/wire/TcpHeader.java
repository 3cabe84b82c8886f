package dev.nupa.tcp.wire;

import dev.nupa.ip.wire.HeaderView;
import dev.nupa.ip.wire.Checksum;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A reusable flyweight view of a TCP segment (RFC 9293 3.1) in a {@link MemorySegment}.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * |          Source Port          |       Destination Port        |
 * |                        Sequence Number                        |
 * |                    Acknowledgment Number                      |
 * |  Data |       |C|E|U|A|P|R|S|F|                               |
 * | Offset| Rsrvd |W|C|R|C|S|S|Y|I|            Window             |
 * |       |       |R|E|G|K|H|T|N|N|                               |
 * |           Checksum            |         Urgent Pointer        |
 * |                           [Options]                           |
 * |                             Data                              |
 * </pre>
 *
 * The view covers the whole segment (the IP payload): header, options and data. {@link #wrap}
 * checks it once; after it returns {@link WireStatus#OK} no accessor can fail. After a failed
 * wrap the view must not be read. {@link #wrapForWrite} points it at a buffer to be filled by the
 * setters. The checksum covers a pseudo header (source, destination, protocol 6, TCP length), the
 * header and the data (RFC 9293 3.1). Options are read by {@link TcpOptions}. Nothing here allocates.
 */
public final class TcpHeader extends HeaderView {
    /** Data offset 5: the header without options (RFC 9293 3.1). */
    public static final int MIN_HEADER = 20;
    /** Data offset is 4 bits of 32-bit words: at most 15 words. */
    public static final int MAX_HEADER = 60;
    /** The TCP length of the pseudo header is 16 bits (RFC 9293 3.1), as is an IPv4 total length. */
    public static final int MAX_LENGTH = 0xFFFF;

    public static final int FIN = 0x01;
    public static final int SYN = 0x02;
    public static final int RST = 0x04;
    public static final int PSH = 0x08;
    public static final int ACK = 0x10;
    public static final int URG = 0x20;
    /** ECN-Echo (RFC 3168 6.1). */
    public static final int ECE = 0x40;
    /** Congestion Window Reduced (RFC 3168 6.1). */
    public static final int CWR = 0x80;

    static final int SOURCE_PORT = 0;
    static final int DESTINATION_PORT = 2;
    static final int SEQUENCE = 4;
    static final int ACKNOWLEDGMENT = 8;
    static final int DATA_OFFSET = 12;
    static final int FLAGS = 13;
    static final int WINDOW = 14;
    static final int CHECKSUM = 16;
    static final int URGENT_POINTER = 18;

    static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);


    /**
     * Points the view at a received segment of {@code length} bytes (the IP payload) and checks its
     * structure: at least 20 bytes, a data offset of at least 5 words that lies inside the segment,
     * and a length the pseudo header can carry. Does not verify the checksum. Never throws.
     *
     * @return {@link WireStatus#OK}, {@link WireStatus#TRUNCATED} (shorter than 20 bytes or than the
     *     data offset, or outside the memory segment), {@link WireStatus#BAD_HEADER_LENGTH} (data
     *     offset below 5) or {@link WireStatus#BAD_LENGTH} (longer than 65535 bytes)
     */
    public int wrap(MemorySegment seg, long offset, int length) {
        if (offset < 0 || length < MIN_HEADER || offset > seg.byteSize() - length) {
            return WireStatus.TRUNCATED;
        }
        point(seg, offset, length);
        int headerLength = headerLength();
        if (headerLength < MIN_HEADER) {
            return WireStatus.BAD_HEADER_LENGTH;
        }
        if (headerLength > length) {
            return WireStatus.TRUNCATED;
        }
        if (length > MAX_LENGTH) {
            return WireStatus.BAD_LENGTH;
        }
        return WireStatus.OK;
    }

    /**
     * {@link #wrap(MemorySegment, long, int)}, then, when {@code verifyChecksum}, the checksum with
     * the pseudo header of {@code source} and {@code destination}. Unlike UDP, a zero field is
     * not "none": TCP's checksum is mandatory (RFC 9293 3.1), so zero is checked like any value.
     */
    public int wrap(MemorySegment seg, long offset, int length, int source, int destination, boolean verifyChecksum) {
        int status = wrap(seg, offset, length);
        if (status == WireStatus.OK && verifyChecksum && !verifyChecksum(source, destination)) {
            return WireStatus.BAD_CHECKSUM;
        }
        return status;
    }

    /**
     * Points the view at {@code length} writable bytes (header, options and data: the TCP length
     * the checksum covers) without reading them. Returns false (and leaves the view unusable) when
     * fewer than 20 bytes, more than 65535, or out of the segment.
     */
    public boolean wrapForWrite(MemorySegment seg, long offset, int length) {
        if (offset < 0 || length < MIN_HEADER || offset > seg.byteSize() - length || length > MAX_LENGTH) {
            return false;
        }
        point(seg, offset, length);
        return true;
    }



    /** The TCP length: header, options and data, as given to wrap. */
    public int length() {
        return length;
    }

    public int sourcePort() {
        return u16(SOURCE_PORT);
    }

    public int destinationPort() {
        return u16(DESTINATION_PORT);
    }

    /** SEG.SEQ, all 32 bits; compare with {@link Seq}, never with {@code <}. */
    public int sequenceNumber() {
        return seg.get(BE_INT, base + SEQUENCE);
    }

    /** SEG.ACK, all 32 bits; meaningful only with {@link #ACK} set (RFC 9293 3.1). */
    public int acknowledgmentNumber() {
        return seg.get(BE_INT, base + ACKNOWLEDGMENT);
    }

    /** Header length in bytes: the data offset times 4, 20..60 after a successful wrap. */
    public int headerLength() {
        return (u8(DATA_OFFSET) >>> 4) * 4;
    }

    /**
     * The 4 reserved bits between the data offset and the flags. RFC 9293 3.1 says a sender must
     * zero them and a receiver must ignore them (the lowest was RFC 3540's ECN nonce, made
     * historic by RFC 8311).
     */
    public int reserved() {
        return u8(DATA_OFFSET) & 0x0F;
    }

    /** The 8 control bits, CWR to FIN (RFC 9293 3.1 with RFC 3168's ECE and CWR). */
    public int flags() {
        return u8(FLAGS);
    }

    /** True when every bit of {@code mask} is set. */
    public boolean hasFlags(int mask) {
        return (flags() & mask) == mask;
    }

    public boolean isFin() {
        return (flags() & FIN) != 0;
    }

    public boolean isSyn() {
        return (flags() & SYN) != 0;
    }

    public boolean isRst() {
        return (flags() & RST) != 0;
    }

    public boolean isPsh() {
        return (flags() & PSH) != 0;
    }

    public boolean isAck() {
        return (flags() & ACK) != 0;
    }

    public boolean isUrg() {
        return (flags() & URG) != 0;
    }

    public boolean isEce() {
        return (flags() & ECE) != 0;
    }

    public boolean isCwr() {
        return (flags() & CWR) != 0;
    }

    /** SEG.WND as sent, not yet scaled (RFC 7323 2.3: the scale applies except in a SYN). */
    public int window() {
        return u16(WINDOW);
    }

    public int checksum() {
        return u16(CHECKSUM);
    }

    public int urgentPointer() {
        return u16(URGENT_POINTER);
    }

    /** Offset of the options in {@link #segment()}: right after the 20 fixed bytes. */
    public long optionsOffset() {
        return base + MIN_HEADER;
    }

    /** Bytes of options (padding included): header length minus 20, 0..40. */
    public int optionsLength() {
        return headerLength() - MIN_HEADER;
    }

    /** Offset of the data in {@link #segment()}. */
    public long payloadOffset() {
        return base + headerLength();
    }

    /** Data bytes: the TCP length minus the header length. */
    public int payloadLength() {
        return length - headerLength();
    }

    /**
     * SEG.LEN, the sequence space the segment occupies: its data plus one for SYN and one for FIN
     * (RFC 9293 3.4).
     */
    public int sequenceLength() {
        int f = flags();
        return payloadLength() + ((f >>> 1) & 1) + (f & FIN);
    }

    /**
     * The checksum the segment should carry, computed with the field taken as zero over the pseudo
     * header, header and data. A result of 0 is sent as 0: only UDP gives zero a meaning.
     */
    public int computeChecksum(int source, int destination) {
        return Checksum.computeAround(seg, base, length, CHECKSUM,
                Checksum.pseudoHeaderSum(source, destination, Ipv4Header.PROTOCOL_TCP, length));
    }

    /** True when the sum over pseudo header, header and data is 0xFFFF (RFC 1071 1, "check"). */
    public boolean verifyChecksum(int source, int destination) {
        return Checksum.sum(seg, base, length,
                Checksum.pseudoHeaderSum(source, destination, Ipv4Header.PROTOCOL_TCP, length)) == 0xFFFF;
    }

    // Setters for emitting in place. They write exactly the field; callers keep values in range.

    public TcpHeader setSourcePort(int port) {
        seg.set(BE_SHORT, base + SOURCE_PORT, (short) port);
        return this;
    }

    public TcpHeader setDestinationPort(int port) {
        seg.set(BE_SHORT, base + DESTINATION_PORT, (short) port);
        return this;
    }

    public TcpHeader setSequenceNumber(int seq) {
        seg.set(BE_INT, base + SEQUENCE, seq);
        return this;
    }

    public TcpHeader setAcknowledgmentNumber(int ack) {
        seg.set(BE_INT, base + ACKNOWLEDGMENT, ack);
        return this;
    }

    /**
     * Writes the data offset for a header of {@code bytes} (a multiple of 4, 20..60) and zeroes the
     * reserved bits, as a sender must (RFC 9293 3.1).
     */
    public TcpHeader setHeaderLength(int bytes) {
        seg.set(ValueLayout.JAVA_BYTE, base + DATA_OFFSET, (byte) ((bytes >>> 2) << 4));
        return this;
    }

    /** Writes the 8 control bits (see {@link #FIN} .. {@link #CWR}). */
    public TcpHeader setFlags(int flags) {
        seg.set(ValueLayout.JAVA_BYTE, base + FLAGS, (byte) flags);
        return this;
    }

    public TcpHeader setWindow(int window) {
        seg.set(BE_SHORT, base + WINDOW, (short) window);
        return this;
    }

    public TcpHeader setChecksum(int checksum) {
        seg.set(BE_SHORT, base + CHECKSUM, (short) checksum);
        return this;
    }

    public TcpHeader setUrgentPointer(int pointer) {
        seg.set(BE_SHORT, base + URGENT_POINTER, (short) pointer);
        return this;
    }

    /** Computes and stores the checksum; header, options and data must be in place. */
    public TcpHeader fillChecksum(int source, int destination) {
        return setChecksum(computeChecksum(source, destination));
    }

    private int u8(int field) {
        return seg.get(ValueLayout.JAVA_BYTE, base + field) & 0xFF;
    }

    private int u16(int field) {
        return seg.get(BE_SHORT, base + field) & 0xFFFF;
    }
}
