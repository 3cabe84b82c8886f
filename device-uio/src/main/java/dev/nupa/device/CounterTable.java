package dev.nupa.device;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Counters a node publishes in a window of the fabric ({@link FabricWindow#COUNTERS}), so that tools that only map the
 * fabric file ({@code nupa fabric info}) read them: a header (magic, count, a title of {@link #TITLE} bytes) and
 * entries of a {@link #NAME}-byte name and a 64-bit value. The owner writes values with release stores (one writer);
 * a reader may see them a moment old.
 */
public final class CounterTable {
    static final int MAGIC = 0x4E435452; // "NCTR"
    public static final int TITLE = 48;
    public static final int NAME = 24;
    private static final long HEADER = 8 + TITLE;
    private static final long ENTRY = NAME + 8;

    private CounterTable() {
    }

    /** The bytes a table of {@code count} counters takes. */
    public static long bytes(int count) {
        return HEADER + ENTRY * count;
    }

    /** Lays out the table: the title and the names (ASCII, cut to their fields), every value 0. */
    public static void format(MemorySegment m, String title, String[] names) {
        if (m.byteSize() < bytes(names.length)) {
            throw new FabricException("a counter table of " + names.length + " needs " + bytes(names.length) + " bytes, not "
                    + m.byteSize());
        }
        m.asSlice(0, bytes(names.length)).fill((byte) 0);
        put(m, 8, title, TITLE);
        for (int i = 0; i < names.length; i++) {
            put(m, HEADER + ENTRY * i, names[i], NAME);
        }
        m.set(ValueLayout.JAVA_INT, 4, names.length);
        m.set(ValueLayout.JAVA_INT, 0, MAGIC); // last: a reader that sees the magic sees the rest
    }

    /** Sets counter {@code i}. */
    public static void set(MemorySegment m, int i, long value) {
        ValueLayout.JAVA_LONG.varHandle().setRelease(m, HEADER + ENTRY * i + NAME, value);
    }

    /** The table's title, or null when {@code m} holds no table. */
    public static String title(MemorySegment m) {
        return m.byteSize() >= HEADER && m.get(ValueLayout.JAVA_INT, 0) == MAGIC ? get(m, 8, TITLE) : null;
    }

    /** The counters, by name in table order; empty when {@code m} holds no table. */
    public static Map<String, Long> read(MemorySegment m) {
        Map<String, Long> out = new LinkedHashMap<>();
        if (title(m) == null) {
            return out;
        }
        int n = m.get(ValueLayout.JAVA_INT, 4);
        for (int i = 0; i < n && bytes(i + 1) <= m.byteSize(); i++) {
            long at = HEADER + ENTRY * i;
            out.put(get(m, at, NAME), (long) ValueLayout.JAVA_LONG.varHandle().getAcquire(m, at + NAME));
        }
        return out;
    }

    private static void put(MemorySegment m, long at, String s, int max) {
        byte[] b = s.getBytes(StandardCharsets.US_ASCII);
        MemorySegment.copy(b, 0, m, ValueLayout.JAVA_BYTE, at, Math.min(b.length, max));
    }

    private static String get(MemorySegment m, long at, int max) {
        int n = 0;
        while (n < max && m.get(ValueLayout.JAVA_BYTE, at + n) != 0) {
            n++;
        }
        return new String(m.asSlice(at, n).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII);
    }
}
