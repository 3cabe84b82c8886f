package dev.nupa.transport;

import java.nio.file.Path;
import java.util.List;

import dev.nupa.device.FabricAccess;
import dev.nupa.device.FabricGeometry;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkFaults;
import dev.nupa.tcp.TcpConfig;

/**
 * What a fabric node under an event loop is made of.
 *
 * @param fabric          the fabric file (created with {@code geometry} if missing)
 * @param address         the fabric address to take, or -1 for the first free one
 * @param ip              the IPv4 address and prefix, or null for the fabric's plan (10.0.0.(N+1)/24)
 * @param tcp             TCP defaults, or null for {@link TcpConfig#defaults(int)} of the MTU
 * @param tcpBufferMemory the bound on all connections' buffers together, or 0 for the JVM default
 * @param loops           event loops (1..64); loop 0 takes {@code address}, the others the first free
 *                        addresses, all with the one IPv4 address (see {@link dev.nupa.ip.LoopGroup})
 * @param linkFaults      faults injected into the frames the node receives (for tests), or null for none
 * @param access          who may touch the fabric file (created 0600, joined if this user's: {@link FabricAccess#PRIVATE})
 */
public record StackConfig(Path fabric, int address, FabricGeometry geometry, int mtu, Datapath.Idle idle, IpConfig ip,
                          List<Route> routes, TcpConfig tcp, long tcpBufferMemory, int loops, LinkFaults linkFaults,
                          FabricAccess access) {
    /** The maximum of {@link #loops}. */
    public static final int MAX_LOOPS = 64;

    public StackConfig {
        routes = List.copyOf(routes);
        access = access != null ? access : FabricAccess.PRIVATE;
        if (loops < 1 || loops > MAX_LOOPS) {
            throw new IllegalArgumentException("event loops " + loops + " is outside 1.." + MAX_LOOPS
                    + "; give one per core the node may use");
        }
        if (tcpBufferMemory < 0) {
            throw new IllegalArgumentException("TCP buffer memory " + tcpBufferMemory
                    + " is negative; give a number of bytes, or 0 for the default");
        }
    }

    /** With the fabric file {@link FabricAccess#PRIVATE}. */
    public StackConfig(Path fabric, int address, FabricGeometry geometry, int mtu, Datapath.Idle idle, IpConfig ip,
                       List<Route> routes, TcpConfig tcp, long tcpBufferMemory, int loops, LinkFaults linkFaults) {
        this(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, FabricAccess.PRIVATE);
    }

    /** Node {@code address} of {@code fabric} with every other setting at its default (the loop idles as {@link Datapath.Idle#adaptive()}). */
    public static StackConfig defaults(Path fabric, int address) {
        return new StackConfig(fabric, address, FabricGeometry.defaults(), Link.DEFAULT_MTU, Datapath.Idle.adaptive(), null,
                List.of(), null, 0, 1, null);
    }

    public StackConfig withIp(IpConfig ip) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, access);
    }

    public StackConfig withIdle(Datapath.Idle idle) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, access);
    }

    /** With {@code routes} beyond the on-link subnet (e.g. to a gateway's other side). */
    public StackConfig withRoutes(List<Route> routes) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, access);
    }

    /** With {@code loops} event loops sharing the node's IPv4 address. */
    public StackConfig withLoops(int loops) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, access);
    }

    public StackConfig withTcp(TcpConfig tcp) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, access);
    }

    /** With {@code faults} injected into the frames the node receives, as netem would on an interface (null: none). */
    public StackConfig withLinkFaults(LinkFaults faults) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, faults, access);
    }

    /** With the node's TCP buffers bounded to {@code bytes} together (0: three quarters of the JVM's direct memory). */
    public StackConfig withTcpBufferMemory(long bytes) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, bytes, loops, linkFaults, access);
    }

    /** With the fabric file created and joined as {@code access} says. */
    public StackConfig withAccess(FabricAccess access) {
        return new StackConfig(fabric, address, geometry, mtu, idle, ip, routes, tcp, tcpBufferMemory, loops, linkFaults, access);
    }
}
