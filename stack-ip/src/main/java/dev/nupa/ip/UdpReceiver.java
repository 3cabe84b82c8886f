package dev.nupa.ip;

import java.lang.foreign.MemorySegment;

/**
 * Receives the datagrams of a bound UDP port, on the datapath thread, in place: {@code [offset,
 * offset + length)} of {@code data} is valid only during the call. The zero-copy interface; the
 * Vert.x transport's datagram channel is built on it.
 */
public interface UdpReceiver {
    void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset, int length);

    /** An ICMP error (e.g. port unreachable) about a datagram this port sent to {@code destination}:{@code port}. */
    default void onIcmpError(int type, int code, int destination, int port) {
    }
}
