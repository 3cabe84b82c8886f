package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.i32;
import static dev.nupa.roce.wire.Wire.i64;
import static dev.nupa.roce.wire.Wire.put32;
import static dev.nupa.roce.wire.Wire.put64;

import java.lang.foreign.MemorySegment;

/**
 * The RDMA Extended Transport Header, 16 bytes (IBA vol 1 9.3.3): in RDMA write
 * first/only and read requests.
 *
 * <pre>
 *  bytes 0-7    Virtual Address
 *  bytes 8-11   R_Key
 *  bytes 12-15  DMA Length (of the whole message, 0..2^31)
 * </pre>
 */
public final class Reth {
    public static final int LENGTH = 16;

    private Reth() {
    }

    public static long va(MemorySegment s, long o) {
        return i64(s, o);
    }

    public static int rkey(MemorySegment s, long o) {
        return i32(s, o + 8);
    }

    /** The raw 32 bits; read with {@link Integer#toUnsignedLong} where it matters. */
    public static int dmaLength(MemorySegment s, long o) {
        return i32(s, o + 12);
    }

    public static void write(MemorySegment s, long o, long va, int rkey, int dmaLength) {
        put64(s, o, va);
        put32(s, o + 8, rkey);
        put32(s, o + 12, dmaLength);
    }
}
