/**
 * IPv4 (RFC 791, 1122), ICMP (RFC 792) and UDP (RFC 768) over the link: the node's stack
 * ({@link dev.nupa.ip.Ipv4Stack}: interfaces, routes, forwarding, fragmentation and bounded
 * reassembly, ICMP errors, UDP ports). The bytes on the wire are read and written through
 * {@link dev.nupa.ip.wire}. Applications reach UDP through the Vert.x transport's datagram channel
 * (module transport).
 */
package dev.nupa.ip;
