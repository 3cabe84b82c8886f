package dev.nupa.roce.wire;

/**
 * BTH opcodes we carry (IBA vol 1 9.2.1): the reliable connected (RC)
 * set and the unreliable datagram (UD) sends. The top three bits pick the transport (000 RC,
 * 011 UD), the low five the operation. UC, RD and the extended-atomic operations are not supported, nor is
 * CNP (0x81, read by {@link Cnp}, not a transport packet): {@link #flags} answers 0 for them.
 *
 * <p>For each opcode a table says which extension headers follow the BTH and whether a payload
 * does. They follow in the spec's order (9.2): DETH, RETH, AtomicETH, AETH,
 * AtomicAckETH, ImmDt, then the payload and its pad. Lookups are array reads, so the datapath
 * decodes an opcode without a switch. IETH comes last of them, where the immediate data would be (the two never
 * meet).
 */
public final class Opcode {
    public static final int RC_SEND_FIRST = 0x00;
    public static final int RC_SEND_MIDDLE = 0x01;
    public static final int RC_SEND_LAST = 0x02;
    public static final int RC_SEND_LAST_WITH_IMMEDIATE = 0x03;
    public static final int RC_SEND_ONLY = 0x04;
    public static final int RC_SEND_ONLY_WITH_IMMEDIATE = 0x05;
    public static final int RC_RDMA_WRITE_FIRST = 0x06;
    public static final int RC_RDMA_WRITE_MIDDLE = 0x07;
    public static final int RC_RDMA_WRITE_LAST = 0x08;
    public static final int RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09;
    public static final int RC_RDMA_WRITE_ONLY = 0x0A;
    public static final int RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B;
    public static final int RC_RDMA_READ_REQUEST = 0x0C;
    public static final int RC_RDMA_READ_RESPONSE_FIRST = 0x0D;
    public static final int RC_RDMA_READ_RESPONSE_MIDDLE = 0x0E;
    public static final int RC_RDMA_READ_RESPONSE_LAST = 0x0F;
    public static final int RC_RDMA_READ_RESPONSE_ONLY = 0x10;
    public static final int RC_ACKNOWLEDGE = 0x11;
    public static final int RC_ATOMIC_ACKNOWLEDGE = 0x12;
    public static final int RC_COMPARE_SWAP = 0x13;
    public static final int RC_FETCH_ADD = 0x14;
    public static final int RC_SEND_LAST_WITH_INVALIDATE = 0x16;
    public static final int RC_SEND_ONLY_WITH_INVALIDATE = 0x17;
    public static final int UD_SEND_ONLY = 0x64;
    public static final int UD_SEND_ONLY_WITH_IMMEDIATE = 0x65;

    /** A RETH follows the BTH (RDMA write first/only, read request). */
    public static final int RETH = 1;
    /** An ImmDt follows (the "with immediate" opcodes). */
    public static final int IMMDT = 2;
    /** An AETH follows (acknowledge, atomic acknowledge, read responses but the middle ones). */
    public static final int AETH = 4;
    /** An AtomicETH follows (compare-swap, fetch-add). */
    public static final int ATOMIC_ETH = 8;
    /** An AtomicAckETH follows (atomic acknowledge). */
    public static final int ATOMIC_ACK_ETH = 16;
    /** A DETH follows (UD). */
    public static final int DETH = 32;
    /** The packet carries payload (possibly zero bytes) and so may carry pad. */
    public static final int PAYLOAD = 64;
    /** The first packet of a message. Single-packet operations (ONLY, read request, atomics, acks) are FIRST|LAST. */
    public static final int FIRST = 128;
    /** A middle packet of a message. */
    public static final int MIDDLE = 256;
    /** The last packet of a message. */
    public static final int LAST = 512;
    /** Sent by a requester. */
    public static final int REQUEST = 1024;
    /** Sent by a responder: acknowledge, read response, atomic acknowledge. */
    public static final int RESPONSE = 2048;
    /** An IETH follows (the "with invalidate" SENDs). */
    public static final int IETH = 4096;

    private static final int[] FLAGS = new int[256];
    private static final int[] EXT_LENGTH = new int[256];
    private static final String[] NAMES = new String[256];

