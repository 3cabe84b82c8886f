package dev.nupa.transport;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;

import dev.nupa.ip.Ipv4Stack;

/** Between the JDK's socket addresses and the stack's IPv4 addresses (ints, big-endian order of the octets). */
final class Addresses {
    private Addresses() {
    }

    static InetSocketAddress inet(int ip, int port) {
        byte[] b = {(byte) (ip >>> 24), (byte) (ip >>> 16), (byte) (ip >>> 8), (byte) ip};
        try {
            return new InetSocketAddress(InetAddress.getByAddress(b), port);
        } catch (UnknownHostException e) {
            throw new AssertionError("four bytes are always an IPv4 address", e);
        }
    }

    /**
     * The remote address of a connection to {@code ip}:{@code port}: {@code requested}, the address the connect was
     * given, when it names them, so its host name stays (Vert.x reports it as {@code SocketAddress.hostName()}); as
     * Netty's epoll transport keeps the requested host string (UnixChannelUtil.computeRemoteAddr). Otherwise (an
     * accepted connection: nothing requested) the bare IP address.
     */
    static InetSocketAddress remote(InetSocketAddress requested, int ip, int port) {
        if (requested != null && !requested.isUnresolved() && requested.getPort() == port && ipv4(requested) == ip) {
            return requested;
        }
        return inet(ip, port);
    }

    /** The address as the stack's int; 0 for the wildcard. */
    static int ipv4(InetSocketAddress a) {
        InetAddress ia = a.getAddress();
        if (ia.isAnyLocalAddress()) {
            return 0;
        }
        byte[] b = ia.getAddress();
        return (b[0] & 0xFF) << 24 | (b[1] & 0xFF) << 16 | (b[2] & 0xFF) << 8 | (b[3] & 0xFF);
    }

    /**
     * The IPv4 address of {@code a}, a local address to {@code verb} (bind, listen) on: one of the node's, a loopback
     * one, or 0 for the wildcard. Refused as Linux's inet_bind refuses it (EADDRNOTAVAIL), with a {@link BindException}.
     */
    static int local(Ipv4Stack ip, InetSocketAddress a, String verb) throws BindException {
        int addr = ipv4(a);
        if (addr != 0 && !ip.isLocal(addr)) {
            throw new BindException("Cannot assign requested address: " + a.getAddress().getHostAddress() + " is not an"
                    + " address of this node (" + inet(ip.address(), 0).getAddress().getHostAddress()
                    + ", 127.0.0.0/8); " + verb + " one of them or 0.0.0.0");
        }
        return addr;
    }

    /** {@code a} as a resolved IPv4 socket address; throws naming what is wrong otherwise. */
    static InetSocketAddress check(SocketAddress a) {
        if (!(a instanceof InetSocketAddress i)) {
            throw new IllegalArgumentException("the fabric speaks IPv4: " + a + " is not an IP socket address");
        }
        if (i.isUnresolved()) {
            throw new UnresolvedAddressException();
        }
        InetAddress ia = i.getAddress();
        if (!(ia instanceof Inet4Address) && !ia.isAnyLocalAddress()) {
            throw new IllegalArgumentException("the fabric speaks IPv4 only; " + ia.getHostAddress()
                    + " is an IPv6 address (use the node's 10.x.y.z address)");
        }
        return i;
    }
}
