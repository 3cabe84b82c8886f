package dev.nupa.node;

import java.nio.file.Path;
import java.util.List;

import dev.nupa.device.FabricAccess;
import dev.nupa.device.FabricGeometry;
import dev.nupa.gateway.GatewayConfig;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkFaults;
import dev.nupa.tcp.TcpConfig;
import io.opentelemetry.api.OpenTelemetry;

/**
 * How a {@link NupaNode} is assembled.
 *
 * @param fabric   the fabric file (created with {@code geometry} if missing)
 * @param address  the fabric address, or -1 for the first free one
 * @param ip       the IPv4 configuration, or null for the default plan: 10.0.0.(address + 1)/24
 * @param mtu      link MTU (default {@link Link#DEFAULT_MTU})
 * @param routes   routes beyond the on-link subnet
 * @param idle     how the datapath loop waits
 * @param capture  a pcap file for this node's own frames, or null
 * @param tcp      the TCP settings of its connections, or null for {@link TcpConfig#defaults} of the MTU
 * @param tcpBufferMemory the bytes all TCP connection buffers may hold together (see
 *                 {@link dev.nupa.tcp.TcpLayer#TcpLayer(dev.nupa.ip.Ipv4Stack, TcpConfig, long)}), or 0 for the
 *                 default: 3/4 of the JVM's native memory bound
 * @param gateway  an Ethernet side through a TAP device (the node then is a gateway; it needs forwarding on), or null
 * @param linkFaults faults injected into the frames the node receives, as netem on an interface (for tests), or null
 * @param openTelemetry where the node's spans go (HTTP and gRPC calls, verbs work requests), or null: not traced
 * @param access   who may touch the fabric file (created 0600, joined if this user's: {@link FabricAccess#PRIVATE})
 */
public record NodeConfig(Path fabric, int address, IpConfig ip, int mtu, List<Route> routes, FabricGeometry geometry,
                         Datapath.Idle idle, Path capture, TcpConfig tcp, long tcpBufferMemory, GatewayConfig gateway,
                         LinkFaults linkFaults, OpenTelemetry openTelemetry, FabricAccess access) {
    public NodeConfig {
        routes = List.copyOf(routes);
        access = access != null ? access : FabricAccess.PRIVATE;
        if (tcpBufferMemory < 0) {
            throw new IllegalArgumentException("TCP buffer memory " + tcpBufferMemory
                    + " is negative; give a number of bytes, or 0 for the default (3/4 of the JVM's native memory bound)");
        }
    }

    /** With the fabric file {@link FabricAccess#PRIVATE}. */
    public NodeConfig(Path fabric, int address, IpConfig ip, int mtu, List<Route> routes, FabricGeometry geometry,
                      Datapath.Idle idle, Path capture, TcpConfig tcp, long tcpBufferMemory, GatewayConfig gateway,
                      LinkFaults linkFaults, OpenTelemetry openTelemetry) {
        this(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry,
                FabricAccess.PRIVATE);
    }

    public static NodeConfig defaults(Path fabric, int address) {
        return new NodeConfig(fabric, address, null, Link.DEFAULT_MTU, List.of(), FabricGeometry.defaults(),
                Datapath.Idle.adaptive(), null, null, 0, null, null, null);
    }

    public NodeConfig withIp(IpConfig ip) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    public NodeConfig withMtu(int mtu) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    public NodeConfig withRoutes(List<Route> routes) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    public NodeConfig withIdle(Datapath.Idle idle) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    public NodeConfig withCapture(Path capture) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    public NodeConfig withTcp(TcpConfig tcp) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    public NodeConfig withTcpBufferMemory(long bytes) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, bytes, gateway, linkFaults, openTelemetry, access);
    }

    /** With an Ethernet side: the node becomes a gateway between the fabric and a TAP device (docs/gateway.md). */
    public NodeConfig withGateway(GatewayConfig gateway) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults, openTelemetry, access);
    }

    /** With {@code faults} injected into the frames the node receives (null: none). */
    /**
     * Traces the node's Vert.x HTTP and gRPC calls (through vertx-opentelemetry, W3C trace context carried in their
     * headers) and its gRPC endpoint's verbs work requests with {@code openTelemetry}; null: not traced (docs/tracing.md).
     */
    public NodeConfig withOpenTelemetry(OpenTelemetry openTelemetry) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults,
                openTelemetry, access);
    }

    public NodeConfig withLinkFaults(LinkFaults faults) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, faults, openTelemetry, access);
    }

    /** With the fabric file created and joined as {@code access} says (--fabric-group, --trust-fabric). */
    public NodeConfig withAccess(FabricAccess access) {
        return new NodeConfig(fabric, address, ip, mtu, routes, geometry, idle, capture, tcp, tcpBufferMemory, gateway, linkFaults,
                openTelemetry, access);
    }

    /** The TCP settings: as given, or the defaults for the MTU. */
    public TcpConfig tcpOrDefault() {
        return tcp != null ? tcp : TcpConfig.defaults(mtu);
    }

    /** The default address plan: fabric node N is 10.0.0.(N + 1)/24 (nodes 0..253). */
    public static IpConfig defaultIp(int fabricAddress) {
        return IpConfig.fabricPlan(fabricAddress);
    }
}
