package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;

/**
 * A reusable flyweight over one InfiniBand transport packet as it rides the fabric: the BTH first,
 * then the opcode's extension headers in the spec's order (IBA vol 1 9.2, 9.3: DETH, RETH,
 * AtomicETH, AETH, AtomicAckETH, ImmDt, IETH), then the payload and its pad. No LRH/GRH and no ICRC:
 * the link frame's protocol says "RDMA" and the fabric does not corrupt (docs/rdma-wire.md).
 *
 * <p>{@link #wrap} checks everything once and never throws; after {@link #OK} the offsets name
 * headers that lie inside the wrapped bytes, so the static accessors of {@link Bth}, {@link Reth}
 * and the others read them without further checks. After any other status the view describes no
 * packet. Wrapping allocates nothing, so one instance serves every packet of a datapath loop.
 */
public final class RocePacket {
    public static final int OK = 0;
    /** The range lies (partly) outside the segment, or is shorter than the BTH and the opcode's headers. */
    public static final int TRUNCATED = 1;
    /** An opcode {@link Opcode#flags} does not know (UC, RD, CNP, reserved values). */
    public static final int UNKNOWN_OPCODE = 2;
    /** TVer is not 0, the only transport version (9.2). */
    public static final int BAD_VERSION = 3;
    /** The pad count exceeds the bytes after the headers, or pad on an opcode that carries no payload (9.2). */
    public static final int BAD_PAD = 4;
    /** Bytes after the headers of an opcode that carries no payload (acknowledges, read requests, atomics). */
    public static final int BAD_LENGTH = 5;

    private static final String[] STATUS_NAMES = {
        "OK", "TRUNCATED", "UNKNOWN_OPCODE", "BAD_VERSION", "BAD_PAD", "BAD_LENGTH"
    };

    private MemorySegment segment = MemorySegment.NULL;
    private long bth = -1;
    private long bthHi;
    private int bthLo;
    private int length;
    private int opcode = -1;
    private int flags;
    private long deth = -1;
    private long reth = -1;
    private long atomicEth = -1;
    private long aeth = -1;
    private long atomicAckEth = -1;
    private long immDt = -1;
    private long ieth = -1;
    private long payload = -1;
    private int payloadLength;

    /** "OK", "TRUNCATED", ... or "status N". */
    public static String statusName(int status) {
        return status >= 0 && status < STATUS_NAMES.length ? STATUS_NAMES[status] : "status " + status;
    }

