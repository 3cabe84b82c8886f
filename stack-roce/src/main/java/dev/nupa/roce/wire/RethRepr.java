package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;

/** A RETH as a value (IBA vol 1 9.3.3). */
public record RethRepr(long va, int rkey, int dmaLength) {
    /** The largest message IBA allows, 2^31 bytes. */
    public static final long MAX_DMA_LENGTH = 1L << 31;

    public RethRepr {
        if (Integer.toUnsignedLong(dmaLength) > MAX_DMA_LENGTH) {
            throw new IllegalArgumentException("RETH DMA length must be 0..2^31: " + Integer.toUnsignedLong(dmaLength));
        }
    }

    public static RethRepr parse(MemorySegment s, long o) {
        return new RethRepr(Reth.va(s, o), Reth.rkey(s, o), Reth.dmaLength(s, o));
    }

    public int length() {
        return Reth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        Reth.write(s, o, va, rkey, dmaLength);
    }
}
