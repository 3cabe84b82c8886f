package dev.nupa.roce.wire;

import dev.nupa.l2.RoceV2;
import java.lang.foreign.MemorySegment;

/**
 * The RoCEv2 Invariant CRC, for the RDMA layer's users (the gateway): a thin face of
 * {@link RoceV2}, module stack-l2, which holds the one implementation (the pcap writer needs it too,
 * and stack-l2 may not import this module). See {@link RoceV2} for what is covered and the byte order
 * on the wire (the CRC 0x2a00fd82 is sent as {@code 82 fd 00 2a}).
 */
public final class Icrc {
    /** ICRC bytes at the end of a RoCEv2 packet. */
    public static final int LENGTH = RoceV2.ICRC_LENGTH;
    /** The IANA port of RoCEv2. */
    public static final int UDP_PORT = RoceV2.UDP_PORT;

    private Icrc() {
    }

    /**
     * The ICRC of the IPv4 datagram at {@code ipOffset} whose first {@code length} bytes (IPv4
     * header, UDP header, BTH, extension headers, payload, pad; the ICRC itself excluded) are
     * covered. Throws IllegalArgumentException when those bytes are not IPv4 + UDP + BTH or do not
     * lie inside {@code s}; {@link #verify} answers false instead.
     */
    public static int compute(MemorySegment s, long ipOffset, int length) {
        return RoceV2.icrc(s, ipOffset, length);
    }

    /**
     * Whether the 4 bytes after the first {@code length} bytes at {@code ipOffset} hold the ICRC
     * of those bytes. False, never an exception, for anything malformed.
     */
    public static boolean verify(MemorySegment s, long ipOffset, int length) {
        return RoceV2.verifyIcrc(s, ipOffset, length);
    }

    /** Computes the ICRC of the first {@code length} bytes and stores it in the 4 bytes after them. */
    public static void write(MemorySegment s, long ipOffset, int length) {
        RoceV2.writeIcrc(s, ipOffset, length);
    }
}
