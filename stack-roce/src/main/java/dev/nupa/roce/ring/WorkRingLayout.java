package dev.nupa.roce.ring;

/**
 * Where the bytes of a work ring lie (docs/work-rings.md, the same numbers as {@code native/include/nupa_wqe.h}): a
 * header, a submission ring of 64-byte work requests (WQEs), a completion ring of 32-byte completions (CQEs) and a
 * data area, all in one fabric window that the proxy exports with {@code FabricWindow.WORK_RING}. Little-endian.
 * Words that posters write and words that the proxy writes sit on cache lines of their own.
 */
public final class WorkRingLayout {
    /** "NWRK" as a little-endian u32. */
    public static final int MAGIC = 0x4B52574E;
    public static final int VERSION = 1;

    // ---- header: written by the proxy at setup, then read-only, except where noted ----
    public static final int H_MAGIC = 0;
    public static final int H_VERSION = 4; // u16
    public static final int H_WQE_SIZE = 6; // u16
    public static final int H_CQE_SIZE = 8; // u16
    public static final int H_RING_INDEX = 10; // u16
    public static final int H_SQ_ENTRIES = 12;
    public static final int H_CQ_ENTRIES = 16;
    /** u32 ring state, written by the proxy: {@link #READY}, {@link #ERROR}, {@link #CLOSED}. */
    public static final int H_STATE = 20;
    public static final int H_DATA_OFFSET = 24; // u64
    public static final int H_DATA_LENGTH = 32; // u64
    /** The target's memory region as its connection named it: base address, length and key. */
    public static final int H_REMOTE_ADDR = 40; // u64
    public static final int H_REMOTE_LENGTH = 48; // u64
    public static final int H_REMOTE_KEY = 56;
    public static final int H_QPN = 60;
    public static final int H_PEER_NODE = 64;
    public static final int H_PEER_QPN = 68;
    /** This window's own id and key, so a poster can name the data area as its local window. */
    public static final int H_WINDOW_ID = 72;
    public static final int H_WINDOW_KEY = 76;
    /** u64, posters: positions claimed (a poster takes n slots by a CAS from c to c + n). */
    public static final int H_SQ_CLAIM = 128;
    /** u64, proxy: positions taken; a slot below it may be written again. */
    public static final int H_SQ_HEAD = 192;
    /** u64, proxy: WQEs executed and WQEs that completed in error (for tools). */
    public static final int H_EXECUTED = 200;
    public static final int H_FAILED = 208;
    /** u64, the completion ring's consumer: completions consumed. */
    public static final int H_CQ_HEAD = 256;
    /** u64, proxy: completions written. */
    public static final int H_CQ_TAIL = 320;
    public static final int HEADER_BYTES = 512;

    public static final int SETUP = 0;
    public static final int READY = 1;
    /** The QP broke (a remote error): every later WQE completes with WR_FLUSH_ERR, as in a verbs QP in ERR. */
    public static final int ERROR = 2;
    /** The proxy stopped serving the ring. */
    public static final int CLOSED = 3;

    // ---- a WQE ----
    public static final int WQE_BYTES = 64;
    /** u32: the slot's position + 1 (its low 32 bits), stored last with release; the proxy takes it when it matches. */
    public static final int W_SEQ = 0;
    public static final int W_VERSION = 4; // u8
    public static final int W_OPCODE = 5; // u8
    public static final int W_FLAGS = 6; // u16
    public static final int W_WR_ID = 8; // u64
    public static final int W_LOCAL_WINDOW = 16;
    public static final int W_LOCAL_KEY = 20;
    public static final int W_LOCAL_OFFSET = 24; // u64
    public static final int W_LENGTH = 32;
    public static final int W_IMM = 36;
    public static final int W_REMOTE_ADDR = 40; // u64
    public static final int W_REMOTE_KEY = 48;

    /** Opcodes, numbered like libibverbs' {@code enum ibv_wr_opcode}. */
    public static final int OP_WRITE = 0;
    public static final int OP_WRITE_WITH_IMM = 1;
    public static final int OP_SEND = 2;
    public static final int OP_SEND_WITH_IMM = 3;
    public static final int OP_READ = 4;

    /** Flags: a successful WQE gets a completion only when SIGNALED (an error always gets one). */
    public static final int F_SIGNALED = 1;
    public static final int F_SOLICITED = 2;

    // ---- a CQE ----
    public static final int CQE_BYTES = 32;
    /** u32: the completion's position + 1, stored last with release. */
    public static final int C_SEQ = 0;
    public static final int C_STATUS = 4; // u8, libibverbs' enum ibv_wc_status
    public static final int C_OPCODE = 5; // u8, the WQE's opcode
    public static final int C_WR_ID = 8; // u64
    public static final int C_BYTE_LEN = 16;
    public static final int C_SQ_POSITION = 20; // u32, low bits of the WQE's position

    public static final int MAX_ENTRIES = 1 << 16;

    private WorkRingLayout() {
    }

    public static long sqOffset() {
        return HEADER_BYTES;
    }

    public static long cqOffset(int sqEntries) {
        return HEADER_BYTES + (long) sqEntries * WQE_BYTES;
    }

    /** The data area starts on the first page after the rings. */
    public static long dataOffset(int sqEntries, int cqEntries) {
        long end = cqOffset(sqEntries) + (long) cqEntries * CQE_BYTES;
        return (end + 4095) & ~4095L;
    }

    public static long windowBytes(int sqEntries, int cqEntries, long dataBytes) {
        return dataOffset(sqEntries, cqEntries) + ((dataBytes + 4095) & ~4095L);
    }

    /** Throws with the remedy unless {@code n} is a power of two within 2..{@link #MAX_ENTRIES}. */
    public static void checkEntries(String what, int n) {
        if (n < 2 || n > MAX_ENTRIES || Integer.bitCount(n) != 1) {
            throw new IllegalArgumentException(what + " of " + n + " entries: use a power of two from 2 to " + MAX_ENTRIES);
        }
    }
}
