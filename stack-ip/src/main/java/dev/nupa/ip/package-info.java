/**
 * IPv4 (RFC 791, 1122), ICMP (RFC 792) and UDP (RFC 768) over the link: the wire formats (flyweight
 * views {@link dev.nupa.ip.wire.Ipv4Header}, {@link dev.nupa.ip.wire.IcmpHeader}, {@link dev.nupa.ip.wire.UdpHeader}
 * that validate once in {@code wrap}, value records for tests and the control plane, the RFC 1071
 * {@link dev.nupa.ip.wire.Checksum}), the node's stack ({@link dev.nupa.ip.Ipv4Stack}: routes,
 * forwarding, fragmentation and bounded reassembly, ICMP errors, UDP ports). Applications reach UDP
 * through the Vert.x transport's datagram channel (module transport).
 */
package dev.nupa.ip;
