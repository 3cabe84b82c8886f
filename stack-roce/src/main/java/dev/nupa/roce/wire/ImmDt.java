package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.i32;
import static dev.nupa.roce.wire.Wire.put32;

import java.lang.foreign.MemorySegment;

/**
 * Immediate Data, 4 bytes (IBA vol 1 9.3.7): opaque to the transport, handed to the
 * receiver's completion. In network order on the wire; libibverbs passes it through as __be32.
 */
public final class ImmDt {
    public static final int LENGTH = 4;

    private ImmDt() {
    }

    public static int get(MemorySegment s, long o) {
        return i32(s, o);
    }

    public static void write(MemorySegment s, long o, int immediate) {
        put32(s, o, immediate);
    }
}
