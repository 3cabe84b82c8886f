/**
 * The wire formats of IPv4, ICMP and UDP: flyweight views ({@link dev.nupa.ip.wire.Ipv4Header},
 * {@link dev.nupa.ip.wire.IcmpHeader}, {@link dev.nupa.ip.wire.UdpHeader}) that check the bytes once
 * in {@code wrap}, after which no accessor can fail; value records for tests and the control plane
 * ({@link dev.nupa.ip.wire.Ipv4Repr}, {@link dev.nupa.ip.wire.IcmpRepr}, {@link dev.nupa.ip.wire.UdpRepr});
 * the RFC 1071 {@link dev.nupa.ip.wire.Checksum}; addresses as {@code int}
 * ({@link dev.nupa.ip.wire.Ipv4Address}). Nothing here holds stack state or imports the stack.
 */
package dev.nupa.ip.wire;
