package dev.nupa.gateway;

import dev.nupa.l2.RoceV2;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What the gateway checks of RoCEv2 crossing it (IBA vol 1 annex A17.4): an IPv4 datagram to UDP port 4791 is
 * whole (RoCEv2 is never fragmented), its UDP length matches the IP payload, it holds a BTH and an ICRC, and the
 * ICRC matches ({@link RoceV2#verifyIcrc}: TTL, TOS and the checksums are masked, so routing keeps it valid).
 * Everything else is not RoCEv2 and passes. Reads only; allocates nothing.
 */
final class RoceV2Filter {
    /** Not UDP to 4791 (or too short to tell): not this filter's business. */
    static final int NOT_ROCEV2 = 0;
    static final int OK = 1;
    /** Fragmented, a UDP length that disagrees with IP, or no room for a BTH and an ICRC. */
    static final int MALFORMED = 2;
    static final int BAD_ICRC = 3;

    private static final int MIN_TRANSPORT = RoceV2.BTH_LENGTH + RoceV2.ICRC_LENGTH;

    private RoceV2Filter() {
    }

    /** Classifies the IPv4 datagram of {@code length} bytes at {@code offset} of {@code s}. */
    static int classify(MemorySegment s, long offset, int length) {
        if (length < RoceV2.IPV4_UDP_HEADERS) {
            return NOT_ROCEV2;
        }
        int ihl = (s.get(ValueLayout.JAVA_BYTE, offset) & 0xF) * 4;
        if ((s.get(ValueLayout.JAVA_BYTE, offset + 9) & 0xFF) != 17 || ihl < RoceV2.IPV4_HEADER
                || ihl + RoceV2.UDP_HEADER > length) {
            return NOT_ROCEV2;
        }
        int flagsOffset = s.get(EthernetFrame.BE_SHORT, offset + 6) & 0x3FFF; // MF and the fragment offset
        if ((s.get(EthernetFrame.BE_SHORT, offset + ihl + 2) & 0xFFFF) != RoceV2.UDP_PORT) {
            return NOT_ROCEV2;
        }
        int total = s.get(EthernetFrame.BE_SHORT, offset + 2) & 0xFFFF;
        int udpLength = s.get(EthernetFrame.BE_SHORT, offset + ihl + 4) & 0xFFFF;
        if (flagsOffset != 0 || total > length || udpLength != total - ihl
                || udpLength < RoceV2.UDP_HEADER + MIN_TRANSPORT) {
            return MALFORMED;
        }
        return RoceV2.verifyIcrc(s, offset, total - RoceV2.ICRC_LENGTH) ? OK : BAD_ICRC;
    }
}
