package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.i32;
import static dev.nupa.roce.wire.Wire.put32;

import java.lang.foreign.MemorySegment;

/**
 * The Invalidate Extended Transport Header, 4 bytes (IBA vol 1 9.3.8): the R_Key a SEND_LAST or SEND_ONLY
 * WITH_INVALIDATE asks the responder to invalidate. Network order on the wire.
 */
public final class Ieth {
    public static final int LENGTH = 4;

    private Ieth() {
    }

    public static int rkey(MemorySegment s, long o) {
        return i32(s, o);
    }

    public static void write(MemorySegment s, long o, int rkey) {
        put32(s, o, rkey);
    }
}
