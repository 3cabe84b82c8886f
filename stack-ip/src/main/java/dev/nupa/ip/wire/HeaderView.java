package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;

/**
 * What the flyweight views of the wire headers share: the memory they look at ({@link #segment}, from
 * {@link #offset}, {@code length} bytes given to wrap). Each view's wrap checks those bounds itself: in one shared
 * method the JIT's profile of {@code seg.byteSize()} mixes the heap and native segments every view sees, and the
 * call stops being inlined on the hot path (Vert.x bulk echo fell from about 20 to 10 Gbit/s on 2 vCPUs).
 */
public abstract class HeaderView {
    protected MemorySegment seg;
    protected long base;
    protected int length;

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
