package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.Checksum.BE_INT;
import static dev.nupa.ip.wire.Checksum.BE_SHORT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A reusable flyweight view of an ICMP message (RFC 792): type, code, checksum over the whole
 * message, a 32-bit rest-of-header word whose meaning depends on the type, then data.
 *
 * <pre>
 * |     Type      |     Code      |          Checksum             |
 * |  echo: Identifier             |  Sequence Number              |
 * |  unreachable/time exceeded: unused (code 4: unused | Next-Hop MTU, RFC 1191)
 * |  data: echo payload, or the original IP header + first 8 bytes of its payload
 * </pre>
 *
 * After {@link #wrap} returns {@link WireStatus#OK} no accessor can fail.
 */
public final class IcmpHeader extends HeaderView {
    public static final int HEADER = 8;

    public static final int TYPE_ECHO_REPLY = 0;
    public static final int TYPE_DESTINATION_UNREACHABLE = 3;
    public static final int TYPE_SOURCE_QUENCH = 4;
    public static final int TYPE_REDIRECT = 5;
    public static final int TYPE_ECHO_REQUEST = 8;
    public static final int TYPE_ROUTER_ADVERTISEMENT = 9;
    public static final int TYPE_ROUTER_SOLICITATION = 10;
    public static final int TYPE_TIME_EXCEEDED = 11;
    public static final int TYPE_PARAMETER_PROBLEM = 12;
    public static final int TYPE_TIMESTAMP = 13;
    public static final int TYPE_TIMESTAMP_REPLY = 14;
    public static final int TYPE_INFORMATION_REQUEST = 15;
    public static final int TYPE_INFORMATION_REPLY = 16;
    public static final int TYPE_ADDRESS_MASK_REQUEST = 17;
    public static final int TYPE_ADDRESS_MASK_REPLY = 18;

    // Destination unreachable codes (RFC 792; 6..12 from RFC 1122 3.2.2.1, 13 from RFC 1812).
    public static final int UNREACHABLE_NET = 0;
    public static final int UNREACHABLE_HOST = 1;
    public static final int UNREACHABLE_PROTOCOL = 2;
    public static final int UNREACHABLE_PORT = 3;
    public static final int UNREACHABLE_FRAGMENTATION_NEEDED = 4;
    public static final int UNREACHABLE_SOURCE_ROUTE_FAILED = 5;
    public static final int UNREACHABLE_NET_UNKNOWN = 6;
    public static final int UNREACHABLE_HOST_UNKNOWN = 7;
    public static final int UNREACHABLE_ADMIN_PROHIBITED = 13;

    // Time exceeded codes.
    public static final int TIME_EXCEEDED_TTL = 0;
    public static final int TIME_EXCEEDED_REASSEMBLY = 1;

    /** Original datagram bytes quoted after its header (RFC 792; RFC 1122 3.2.2: "at least the first 8"). */
    public static final int QUOTED_PAYLOAD = 8;

    static final int TYPE = 0;
    static final int CODE = 1;
    static final int CHECKSUM = 2;
    static final int REST = 4;


    /** Wraps and verifies the checksum. */
    public int wrap(MemorySegment seg, long offset, int length) {
        return wrap(seg, offset, length, true);
    }

    /**
     * Points the view at an ICMP message of {@code length} bytes (the IP payload) and checks it.
     * Type-specific contents (the quoted header of an error) are checked by whoever reads them,
     * with {@link Ipv4Header#wrapQuoted}. Never throws.
     */
    public int wrap(MemorySegment seg, long offset, int length, boolean verifyChecksum) {
        if (offset < 0 || length < HEADER || offset > seg.byteSize() - length) {
            return WireStatus.TRUNCATED;
        }
        point(seg, offset, length);
        if (verifyChecksum && !Checksum.verifies(seg, offset, length)) {
            return WireStatus.BAD_CHECKSUM;
        }
        return WireStatus.OK;
    }

    /** Points the view at {@code length} writable bytes (the whole message to be) without reading them. */
    public boolean wrapForWrite(MemorySegment seg, long offset, int length) {
        if (offset < 0 || length < HEADER || offset > seg.byteSize() - length) {
            return false;
        }
        point(seg, offset, length);
        return true;
    }



    /** The whole message: header and data. */
    public int length() {
        return length;
    }

    public int type() {
        return seg.get(ValueLayout.JAVA_BYTE, base + TYPE) & 0xFF;
    }

    public int code() {
        return seg.get(ValueLayout.JAVA_BYTE, base + CODE) & 0xFF;
    }

    public int checksum() {
        return u16(CHECKSUM);
    }

    /** The 32-bit word after the checksum: echo id and sequence, the unused/MTU word, a gateway, a pointer. */
    public int restOfHeader() {
        return seg.get(BE_INT, base + REST);
    }

    public int echoIdentifier() {
        return u16(REST);
    }

    public int echoSequence() {
        return u16(REST + 2);
    }

    /** Destination unreachable code 4: the next-hop MTU in the low half of the unused word (RFC 1191 4). */
    public int nextHopMtu() {
        return u16(REST + 2);
    }

    /** Parameter problem: the octet where the error was found (RFC 792). */
    public int pointer() {
        return seg.get(ValueLayout.JAVA_BYTE, base + REST) & 0xFF;
    }

    public long dataOffset() {
        return base + HEADER;
    }

    public int dataLength() {
        return length - HEADER;
    }

    /** The checksum the message should carry, computed with the field taken as zero. */
    public int computeChecksum() {
        return Checksum.computeAround(seg, base, length, CHECKSUM, 0);
    }

    public boolean verifyChecksum() {
        return Checksum.verifies(seg, base, length);
    }

    public IcmpHeader setType(int type) {
        seg.set(ValueLayout.JAVA_BYTE, base + TYPE, (byte) type);
        return this;
    }

    public IcmpHeader setCode(int code) {
        seg.set(ValueLayout.JAVA_BYTE, base + CODE, (byte) code);
        return this;
    }

    public IcmpHeader setChecksum(int checksum) {
        seg.set(BE_SHORT, base + CHECKSUM, (short) checksum);
        return this;
    }

    public IcmpHeader setRestOfHeader(int word) {
        seg.set(BE_INT, base + REST, word);
        return this;
    }

    public IcmpHeader setEcho(int identifier, int sequence) {
        return setRestOfHeader(identifier << 16 | (sequence & 0xFFFF));
    }

    /** The unused word of a "fragmentation needed" message: zero, then the MTU (RFC 1191 4). */
    public IcmpHeader setNextHopMtu(int mtu) {
        return setRestOfHeader(mtu & 0xFFFF);
    }

    /** Zeroes the checksum, then stores the checksum of the whole message (data must be in place). */
    public IcmpHeader fillChecksum() {
        setChecksum(0);
        setChecksum(Checksum.compute(seg, base, length));
        return this;
    }

    /**
     * Turns an echo request into its reply in place (RFC 792: "the type code changed to 0"), patching
     * the checksum incrementally (RFC 1624) so the data is not summed again.
     */
    public IcmpHeader echoRequestToReply() {
        int oldWord = u16(TYPE);
        int newWord = (TYPE_ECHO_REPLY << 8) | (oldWord & 0xFF);
        seg.set(BE_SHORT, base + TYPE, (short) newWord);
        // RFC 1624 eqn. 3 gives 0x0000 both where the words now sum to 0xFFFF (a full computation gives
        // 0x0000 too) and where they are all zero (a full computation gives 0xFFFF): both verify, but only a
        // full computation tells them apart, and it is needed only then, once in 65,536 (found by fuzzing).
        int c = Checksum.update(checksum(), oldWord, newWord);
        setChecksum(c != 0 ? c : computeChecksum());
        return this;
    }

    /** The error messages of RFC 1122 3.2.2: unreachable, source quench, redirect, time exceeded, parameter problem. */
    public static boolean isError(int type) {
        return type == TYPE_DESTINATION_UNREACHABLE || type == TYPE_SOURCE_QUENCH || type == TYPE_REDIRECT
                || type == TYPE_TIME_EXCEEDED || type == TYPE_PARAMETER_PROBLEM;
    }

    /** The query types known here (echo, router discovery, timestamp, information, address mask). */
    public static boolean isQuery(int type) {
        return type == TYPE_ECHO_REPLY || type == TYPE_ECHO_REQUEST || (type >= TYPE_ROUTER_ADVERTISEMENT
                && type <= TYPE_ROUTER_SOLICITATION) || (type >= TYPE_TIMESTAMP && type <= TYPE_ADDRESS_MASK_REPLY);
    }

    /**
     * Whether an ICMP error may be sent about a datagram, per RFC 1122 3.2.2: not about an ICMP
     * error (nor, as Linux does, an ICMP message of unknown type), not about a fragment other than
     * the first, not about a datagram sent to a broadcast or multicast address or received as a
     * link broadcast, and not to a source that does not name a single host.
     *
     * @param icmpType the type of the offending datagram's ICMP message, or -1 when it is not ICMP
     *                 or too short to tell
     * @param receivedAsBroadcast the link frame was a broadcast, or {@code destination} is a directed
     *                 broadcast of one of the receiver's subnets (only the caller knows those)
     */
    public static boolean mayAnswerWithError(int source, int destination, int protocol, int fragmentOffset,
            int icmpType, boolean receivedAsBroadcast) {
        if (receivedAsBroadcast || fragmentOffset != 0) {
            return false;
        }
        if (Ipv4Address.isBroadcast(destination) || Ipv4Address.isMulticast(destination)) {
            return false;
        }
        if (!Ipv4Address.isSingleHost(source)) {
            return false;
        }
        return protocol != Ipv4Header.PROTOCOL_ICMP || (icmpType >= 0 && isQuery(icmpType));
    }

    /** {@link #mayAnswerWithError(int, int, int, int, int, boolean)} for a wrapped datagram. */
    public static boolean mayAnswerWithError(Ipv4Header ip, boolean receivedAsBroadcast) {
        int icmpType = -1;
        if (ip.protocol() == Ipv4Header.PROTOCOL_ICMP && ip.fragmentOffset() == 0 && ip.availablePayloadLength() > 0) {
            icmpType = ip.segment().get(ValueLayout.JAVA_BYTE, ip.payloadOffset()) & 0xFF;
        }
        return mayAnswerWithError(ip.sourceAddress(), ip.destinationAddress(), ip.protocol(), ip.fragmentOffset(),
                icmpType, receivedAsBroadcast);
    }

    /** Bytes of {@code original} an error quotes: its header and up to 8 bytes of payload (RFC 792). */
    public static int quotedLength(Ipv4Header original) {
        return original.headerLength() + Math.min(QUOTED_PAYLOAD, original.availablePayloadLength());
    }

    /**
     * Writes a whole ICMP error message about {@code original} at {@code offset}: type, code, the
     * rest-of-header word (zero, or the MTU for code 4), the quoted header and 8 payload bytes, and
     * the checksum. Allocates nothing.
     *
     * @return the message length, or -1 when {@code capacity} is too small
     */
    public int emitError(MemorySegment out, long offset, int capacity, int type, int code, int restOfHeader,
            Ipv4Header original) {
        int quoted = quotedLength(original);
        int total = HEADER + quoted;
        if (total > capacity || !wrapForWrite(out, offset, total)) {
            return -1;
        }
        // Quote first: the reply may be built over the very buffer that holds the original.
        MemorySegment.copy(original.segment(), original.offset(), out, offset + HEADER, quoted);
        setType(type).setCode(code).setChecksum(0).setRestOfHeader(restOfHeader);
        fillChecksum();
        return total;
    }

    private int u16(int field) {
        return seg.get(BE_SHORT, base + field) & 0xFFFF;
    }
}
