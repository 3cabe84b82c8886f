package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.i32;
import static dev.nupa.roce.wire.Wire.i64;
import static dev.nupa.roce.wire.Wire.put32;
import static dev.nupa.roce.wire.Wire.put64;

import java.lang.foreign.MemorySegment;

/**
 * The Atomic Extended Transport Header, 28 bytes (IBA vol 1 9.3.4): in compare-swap
 * and fetch-add requests.
 *
 * <pre>
 *  bytes 0-7    Virtual Address (8-byte aligned on the responder)
 *  bytes 8-11   R_Key
 *  bytes 12-19  Swap (compare-swap) or Add (fetch-add) Data
 *  bytes 20-27  Compare Data (compare-swap; ignored by fetch-add)
 * </pre>
 */
public final class AtomicEth {
    public static final int LENGTH = 28;

    private AtomicEth() {
    }

    public static long va(MemorySegment s, long o) {
        return i64(s, o);
    }

    public static int rkey(MemorySegment s, long o) {
        return i32(s, o + 8);
    }

    public static long swapAdd(MemorySegment s, long o) {
        return i64(s, o + 12);
    }

    public static long compare(MemorySegment s, long o) {
        return i64(s, o + 20);
    }

    public static void write(MemorySegment s, long o, long va, int rkey, long swapAdd, long compare) {
        put64(s, o, va);
        put32(s, o + 8, rkey);
        put64(s, o + 12, swapAdd);
        put64(s, o + 20, compare);
    }
}
