package dev.nupa.transport;

import java.nio.file.Files;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.Route;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpLayer;

/**
 * One fabric node's stack as an event loop drives it: the fabric device, the link and its
 * {@link Datapath} (driven by the loop, not by a thread of its own), the neighbor directory, IPv4 and
 * TCP. Built on the caller's thread, so that a wrong fabric or a taken address fails where the
 * caller can see it; from {@link NupaIoHandler#initialize} on, the loop's thread owns it.
 */
public final class FabricStack implements AutoCloseable {
    private final Fabric fabric;
    private final FabricDevice device;
    private final Link link;
    private final NeighborDirectory neighbors;
    private final Datapath datapath;
    private final Ipv4Stack ip;
    private final TcpLayer tcp;
    /**
     * Channels with bytes (or the peer's FIN) that arrived in this round of the loop: they read once the round's
     * frames are all in, so the segments of one batch reach the pipeline as one read, not one read each.
     */
    private final java.util.ArrayDeque<NupaSocketChannel> readsDue = new java.util.ArrayDeque<>();

    private FabricStack(Fabric fabric, FabricDevice device, Link link, NeighborDirectory neighbors, Datapath datapath,
                        Ipv4Stack ip, TcpLayer tcp) {
        this.fabric = fabric;
        this.device = device;
        this.link = link;
        this.neighbors = neighbors;
        this.datapath = datapath;
        this.ip = ip;
        this.tcp = tcp;
    }

    /** Joins (or creates) the fabric, attaches the node and builds its layers; throws with the reason. */
    public static FabricStack open(StackConfig config) {
        Fabric fabric = Files.exists(config.fabric()) ? ShmFabric.join(config.fabric())
                : ShmFabric.openOrCreate(config.fabric(), config.geometry());
        FabricDevice device = null;
        NeighborDirectory neighbors = null;
        try {
            device = config.address() < 0 ? fabric.attachAny() : fabric.attach(config.address());
            Link link = new Link(device, config.mtu());
            neighbors = new NeighborDirectory(device);
            Datapath datapath = new Datapath(link, config.idle());
            IpConfig ipc = config.ip() != null ? config.ip() : IpConfig.fabricPlan(link.address());
            Ipv4Stack ip = new Ipv4Stack(link, neighbors, ipc);
            for (Route r : config.routes()) {
                ip.addRoute(r);
            }
            datapath.addTimer(ip);
            TcpConfig tc = config.tcp() != null ? config.tcp() : TcpConfig.defaults(link.mtu());
            TcpLayer tcp = config.tcpBufferMemory() > 0 ? new TcpLayer(ip, tc, config.tcpBufferMemory()) : new TcpLayer(ip, tc);
            tcp.setTimerWakeup(datapath::timersChanged);
            datapath.addTimer(tcp);
            return new FabricStack(fabric, device, link, neighbors, datapath, ip, tcp);
        } catch (RuntimeException e) {
            if (neighbors != null) {
                neighbors.close();
            }
            if (device != null) {
                device.close();
            }
            fabric.close();
            throw e;
        }
    }

    public Link link() {
        return link;
    }

    /** {@code channel} reads at the end of this round ({@link #endRound}); on the loop. */
    void readAtRoundEnd(NupaSocketChannel channel) {
        readsDue.addLast(channel);
    }

    /** The round's frames are in: the channels that were given bytes read them. Returns how many read. */
    int endRound() {
        int n = 0;
        NupaSocketChannel ch;
        while ((ch = readsDue.pollFirst()) != null) {
            ch.roundEnd();
            n++;
        }
        return n;
    }

    public Datapath datapath() {
        return datapath;
    }

    public Ipv4Stack ip() {
        return ip;
    }

    public TcpLayer tcp() {
        return tcp;
    }

    public NeighborDirectory neighbors() {
        return neighbors;
    }

    public Fabric fabric() {
        return fabric;
    }

    /** Leaves the fabric: the datapath is closed first (by its loop, see {@link Datapath#close}). */
    @Override
    public void close() {
        try {
            datapath.close();
        } finally {
            neighbors.close();
            device.close();
            fabric.close();
        }
    }

    @Override
    public String toString() {
        return "node " + link.address() + " " + ip.config();
    }
}