    /**
     * Views the {@code length} bytes at {@code offset} of {@code s} as one packet and says whether
     * it is well formed. Checks, in this order: the range lies inside the segment and holds a BTH
     * ({@link #TRUNCATED}), the opcode ({@link #UNKNOWN_OPCODE}), TVer ({@link #BAD_VERSION}), room
     * for the extension headers ({@link #TRUNCATED}), then pad and payload ({@link #BAD_PAD},
     * {@link #BAD_LENGTH}). A zero-length payload is legal on a payload opcode (an RDMA write or
     * send of 0 bytes).
     */
    public int wrap(MemorySegment s, long offset, int length) {
        clear();
        if (s == null || offset < 0 || length < Bth.LENGTH || offset > s.byteSize() - length) {
            return TRUNCATED;
        }
        // The BTH read once, as a long (bytes 0-7) and an int (8-11); the accessors below use these words.
        long hi = Wire.i64(s, offset);
        int lo = Wire.i32(s, offset + 8);
        int op = (int) (hi >>> 56);
        int f = Opcode.flags(op);
        if (f == 0) {
            return UNKNOWN_OPCODE;
        }
        if (((hi >>> 48) & 0xF) != 0) {
            return BAD_VERSION;
        }
        int headers = Bth.LENGTH + Opcode.extLength(op);
        if (length < headers) {
            return TRUNCATED;
        }
        int rest = length - headers;
        int pad = (int) (hi >>> 52) & 3;
        if ((f & Opcode.PAYLOAD) == 0) {
            if (pad != 0) {
                return BAD_PAD;
            }
            if (rest != 0) {
                return BAD_LENGTH;
            }
        } else if (pad > rest) {
            return BAD_PAD;
        }
        this.segment = s;
        this.bth = offset;
        this.bthHi = hi;
        this.bthLo = lo;
        this.length = length;
        this.opcode = op;
        this.flags = f;
        long at = offset + Bth.LENGTH;
        if ((f & Opcode.DETH) != 0) {
            deth = at;
            at += Deth.LENGTH;
        }
        if ((f & Opcode.RETH) != 0) {
            reth = at;
            at += Reth.LENGTH;
        }
        if ((f & Opcode.ATOMIC_ETH) != 0) {
            atomicEth = at;
            at += AtomicEth.LENGTH;
        }
        if ((f & Opcode.AETH) != 0) {
            aeth = at;
            at += Aeth.LENGTH;
        }
        if ((f & Opcode.ATOMIC_ACK_ETH) != 0) {
            atomicAckEth = at;
            at += AtomicAckEth.LENGTH;
        }
        if ((f & Opcode.IMMDT) != 0) {
            immDt = at;
            at += ImmDt.LENGTH;
        }
        if ((f & Opcode.IETH) != 0) {
            ieth = at;
            at += Ieth.LENGTH;
        }
        payload = at;
        payloadLength = rest - pad;
        return OK;
    }

    private void clear() {
        segment = MemorySegment.NULL;
        bth = -1;
        bthHi = 0;
        bthLo = 0;
        length = 0;
        opcode = -1;
        flags = 0;
        deth = -1;
        reth = -1;
        atomicEth = -1;
        aeth = -1;
        atomicAckEth = -1;
        immDt = -1;
        ieth = -1;
        payload = -1;
        payloadLength = 0;
    }

    public MemorySegment segment() {
        return segment;
    }

    public int opcode() {
        return opcode;
    }

    /** {@link Opcode#flags} of the opcode. */
    public int flags() {
        return flags;
    }

    /** The wrapped length: headers, payload and pad. */
    public int length() {
        return length;
    }

    /** Offset of the BTH in {@link #segment}. */
    public long bth() {
        return bth;
    }

    /** Offset of the DETH, or -1. */
    public long deth() {
        return deth;
    }

    /** Offset of the RETH, or -1. */
    public long reth() {
        return reth;
    }

    /** Offset of the AtomicETH, or -1. */
    public long atomicEth() {
        return atomicEth;
    }

    /** Offset of the AETH, or -1. */
    public long aeth() {
        return aeth;
    }

    /** Offset of the AtomicAckETH, or -1. */
    public long atomicAckEth() {
        return atomicAckEth;
    }

    /** Offset of the ImmDt, or -1. */
    public long immDt() {
        return immDt;
    }

    /** Offset of the IETH, or -1. */
    public long ieth() {
        return ieth;
    }

    /** Offset of the payload: right after the last header (the end of the headers when there is none). */
    public long payload() {
        return payload;
    }

    /** Payload bytes: the bytes after the headers minus the pad count. */
    public int payloadLength() {
        return payloadLength;
    }

    /** The BTH pad count (0..3). */
    public int padCount() {
        return (int) (bthHi >>> 52) & 3;
    }

    /** The BTH SE bit (solicited event). */
    public boolean solicited() {
        return (bthHi & 1L << 55) != 0;
    }

    /** The BTH destination QP. */
    public int destQp() {
        return (int) bthHi & Bth.PSN_MASK;
    }

    /** The BTH AckReq bit. */
    public boolean ackReq() {
        return bthLo < 0;
    }

    /** The BTH PSN. */
    public int psn() {
        return bthLo & Bth.PSN_MASK;
    }

    public boolean has(int flag) {
        return (flags & flag) != 0;
    }
}
