package dev.nupa.node.options;

import dev.nupa.node.NodeConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import dev.nupa.device.FabricGeometry;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkFaults;
import dev.nupa.tcp.TcpConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The options that say how a node joins the fabric: shared by `nupa node`, `ping`, and the demo's nodes. */
public final class NodeOptions {
    @Mixin
    FabricOptions where;

    @Option(names = "--address", paramLabel = "N", defaultValue = "-1",
            description = "Fabric address of this node (default: the first free one).")
    int address;

    @Option(names = "--ip", paramLabel = "A.B.C.D/LEN",
            description = "IPv4 address and prefix (default: 10.0.0.(address+1)/24).")
    String ip;

    @Option(names = "--route", paramLabel = "ROUTE",
            description = "A route, e.g. \"10.9.0.0/16 via 10.0.0.254\" or \"default via 10.0.0.254\"; repeatable.")
    List<String> routes = new ArrayList<>();

    @Option(names = "--mtu", paramLabel = "BYTES", defaultValue = "9000",
            description = "Link MTU, " + Link.MIN_MTU + " up to the fabric's max frame - 8 (default: ${DEFAULT-VALUE}).")
    int mtu;

    @Option(names = "--no-checksums", description = "Neither verify nor compute UDP and TCP checksums between nodes of the fabric's subnet (it is lossless; every node of the fabric must agree); IP header checksums stay, and datagrams to or from beyond the subnet keep theirs.")
    boolean noChecksums;

    @Option(names = "--forwarding", description = "Forward datagrams not addressed to this node (act as a router).")
    public boolean forwarding;

    @Option(names = "--spin", description = "Busy-poll the datapath without ever sleeping (lowest latency, one core).")
    boolean spin;

    @Option(names = "--tcp-buffer", paramLabel = "BYTES", description = "TCP send and receive buffer per connection (default: 262144).")
    Integer tcpBuffer;

    @Option(names = "--tcp-buffer-memory", paramLabel = "BYTES", description = "TCP buffer memory of all connections together;"
            + " past 2/3 of it, emptied buffers give their memory back and send buffers get none (writes wait), past it"
            + " arriving data is dropped (the peer resends it) (default: 256 MiB, or 3/4 of the JVM's -XX:MaxDirectMemorySize if less).")
    Long tcpBufferMemory;

    @Option(names = "--tcp-time-wait", paramLabel = "SECONDS", description = "TCP TIME-WAIT, 2*MSL (default: 60).")
    Double tcpTimeWait;

    @Option(names = "--link-faults", paramLabel = "SPEC",
            description = "Inject faults into the frames this node receives, as netem would on an interface: drop=P,duplicate=P,"
                    + "reorder=P,corrupt=P,seed=N (rates 0..1 per frame; e.g. drop=0.02,reorder=0.05). For tests; give them to"
                    + " both ends to impair both directions.")
    String linkFaults;

    @Option(names = "--nodes", paramLabel = "N", description = "Nodes of a fabric created here (default: 64); refused for a fabric that exists.")
    Integer nodes;

    /** The fabric's path: --fabric, or what --device names. */
    Path fabricPath() {
        return where.path();
    }

    /**
     * For the commands that reach other nodes (ping, udp-check, tcp-check): a fabric file that does not exist has no
     * node to reach, so it is refused with the reason rather than created (a node would then answer only itself).
     */
    public void requireExistingFabric(String command) {
        if ((where.device == null || where.device.startsWith("shm:")) && !Files.exists(fabricPath())) {
            throw new IllegalArgumentException("no fabric at " + fabricPath() + ": " + command + " reaches nodes that run on"
                    + " one; start a node there first (nupa node --fabric " + fabricPath() + ") or name the fabric with --fabric");
        }
    }

    public NodeConfig config() {
        if (nodes != null && Files.exists(fabricPath())) {
            throw new IllegalArgumentException("--nodes " + nodes + " sizes a new fabric, but " + fabricPath()
                    + " exists with its size fixed; leave --nodes out or name a new fabric");
        }
        List<Route> rs = new ArrayList<>();
        for (String r : routes) {
            rs.add(Route.parse(r));
        }
        NodeConfig c = NodeConfig.defaults(fabricPath(), address).withMtu(mtu).withRoutes(rs)
                .withIdle(spin ? Datapath.Idle.busySpin() : Datapath.Idle.adaptive()); // the datapath is the node's event loop
        c = new NodeConfig(c.fabric(), c.address(), c.ip(), c.mtu(), c.routes(),
                nodes != null ? FabricGeometry.defaults().withMaxNodes(nodes) : FabricGeometry.defaults(), c.idle(), c.capture(), null, 0, null,
                linkFaults != null ? LinkFaults.parse(linkFaults) : null, null, where.access());
        if (tcpBufferMemory != null) {
            if (tcpBufferMemory < 1) {
                throw new IllegalArgumentException("--tcp-buffer-memory must be a positive number of bytes, not " + tcpBufferMemory);
            }
            c = c.withTcpBufferMemory(tcpBufferMemory);
        }
        if (tcpBuffer != null || tcpTimeWait != null) {
            TcpConfig t = TcpConfig.defaults(mtu);
            if (tcpBuffer != null) {
                t = t.withBuffers(tcpBuffer, tcpBuffer);
            }
            if (tcpTimeWait != null) {
                t = t.withTimeWait((long) (tcpTimeWait * 1e9));
            }
            c = c.withTcp(t);
        }
        if (ip != null || noChecksums || forwarding) {
            IpConfig base = ip != null ? IpConfig.parse(ip) : null;
            if (base == null) {
                if (address < 0) {
                    throw new IllegalArgumentException("--no-checksums, --forwarding and --tap need --ip or --address (for the default 10.0.0.(N+1)/24)");
                }
                base = NodeConfig.defaultIp(address);
            }
            c = c.withIp(base.withChecksums(!noChecksums, !noChecksums).withForwarding(forwarding));
        }
        return c;
    }
}
