package dev.nupa.transport;

import java.net.InetSocketAddress;

/**
 * The socket addresses of a datagram socket's recent senders, so that a datagram from a peer heard from before is handed
 * up with the address object already made (an address is an InetAddress, its holder, a byte array and an
 * InetSocketAddress, and its holder: 15% of what a Vert.x UDP echo allocated per datagram on this transport). The JDK's socket
 * addresses are immutable, so sharing one among packets is safe. Direct-mapped, {@link #SLOTS} entries; a miss makes
 * the address and keeps it in its slot. Used on the socket's loop only.
 */
final class SenderAddresses {
    static final int SLOTS = 16;

    private final int[] ips = new int[SLOTS];
    private final int[] ports = new int[SLOTS];
    private final InetSocketAddress[] addresses = new InetSocketAddress[SLOTS];

    InetSocketAddress of(int ip, int port) {
        int slot = (ip * 31 + port) * 0x9E3779B9 >>> 28; // the top 4 bits of a Fibonacci hash: SLOTS = 16
        InetSocketAddress a = addresses[slot];
        if (a == null || ips[slot] != ip || ports[slot] != port) {
            a = Addresses.inet(ip, port);
            addresses[slot] = a;
            ips[slot] = ip;
            ports[slot] = port;
        }
        return a;
    }
}