    static {
        int req = REQUEST;
        int one = FIRST | LAST;
        define(RC_SEND_FIRST, "RC_SEND_FIRST", req | PAYLOAD | FIRST);
        define(RC_SEND_MIDDLE, "RC_SEND_MIDDLE", req | PAYLOAD | MIDDLE);
        define(RC_SEND_LAST, "RC_SEND_LAST", req | PAYLOAD | LAST);
        define(RC_SEND_LAST_WITH_IMMEDIATE, "RC_SEND_LAST_WITH_IMMEDIATE", req | IMMDT | PAYLOAD | LAST);
        define(RC_SEND_ONLY, "RC_SEND_ONLY", req | PAYLOAD | one);
        define(RC_SEND_ONLY_WITH_IMMEDIATE, "RC_SEND_ONLY_WITH_IMMEDIATE", req | IMMDT | PAYLOAD | one);
        define(RC_RDMA_WRITE_FIRST, "RC_RDMA_WRITE_FIRST", req | RETH | PAYLOAD | FIRST);
        define(RC_RDMA_WRITE_MIDDLE, "RC_RDMA_WRITE_MIDDLE", req | PAYLOAD | MIDDLE);
        define(RC_RDMA_WRITE_LAST, "RC_RDMA_WRITE_LAST", req | PAYLOAD | LAST);
        define(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", req | IMMDT | PAYLOAD | LAST);
        define(RC_RDMA_WRITE_ONLY, "RC_RDMA_WRITE_ONLY", req | RETH | PAYLOAD | one);
        define(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", req | RETH | IMMDT | PAYLOAD | one);
        define(RC_RDMA_READ_REQUEST, "RC_RDMA_READ_REQUEST", req | RETH | one);
        define(RC_RDMA_READ_RESPONSE_FIRST, "RC_RDMA_READ_RESPONSE_FIRST", RESPONSE | AETH | PAYLOAD | FIRST);
        define(RC_RDMA_READ_RESPONSE_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE", RESPONSE | PAYLOAD | MIDDLE);
        define(RC_RDMA_READ_RESPONSE_LAST, "RC_RDMA_READ_RESPONSE_LAST", RESPONSE | AETH | PAYLOAD | LAST);
        define(RC_RDMA_READ_RESPONSE_ONLY, "RC_RDMA_READ_RESPONSE_ONLY", RESPONSE | AETH | PAYLOAD | one);
        define(RC_ACKNOWLEDGE, "RC_ACKNOWLEDGE", RESPONSE | AETH | one);
        define(RC_ATOMIC_ACKNOWLEDGE, "RC_ATOMIC_ACKNOWLEDGE", RESPONSE | AETH | ATOMIC_ACK_ETH | one);
        define(RC_COMPARE_SWAP, "RC_COMPARE_SWAP", req | ATOMIC_ETH | one);
        define(RC_FETCH_ADD, "RC_FETCH_ADD", req | ATOMIC_ETH | one);
        define(RC_SEND_LAST_WITH_INVALIDATE, "RC_SEND_LAST_WITH_INVALIDATE", req | IETH | PAYLOAD | LAST);
        define(RC_SEND_ONLY_WITH_INVALIDATE, "RC_SEND_ONLY_WITH_INVALIDATE", req | IETH | PAYLOAD | one);
        define(UD_SEND_ONLY, "UD_SEND_ONLY", req | DETH | PAYLOAD | one);
        define(UD_SEND_ONLY_WITH_IMMEDIATE, "UD_SEND_ONLY_WITH_IMMEDIATE", req | DETH | IMMDT | PAYLOAD | one);
    }

    private Opcode() {
    }

    private static void define(int opcode, String name, int flags) {
        FLAGS[opcode] = flags;
        NAMES[opcode] = name;
        EXT_LENGTH[opcode] = ((flags & DETH) != 0 ? Deth.LENGTH : 0)
                + ((flags & RETH) != 0 ? Reth.LENGTH : 0)
                + ((flags & ATOMIC_ETH) != 0 ? AtomicEth.LENGTH : 0)
                + ((flags & AETH) != 0 ? Aeth.LENGTH : 0)
                + ((flags & ATOMIC_ACK_ETH) != 0 ? AtomicAckEth.LENGTH : 0)
                + ((flags & IMMDT) != 0 ? ImmDt.LENGTH : 0)
                + ((flags & IETH) != 0 ? Ieth.LENGTH : 0);
    }

    /** The header and role bits of {@code opcode}, or 0 for one we do not support (or outside 0..255). */
    public static int flags(int opcode) {
        return (opcode & ~0xFF) == 0 ? FLAGS[opcode] : 0;
    }

    /** Whether we carry {@code opcode}. */
    public static boolean supported(int opcode) {
        return flags(opcode) != 0;
    }

    /** Bytes of extension headers between the BTH and the payload; 0 for an unsupported opcode. */
    public static int extLength(int opcode) {
        return (opcode & ~0xFF) == 0 ? EXT_LENGTH[opcode] : 0;
    }

    /** BTH plus extension headers: the smallest packet with this opcode. */
    public static int headerLength(int opcode) {
        return Bth.LENGTH + extLength(opcode);
    }

    /** "RC_RDMA_WRITE_FIRST", or the value in hex ("0x2a") for an opcode we do not carry. */
    public static String name(int opcode) {
        String n = (opcode & ~0xFF) == 0 ? NAMES[opcode] : null;
        return n != null ? n : String.format("0x%02x", opcode);
    }
}
