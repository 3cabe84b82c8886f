package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.u16;
import static dev.nupa.roce.wire.Wire.u24;
import static dev.nupa.roce.wire.Wire.u8;

import java.lang.foreign.MemorySegment;

/**
 * The Base Transport Header, 12 bytes (IBA vol 1 9.2; RoCEv2 annex A17 for FECN/BECN):
 *
 * <pre>
 *  byte 0      OpCode
 *  byte 1      SE (bit 7) | M (bit 6) | PadCnt (bits 5-4) | TVer (bits 3-0)
 *  bytes 2-3   P_Key
 *  byte 4      FECN (bit 7) | BECN (bit 6) | reserved (bits 5-0)   (IBA: Resv8a)
 *  bytes 5-7   DestQP
 *  byte 8      AckReq (bit 7) | reserved (bits 6-0)
 *  bytes 9-11  PSN
 * </pre>
 *
 * Static accessors over {@code (segment, offset of byte 0)}; the caller has checked the bounds
 * (see {@link RocePacket#wrap}). They never allocate.
 */
public final class Bth {
    public static final int LENGTH = 12;
    /** The default partition key, full member (IBA 10.9): what RoCE uses when partitions are not configured. */
    public static final int DEFAULT_PKEY = 0xFFFF;
    /** Sequence numbers are 24 bits and wrap (9.7). */
    public static final int PSN_MASK = 0xFFFFFF;

    private Bth() {
    }

    public static int opcode(MemorySegment s, long o) {
        return u8(s, o);
    }

    /** Solicited Event: the responder should raise a completion event. */
    public static boolean solicited(MemorySegment s, long o) {
        return (u8(s, o + 1) & 0x80) != 0;
    }

    /** MigReq: path migration state. */
    public static boolean migReq(MemorySegment s, long o) {
        return (u8(s, o + 1) & 0x40) != 0;
    }

    /** Pad bytes (0..3) after the payload that make it a multiple of 4. */
    public static int padCount(MemorySegment s, long o) {
        return (u8(s, o + 1) >>> 4) & 3;
    }

    /** Transport header version; 0 is the only one defined. */
    public static int tver(MemorySegment s, long o) {
        return u8(s, o + 1) & 0xF;
    }

    public static int pkey(MemorySegment s, long o) {
        return u16(s, o + 2);
    }

    /** Forward congestion notification (RoCEv2 annex A17; a bit of IBA's Resv8a, excluded from the ICRC). */
    public static boolean fecn(MemorySegment s, long o) {
        return (u8(s, o + 4) & 0x80) != 0;
    }

    /** Backward congestion notification (as {@link #fecn}). */
    public static boolean becn(MemorySegment s, long o) {
        return (u8(s, o + 4) & 0x40) != 0;
    }

    public static int destQp(MemorySegment s, long o) {
        return u24(s, o + 4);
    }

    /** AckReq: the requester asks for an acknowledge of this packet. */
    public static boolean ackReq(MemorySegment s, long o) {
        return (u8(s, o + 8) & 0x80) != 0;
    }

    public static int psn(MemorySegment s, long o) {
        return u24(s, o + 8);
    }

    /**
     * Writes all 12 bytes: MigReq 0, TVer 0, FECN/BECN 0 and the reserved bits 0 (9.2: reserved
     * fields are sent as 0). Values are masked to their widths; {@link BthRepr} validates.
     */
    public static void write(MemorySegment s, long o, int opcode, boolean solicited, int padCount, int pkey,
            int destQp, boolean ackReq, int psn) {
        // Bytes 0-7 as one big-endian long and 8-11 as one int: two checked stores instead of five.
        Wire.put64(s, o, (long) (opcode & 0xFF) << 56 | (long) ((solicited ? 0x80 : 0) | (padCount & 3) << 4) << 48
                | (long) (pkey & 0xFFFF) << 32 | (destQp & 0xFFFFFF));
        Wire.put32(s, o + 8, (ackReq ? 0x80 << 24 : 0) | (psn & 0xFFFFFF));
    }
}
