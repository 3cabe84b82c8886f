package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.i64;
import static dev.nupa.roce.wire.Wire.put64;

import java.lang.foreign.MemorySegment;

/**
 * The Atomic Acknowledge Extended Transport Header, 8 bytes (IBA vol 1 9.3.6): the
 * remote value before the atomic operation, after the AETH of an atomic acknowledge.
 */
public final class AtomicAckEth {
    public static final int LENGTH = 8;

    private AtomicAckEth() {
    }

    public static long originalData(MemorySegment s, long o) {
        return i64(s, o);
    }

    public static void write(MemorySegment s, long o, long originalData) {
        put64(s, o, originalData);
    }
}
