/**
 * Wire formats of TCP segments and options, and sequence number arithmetic: flyweight views over a {@link java.lang.foreign.MemorySegment}
 * that check the bytes once in {@code wrap}, and value records with {@code parse} and {@code emitInto}.
 * Nothing here holds stack state or imports the stack above it.
 */
package dev.nupa.tcp.wire;
