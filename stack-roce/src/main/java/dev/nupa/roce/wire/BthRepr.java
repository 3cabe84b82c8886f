package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.requireU24;

import java.lang.foreign.MemorySegment;

/**
 * A BTH as a value, for tests and the control plane (the datapath uses {@link Bth}). TVer is always
 * 0 and the reserved bits are emitted as 0 (IBA vol 1 9.2).
 */
public record BthRepr(int opcode, boolean solicited, boolean migReq, int padCount, int pkey, boolean fecn,
        boolean becn, int destQp, boolean ackReq, int psn) {

    public BthRepr {
        if ((opcode & ~0xFF) != 0) {
            throw new IllegalArgumentException("BTH opcode must be 0..255: " + opcode);
        }
        if ((padCount & ~3) != 0) {
            throw new IllegalArgumentException("BTH pad count must be 0..3: " + padCount);
        }
        if ((pkey & ~0xFFFF) != 0) {
            throw new IllegalArgumentException("P_Key must be 0..0xFFFF: " + pkey);
        }
        requireU24("DestQP", destQp);
        requireU24("PSN", psn);
    }

    /** The common case: no MigReq, no congestion bits. */
    public BthRepr(int opcode, boolean solicited, int padCount, int pkey, int destQp, boolean ackReq, int psn) {
        this(opcode, solicited, false, padCount, pkey, false, false, destQp, ackReq, psn);
    }

    /** Reads the BTH at {@code o}; IllegalArgumentException when TVer is not 0 (no other version is defined). */
    public static BthRepr parse(MemorySegment s, long o) {
        if (Bth.tver(s, o) != 0) {
            throw new IllegalArgumentException("BTH TVer must be 0: " + Bth.tver(s, o));
        }
        return new BthRepr(Bth.opcode(s, o), Bth.solicited(s, o), Bth.migReq(s, o), Bth.padCount(s, o),
                Bth.pkey(s, o), Bth.fecn(s, o), Bth.becn(s, o), Bth.destQp(s, o), Bth.ackReq(s, o), Bth.psn(s, o));
    }

    public int length() {
        return Bth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        Bth.write(s, o, opcode, solicited, padCount, pkey, destQp, ackReq, psn);
        if (migReq) {
            Wire.put8(s, o + 1, Wire.u8(s, o + 1) | 0x40);
        }
        Wire.put8(s, o + 4, (fecn ? 0x80 : 0) | (becn ? 0x40 : 0));
    }
}
