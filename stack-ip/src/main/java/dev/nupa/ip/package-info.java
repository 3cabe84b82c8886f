/**
 * IPv4, ICMP and UDP (issue 3). So far the wire formats: flyweight views over a
 * {@link java.lang.foreign.MemorySegment} ({@link dev.nupa.ip.Ipv4Header}, {@link dev.nupa.ip.IcmpHeader},
 * {@link dev.nupa.ip.UdpHeader}) that validate once in {@code wrap} and return a
 * {@link dev.nupa.ip.WireStatus} code, value records for tests and the control plane
 * ({@link dev.nupa.ip.Ipv4Repr}, {@link dev.nupa.ip.IcmpRepr}, {@link dev.nupa.ip.UdpRepr}), and the
 * RFC 1071 {@link dev.nupa.ip.Checksum}. Routes, fragmentation, sockets and verticles come next.
 */
package dev.nupa.ip;
