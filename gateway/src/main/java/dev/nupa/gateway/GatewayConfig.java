package dev.nupa.gateway;

import java.util.List;

import dev.nupa.ip.Route;
import dev.nupa.ip.wire.Ipv4Address;

/**
 * A gateway's Ethernet side.
 *
 * @param tap          the TAP device's name (created if there is none)
 * @param address      the gateway's IPv4 address on that side
 * @param prefixLength the prefix of that side's subnet (which must not overlap the fabric's)
 * @param mtu          the TAP device's MTU (Linux's default for Ethernet: 1500)
 * @param routes       routes through that side (e.g. "default via 192.168.77.1"), added once it is up
 * @param offloads     whether the TAP carries virtio-net headers: checksum offload and TCP segmentation offload both
 *                     ways (super-frames from Linux are cut in software, and segments to Linux joined into them)
 * @param queues       the TAP's queues (IFF_MULTI_QUEUE when more than one), one per event loop of the node
 * @param ecnThreshold the backlog, in frames of a round, past which ECN-capable datagrams are marked CE both ways
 *                     ({@link EcnMarker}; {@link Integer#MAX_VALUE}: no marking)
 */
public record GatewayConfig(String tap, int address, int prefixLength, int mtu, List<Route> routes, boolean offloads, int queues,
                            int ecnThreshold) {
    public static final int DEFAULT_MTU = 1500;
    public static final int DEFAULT_ECN_THRESHOLD = EcnMarker.DEFAULT_THRESHOLD;

    public GatewayConfig {
        routes = List.copyOf(routes);
        if (queues < 1 || queues > Tap.MAX_QUEUES) {
            throw new IllegalArgumentException("--tap-queues " + queues + " is outside 1.." + Tap.MAX_QUEUES);
        }
        if (ecnThreshold < 1) {
            throw new IllegalArgumentException("--tap-ecn-threshold " + ecnThreshold + " frames: must be at least 1 (or off)");
        }
        if (prefixLength < 1 || prefixLength > 30) {
            throw new IllegalArgumentException("--tap-addr prefix /" + prefixLength + " must be 1..30 (room for the gateway"
                    + " and a Linux peer)");
        }
    }

    /**
     * {@code "A.B.C.D/LEN"} as the gateway's address on TAP device {@code tap}, MTU {@link #DEFAULT_MTU}, no routes.
     *
     * @throws IllegalArgumentException naming the text and the form wanted
     */
    public static GatewayConfig parse(String tap, String addressSlashPrefix) {
        int slash = addressSlashPrefix.indexOf('/');
        if (slash < 0) {
            throw new IllegalArgumentException("--tap-addr " + addressSlashPrefix + " needs a prefix length, e.g. 192.168.77.2/24");
        }
        int prefix;
        try {
            prefix = Integer.parseInt(addressSlashPrefix.substring(slash + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--tap-addr " + addressSlashPrefix + ": bad prefix length, e.g. 192.168.77.2/24");
        }
        return new GatewayConfig(tap, Ipv4Address.parse(addressSlashPrefix.substring(0, slash)), prefix, DEFAULT_MTU, List.of(), false, 1,
                DEFAULT_ECN_THRESHOLD);
    }

    public GatewayConfig withMtu(int mtu) {
        return new GatewayConfig(tap, address, prefixLength, mtu, routes, offloads, queues, ecnThreshold);
    }

    public GatewayConfig withRoutes(List<Route> routes) {
        return new GatewayConfig(tap, address, prefixLength, mtu, routes, offloads, queues, ecnThreshold);
    }

    public GatewayConfig withOffloads(boolean offloads) {
        return new GatewayConfig(tap, address, prefixLength, mtu, routes, offloads, queues, ecnThreshold);
    }

    public GatewayConfig withQueues(int queues) {
        return new GatewayConfig(tap, address, prefixLength, mtu, routes, offloads, queues, ecnThreshold);
    }

    public GatewayConfig withEcnThreshold(int frames) {
        return new GatewayConfig(tap, address, prefixLength, mtu, routes, offloads, queues, frames);
    }

    @Override
    public String toString() {
        return tap + " " + Ipv4Address.toString(address) + "/" + prefixLength + " mtu " + mtu + (offloads ? " offloads" : "") + (queues > 1 ? " queues " + queues : "")
                + (ecnThreshold != DEFAULT_ECN_THRESHOLD ? " ecn " + (ecnThreshold == Integer.MAX_VALUE ? "off" : ecnThreshold) : "");
    }
}
