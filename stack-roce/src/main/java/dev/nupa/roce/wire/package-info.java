/**
 * InfiniBand's wire formats as flyweight views over a {@code MemorySegment} with value records beside them (IBA 9:
 * BTH, RETH, AETH, DETH, AtomicETH, AtomicAckETH, ImmDt; the packet as a whole, {@link dev.nupa.roce.wire.RocePacket}),
 * the ICRC of RoCEv2 (IBA annex A17), 24-bit PSN arithmetic, and the CM's MADs (IBA 12.6). Sans-IO: nothing here
 * sends or keeps state.
 */
package dev.nupa.roce.wire;
