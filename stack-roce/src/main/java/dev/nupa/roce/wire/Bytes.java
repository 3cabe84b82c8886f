package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Byte moves on the hot path. */
public final class Bytes {
    /** Below this, a copy is done with plain loads and stores: MemorySegment.copy's fixed cost (a call, checks) dominates small moves. */
    public static final int SMALL = 16;

    private Bytes() {
    }

    /** {@link MemorySegment#copy(MemorySegment, long, MemorySegment, long, long)}, cheaper for the few bytes of a small message. */
    public static void copy(MemorySegment src, long srcOff, MemorySegment dst, long dstOff, int n) {
        if (n == 8) {
            dst.set(ValueLayout.JAVA_LONG_UNALIGNED, dstOff, src.get(ValueLayout.JAVA_LONG_UNALIGNED, srcOff));
        } else if (n < SMALL) {
            for (int i = 0; i < n; i++) {
                dst.set(ValueLayout.JAVA_BYTE, dstOff + i, src.get(ValueLayout.JAVA_BYTE, srcOff + i));
            }
        } else {
            MemorySegment.copy(src, srcOff, dst, dstOff, n);
        }
    }
}
