/**
 * TCP over the node's IPv4: the sans-IO connection core ({@link dev.nupa.tcp.TcpConnection}: RFC 9293
 * with window scaling, timestamps, SACK, NewReno and CUBIC), the layer that demultiplexes segments to
 * connections and answers for listeners ({@link dev.nupa.tcp.TcpLayer}, SYN cookies, buffer memory
 * bound, timers). The bytes on the wire are read and written through {@link dev.nupa.tcp.wire}.
 * Applications reach it through the Vert.x transport's sockets (module transport).
 */
package dev.nupa.tcp;
