/**
 * TCP (issue 4). So far the wire format: {@link dev.nupa.tcp.TcpHeader}, a flyweight view over a
 * {@link java.lang.foreign.MemorySegment} that validates a segment once in {@code wrap} (returning a
 * {@link dev.nupa.ip.WireStatus} code) and verifies or fills the checksum over the IPv4 pseudo
 * header; {@link dev.nupa.tcp.TcpOptions}, a reusable holder that parses and emits MSS, window
 * scale, SACK-permitted, SACK and timestamps without allocating, reporting a malformed option with
 * an {@link dev.nupa.tcp.OptionStatus} code; {@link dev.nupa.tcp.TcpRepr}, the header as a value
 * for tests and the control plane; and {@link dev.nupa.tcp.Seq}, sequence number comparison
 * modulo 2^32. Connections and stream sockets come next.
 */
package dev.nupa.tcp;
