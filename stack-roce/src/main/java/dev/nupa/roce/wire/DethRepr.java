package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.requireU24;

import java.lang.foreign.MemorySegment;

/** A DETH as a value (IBA vol 1 9.3.2); the reserved byte is emitted as 0. */
public record DethRepr(int qkey, int srcQp) {

    public DethRepr {
        requireU24("SrcQP", srcQp);
    }

    public static DethRepr parse(MemorySegment s, long o) {
        return new DethRepr(Deth.qkey(s, o), Deth.srcQp(s, o));
    }

    public int length() {
        return Deth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        Deth.write(s, o, qkey, srcQp);
    }
}
