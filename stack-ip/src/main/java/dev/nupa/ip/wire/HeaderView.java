package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;

/**
 * What the flyweight views of the wire headers share: the memory they look at ({@link #segment}, from
 * {@link #offset}, {@code length} bytes given to wrap) and the bounds check a wrap makes before it reads.
 */
public abstract class HeaderView {
    protected MemorySegment seg;
    protected long base;
    protected int length;

    /** Whether {@code length} bytes at {@code offset} lie inside {@code seg} and are at least {@code min}. */
    protected static boolean fits(MemorySegment seg, long offset, int length, int min) {
        return offset >= 0 && length >= min && offset <= seg.byteSize() - length;
    }

    /** Points the view at {@code length} bytes at {@code offset} of {@code seg}, without reading them. */
    protected final void point(MemorySegment seg, long offset, int length) {
        this.seg = seg;
        this.base = offset;
        this.length = length;
    }

    /** The memory the view looks at. */
    public final MemorySegment segment() {
        return seg;
    }

    /** Offset of the header in {@link #segment()}. */
    public final long offset() {
        return base;
    }
}
