package dev.nupa.ip;

import java.lang.foreign.MemorySegment;

import dev.nupa.ip.wire.Ipv4Header;

/**
 * Receives the datagrams of a bound UDP port, on the datapath thread, in place: {@code [offset,
 * offset + length)} of {@code data} is valid only during the call. The zero-copy interface; the
 * Vert.x transport's datagram channel is built on it.
 */
public interface UdpReceiver {
    void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset, int length);

    /**
     * The same datagram with its IPv4 header, for a receiver whose payload covers the header (RoCEv2's ICRC);
     * valid only during the call. What the IP layer calls; by default it calls the method above.
     */
    default void onDatagram(Ipv4Header ip, int sourcePort, MemorySegment data, long offset, int length) {
        onDatagram(ip.sourceAddress(), sourcePort, ip.destinationAddress(), data, offset, length);
    }

    /** An ICMP error (e.g. port unreachable) about a datagram this port sent to {@code destination}:{@code port}. */
    default void onIcmpError(int type, int code, int destination, int port) {
    }
}
