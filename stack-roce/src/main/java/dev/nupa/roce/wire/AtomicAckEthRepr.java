package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;

/** An AtomicAckETH as a value (IBA vol 1 9.3.6): any 64-bit original value is legal. */
public record AtomicAckEthRepr(long originalData) {

    public static AtomicAckEthRepr parse(MemorySegment s, long o) {
        return new AtomicAckEthRepr(AtomicAckEth.originalData(s, o));
    }

    public int length() {
        return AtomicAckEth.LENGTH;
    }

    public void emitInto(MemorySegment s, long o) {
        AtomicAckEth.write(s, o, originalData);
    }
}
