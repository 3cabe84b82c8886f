package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.i32;
import static dev.nupa.roce.wire.Wire.put32;
import static dev.nupa.roce.wire.Wire.put8And24;
import static dev.nupa.roce.wire.Wire.u24;

import java.lang.foreign.MemorySegment;

/**
 * The Datagram Extended Transport Header, 8 bytes (IBA vol 1 9.3.2): in UD sends.
 *
 * <pre>
 *  bytes 0-3  Q_Key
 *  byte 4     reserved
 *  bytes 5-7  SrcQP
 * </pre>
 */
public final class Deth {
    public static final int LENGTH = 8;

    private Deth() {
    }

    public static int qkey(MemorySegment s, long o) {
        return i32(s, o);
    }

    public static int srcQp(MemorySegment s, long o) {
        return u24(s, o + 4);
    }

    public static void write(MemorySegment s, long o, int qkey, int srcQp) {
        put32(s, o, qkey);
        put8And24(s, o + 4, 0, srcQp);
    }
}
