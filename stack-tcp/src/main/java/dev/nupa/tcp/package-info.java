/**
 * TCP over the node's IPv4: the wire format ({@link dev.nupa.tcp.wire.TcpHeader}, a flyweight that
 * validates a segment once and checks or fills its checksum; {@link dev.nupa.tcp.wire.TcpOptions};
 * {@link dev.nupa.tcp.wire.TcpRepr}; {@link dev.nupa.tcp.wire.Seq}, sequence numbers modulo 2^32), the sans-IO
 * connection core ({@link dev.nupa.tcp.TcpConnection}: RFC 9293 with window scaling, timestamps,
 * SACK, NewReno and CUBIC), the layer that demultiplexes segments to connections and answers for
 * listeners ({@link dev.nupa.tcp.TcpLayer}, SYN cookies, buffer memory bound, timers). Applications
 * reach it through the Vert.x transport's sockets (module transport).
 */
package dev.nupa.tcp;
