package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Big-endian, unaligned field access shared by the header views (IBA fields are in network order). */
public final class Wire {
    public static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private Wire() {
    }

    public static int u8(MemorySegment s, long o) {
        return s.get(ValueLayout.JAVA_BYTE, o) & 0xFF;
    }

    public static int u16(MemorySegment s, long o) {
        return s.get(U16, o) & 0xFFFF;
    }

    public static int i32(MemorySegment s, long o) {
        return s.get(U32, o);
    }

    public static long i64(MemorySegment s, long o) {
        return s.get(U64, o);
    }

    /** The 24-bit field in the low three bytes of the 32-bit word at {@code o}. */
    public static int u24(MemorySegment s, long o) {
        return s.get(U32, o) & 0xFFFFFF;
    }

    public static void put8(MemorySegment s, long o, int v) {
        s.set(ValueLayout.JAVA_BYTE, o, (byte) v);
    }

    public static void put16(MemorySegment s, long o, int v) {
        s.set(U16, o, (short) v);
    }

    public static void put32(MemorySegment s, long o, int v) {
        s.set(U32, o, v);
    }

    public static void put64(MemorySegment s, long o, long v) {
        s.set(U64, o, v);
    }

    /** A byte of 8 high bits followed by a 24-bit value: the layout of DestQP, PSN, MSN and SrcQP words. */
    public static void put8And24(MemorySegment s, long o, int high, int low24) {
        s.set(U32, o, (high << 24) | (low24 & 0xFFFFFF));
    }

    public static void requireU24(String what, int v) {
        if ((v & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException(what + " must be 0..0xFFFFFF (24 bits): " + v);
        }
    }
}
