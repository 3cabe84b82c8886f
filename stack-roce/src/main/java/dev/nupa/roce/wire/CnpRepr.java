package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.requireU24;

import java.lang.foreign.MemorySegment;

/** A CNP as a value (IBA annex A17.9.2), for tests and tools; the datapath uses {@link Cnp}. */
public record CnpRepr(int destQp, boolean becn) {

    public CnpRepr {
        requireU24("DestQP", destQp);
    }

    /** The CNP of {@code length} bytes at {@code o} (ICRC excluded); IllegalArgumentException when it is not a whole one. */
    public static CnpRepr parse(MemorySegment s, long o, int length) {
        if (length < Cnp.LENGTH) {
            throw new IllegalArgumentException("CNP of " + length + " bytes: needs " + Cnp.LENGTH + " (BTH and 16 reserved)");
        }
        if (!Cnp.isCnp(s, o, length)) {
            throw new IllegalArgumentException("not a CNP: BTH opcode 0x" + Integer.toHexString(Bth.opcode(s, o)));
        }
        return new CnpRepr(Cnp.destQp(s, o), Bth.becn(s, o));
    }

    public int length() {
        return Cnp.LENGTH;
    }

    /** Emits BECN as A17.9.2 asks, whatever {@link #becn} says (a parsed peer's CNP may lack it). */
    public void emitInto(MemorySegment s, long o) {
        Cnp.write(s, o, destQp);
    }
}
