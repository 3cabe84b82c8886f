package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;

/**
 * An AtomicETH as a value (IBA vol 1 9.3.4). The VA must be 8-byte aligned; a misaligned one is
 * legal on the wire and answered with a NAK by the responder, so only the record refuses it.
 */
public record AtomicEthRepr(long va, int rkey, long swapAdd, long compare) {

    public AtomicEthRepr {
        if ((va & 7) != 0) {
            throw new IllegalArgumentException("atomic VA must be 8-byte aligned: 0x" + Long.toHexString(va));
        }
    }

    /** Reads the header; IllegalArgumentException for a misaligned VA. */
    public static AtomicEthRepr parse(MemorySegment s, long o) {
        return new AtomicEthRepr(AtomicEth.va(s, o), AtomicEth.rkey(s, o), AtomicEth.swapAdd(s, o),
                AtomicEth.compare(s, o));
    }

    public int length() {
        return AtomicEth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        AtomicEth.write(s, o, va, rkey, swapAdd, compare);
    }
}
