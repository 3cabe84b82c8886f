/**
 * The TCP wire format: {@link dev.nupa.tcp.wire.TcpHeader}, a flyweight that validates a segment once
 * and checks or fills its checksum; {@link dev.nupa.tcp.wire.TcpOptions}, parsed and emitted in place;
 * {@link dev.nupa.tcp.wire.TcpRepr}, a header as a value; {@link dev.nupa.tcp.wire.Seq}, sequence
 * numbers modulo 2^32. Nothing here holds connection state or imports the stack.
 */
package dev.nupa.tcp.wire;
