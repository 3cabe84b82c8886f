package dev.nupa.ip;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReferenceArray;

import dev.nupa.ip.wire.Ipv4Address;

/**
 * A node loop's UDP ports (RFC 768): which receiver holds each, shared ones ({@link UdpPortShare}), and the
 * ephemeral range (RFC 6335 6). A port belongs to one loop of the node ({@link LoopGroup#claimUdp}). Read by the
 * loop as datagrams arrive; bound and unbound from any thread.
 */
final class UdpPorts {
    private final AtomicReferenceArray<UdpReceiver> ports = new AtomicReferenceArray<>(65536);
    private final LoopGroup group;
    private final int loop;
    /** The node's address, for the messages. */
    private final int address;
    private int nextEphemeral = Ipv4Stack.EPHEMERAL_FIRST + ThreadLocalRandom.current().nextInt(65536 - Ipv4Stack.EPHEMERAL_FIRST);

    UdpPorts(LoopGroup group, int loop, int address) {
        this.group = group;
        this.loop = loop;
        this.address = address;
    }

    /** The receiver bound to {@code port}, or null. */
    UdpReceiver get(int port) {
        return ports.get(port);
    }

    /**
     * As {@link #bind(int, UdpReceiver)}, sharing the port with other sockets that set the same option, as Linux
     * lets sockets share it with SO_REUSEADDR or SO_REUSEPORT (socket(7), see {@link UdpPortShare}); sockets on one
     * port must be on one event loop of the node.
     */
    int bind(int port, UdpReceiver receiver, boolean reuseAddress, boolean reusePort) {
        if (port == 0 || !reuseAddress && !reusePort) {
            return bind(port, receiver);
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("UDP port " + port + " is outside 0..65535");
        }
        synchronized (ports) {
            UdpReceiver held = ports.get(port);
            if (held instanceof UdpPortShare share && share.admits(reuseAddress, reusePort)) {
                share.add(receiver, reuseAddress, reusePort);
                return port;
            }
            if (held == null && group.claimUdp(port, loop)) {
                UdpPortShare share = new UdpPortShare();
                share.add(receiver, reuseAddress, reusePort);
                ports.set(port, share);
                return port;
            }
        }
        throw new IllegalStateException("UDP port " + port + " is already in use on " + Ipv4Address.toString(address)
                + " by a socket that does not share it (all must set SO_REUSEADDR, or all SO_REUSEPORT, on one event loop);"
                + " close it or choose another port");
    }

    /**
     * Binds {@code port} (0: an ephemeral one) to {@code receiver}; returns the port. Throws
     * IllegalStateException naming the port when it is taken or no ephemeral port is free.
     */
    int bind(int port, UdpReceiver receiver) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("UDP port " + port + " is outside 0..65535");
        }
        if (port != 0) {
            if (!group.claimUdp(port, loop)) {
                throw new IllegalStateException("UDP port " + port + " is already in use on " + Ipv4Address.toString(address)
                        + "; close the socket that holds it or choose another port (0 picks a free one)");
            }
            ports.set(port, receiver);
            return port;
        }
        synchronized (ports) {
            int span = 65536 - Ipv4Stack.EPHEMERAL_FIRST;
            for (int i = 0; i < span; i++) {
                int p = Ipv4Stack.EPHEMERAL_FIRST + (nextEphemeral - Ipv4Stack.EPHEMERAL_FIRST + i) % span;
                if (group.claimUdp(p, loop)) {
                    ports.set(p, receiver);
                    nextEphemeral = p + 1 > 65535 ? Ipv4Stack.EPHEMERAL_FIRST : p + 1;
                    return p;
                }
            }
        }
        throw new IllegalStateException("no ephemeral UDP port is free on " + Ipv4Address.toString(address)
                + " (all " + (65536 - Ipv4Stack.EPHEMERAL_FIRST) + " in use); close some sockets");
    }

    /** Unbinds {@code port} if {@code receiver} holds it. */
    boolean unbind(int port, UdpReceiver receiver) {
        if (port < 0 || port > 65535) {
            return false;
        }
        if (ports.get(port) instanceof UdpPortShare share) {
            synchronized (ports) {
                if (!share.remove(receiver) || share.size() > 0 || !ports.compareAndSet(port, share, null)) {
                    return share.size() > 0;
                }
            }
        } else if (!ports.compareAndSet(port, receiver, null)) {
            return false;
        }
        group.releaseUdp(port, loop);
        return true;
    }
}
