package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.requireU24;

import java.lang.foreign.MemorySegment;

/** An AETH as a value (IBA vol 1 9.3.5); {@link Aeth#ack}, {@link Aeth#nak} and {@link Aeth#rnrNak} build syndromes. */
public record AethRepr(int syndrome, int msn) {

    public AethRepr {
        if ((syndrome & ~0x7F) != 0) {
            throw new IllegalArgumentException("AETH syndrome must be 0..0x7F (bit 7 is reserved): " + syndrome);
        }
        if (Aeth.type(syndrome) == 2) {
            throw new IllegalArgumentException("AETH syndrome type 2 is reserved: 0x" + Integer.toHexString(syndrome));
        }
        requireU24("MSN", msn);
    }

    public static AethRepr parse(MemorySegment s, long o) {
        return new AethRepr(Aeth.syndrome(s, o), Aeth.msn(s, o));
    }

    public int type() {
        return Aeth.type(syndrome);
    }

    public int value() {
        return Aeth.value(syndrome);
    }

    public int length() {
        return Aeth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        Aeth.write(s, o, syndrome, msn);
    }
}
