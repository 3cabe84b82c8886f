package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;

/** An IETH as a value (IBA vol 1 9.3.8). */
public record IethRepr(int rkey) {

    public static IethRepr parse(MemorySegment s, long o) {
        return new IethRepr(Ieth.rkey(s, o));
    }

    public int length() {
        return Ieth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        Ieth.write(s, o, rkey);
    }
}
