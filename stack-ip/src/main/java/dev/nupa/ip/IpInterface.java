package dev.nupa.ip;

import java.lang.foreign.MemorySegment;

/**
 * An IPv4 interface of a node beside its fabric link: the gateway's Ethernet side. It has an address
 * and subnet of its own; the stack sends through it every datagram whose next hop lies in that subnet,
 * and hands it what arrives there ({@link Ipv4Stack#receiveExternal}). Called on the node's loop only.
 */
public interface IpInterface {
    /** A short name for counters and errors ("tap0"). */
    String name();

    /** The node's IPv4 address on this interface. */
    int address();

    int prefixLength();

    /** The largest datagram the interface carries (the stack fragments to it, or answers fragmentation needed). */
    int mtu();

    /**
     * Sends one datagram of at most {@link #mtu()} bytes to {@code nextHop}, an address in the interface's
     * subnet: {@link SendStatus#OK} once it is sent or waits for the next hop's link address, else a negative
     * {@link SendStatus} (counted by the interface).
     */
    int transmit(int nextHop, MemorySegment datagram, long offset, int length, long now);

    /** Whether {@code address} lies in this interface's subnet. */
    default boolean onLink(int address) {
        int mask = Route.mask(prefixLength());
        return (address & mask) == (address() & mask);
    }
}
