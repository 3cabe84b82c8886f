package dev.nupa.ip;

import dev.nupa.ip.wire.Ipv4Header;

/**
 * An upper protocol (TCP) registered with {@link Ipv4Stack#register}. Called on the datapath
 * thread, in place: the datagram's bytes are valid only during the call.
 */
public interface IpProtocolHandler {
    /** A datagram for this protocol: {@code ip} is wrapped and valid; the payload is at {@code ip.payloadOffset()}. */
    void onDatagram(Ipv4Header ip, long now);

    /** An ICMP error about a datagram of this protocol that this node sent; {@code quoted} is its header and 8 payload bytes. */
    default void onIcmpError(int type, int code, int info, Ipv4Header quoted, long now) {
    }
}
