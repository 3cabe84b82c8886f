/**
 * Wire formats of IPv4, ICMP and UDP: flyweight views over a {@link java.lang.foreign.MemorySegment}
 * that check the bytes once in {@code wrap}, and value records with {@code parse} and {@code emitInto}.
 * Nothing here holds stack state or imports the stack above it.
 */
package dev.nupa.ip.wire;
