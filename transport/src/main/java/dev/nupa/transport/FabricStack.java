package dev.nupa.transport;

import java.nio.file.Files;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.LoopGroup;
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
    /**
     * Listeners with connections to hand out: they do at the end of the round, ahead of the reads, where no
     * connection is in the middle of a segment (a connection may move to another loop as it is handed out).
     */
    private final java.util.ArrayDeque<NupaServerSocketChannel> acceptsDue = new java.util.ArrayDeque<>();
    /**
     * Channels that queued bytes in this turn of the loop: their connections send once the turn's writes are all
     * in, so the messages a turn writes to one connection leave as full segments, not one segment each (as Netty's
     * io_uring transport submits a turn's writes together, and Linux's autocorking holds small writes back).
     */
    private final java.util.ArrayDeque<NupaSocketChannel> sendsDue = new java.util.ArrayDeque<>();
    private long turn; // written by the loop only

    /** File regions (Vert.x's sendFile) this loop's channels sent whole; written by the loop only. */
    private volatile long regionsSent;
    private RegionSink.FileBuffer fileBuffer;

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

    /**
     * Joins (or creates) the fabric and builds a node of one loop with no layers above TCP, for code that drives the
     * stack itself; throws with the reason. A node of more loops, or with layers, is built by {@link NupaStack}.
     */
    public static FabricStack open(StackConfig config) {
        if (config.loops() != 1) {
            throw new IllegalArgumentException("a node of " + config.loops() + " event loops has a stack per loop: build it with NupaStack.builder");
        }
        return NupaStack.builder(config).open().primary();
    }

    /** Loop {@code loop}'s stack of a node ({@link NupaStack.Builder#open}); {@code primary} is loop 0's, or null for it. */
    static FabricStack open(StackConfig config, LoopGroup group, int loop, FabricStack primary) {
        Fabric fabric = Files.exists(config.fabric()) ? ShmFabric.join(config.fabric(), config.access())
                : ShmFabric.openOrCreate(config.fabric(), config.geometry(), config.access());
        FabricDevice device = null;
        NeighborDirectory neighbors = null;
        try {
            // The extra loops take the highest free addresses: the low ones are the plan's, for nodes given one.
            device = loop > 0 ? fabric.attachAny(true) : config.address() < 0 ? fabric.attachAny() : fabric.attach(config.address());
            if (config.linkFaults() != null) {
                device = config.linkFaults().wrap(device, loop);
            }
            Link link = new Link(device, config.mtu());
            neighbors = new NeighborDirectory(device);
            Datapath datapath = new Datapath(link, config.idle());
            IpConfig ipc = primary != null ? primary.ip.config()
                    : config.ip() != null ? config.ip() : IpConfig.fabricPlan(link.address());
            Ipv4Stack ip = new Ipv4Stack(link, neighbors, ipc, group, loop);
            for (Route r : config.routes()) {
                ip.addRoute(r);
            }
            datapath.addTimer(ip);
            TcpConfig tc = config.tcp() != null ? config.tcp() : TcpConfig.defaults(link.mtu());
            TcpLayer tcp = primary != null ? new TcpLayer(ip, primary.tcp)
                    : config.tcpBufferMemory() > 0 ? new TcpLayer(ip, tc, config.tcpBufferMemory()) : new TcpLayer(ip, tc);
            tcp.setTimerWakeup(datapath::timersChanged);
            tcp.setPoolReleaseHandler(HeapReturn::released);
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

    /** Which of its node's event loops this stack is (0: the primary, which peers send to). */
    public int loop() {
        return ip.loop();
    }

    /** Whether {@code other} is a stack of another event loop of this node. */
    boolean sameNode(FabricStack other) {
        return other.ip.loopGroup() == ip.loopGroup();
    }

    /** {@code channel} reads at the end of this round ({@link #endRound}); on the loop. */
    void readAtRoundEnd(NupaSocketChannel channel) {
        readsDue.addLast(channel);
    }

    /** {@code listener} hands out its new connections at the end of this round; on the loop. */
    void acceptAtRoundEnd(NupaServerSocketChannel listener) {
        acceptsDue.addLast(listener);
    }

    /**
     * The round's frames are in: listeners hand out their new connections, then the channels that were given
     * bytes read them (not those that moved to another loop meanwhile: that loop reads). Returns how many acted.
     */
    int endRound() {
        int n = 0;
        NupaServerSocketChannel l;
        while ((l = acceptsDue.pollFirst()) != null) {
            l.roundEnd();
            n++;
        }
        NupaSocketChannel ch;
        while ((ch = readsDue.pollFirst()) != null) {
            if (ch.stack() == this) {
                ch.roundEnd();
            }
            n++;
        }
        return n;
    }

    /** {@code channel} flushed again in this turn: its connection sends at the turn's end ({@link #sendDue}); on the loop. */
    void sendAtTurnEnd(NupaSocketChannel channel) {
        sendsDue.addLast(channel);
    }

    /** The turn of the loop (as {@link #sendDue} ends them): a channel's first flush in a turn sends at once. */
    long turn() {
        return turn;
    }

    /**
     * Ends the turn: the connections of the channels that flushed again in it send (those that moved to another loop
     * meanwhile excepted: none can, as they move before their first write). Returns how many sent.
     */
    int sendDue() {
        turn++;
        if (sendsDue.isEmpty()) {
            return 0;
        }
        long now = System.nanoTime();
        int n = 0;
        NupaSocketChannel ch;
        while ((ch = sendsDue.pollFirst()) != null) {
            ch.sendNow(now);
            n++;
        }
        return n;
    }

    /** The direct buffer this loop's channels read files through (file regions); made on first use, on the loop. */
    RegionSink.FileBuffer fileBuffer() {
        if (fileBuffer == null) {
            fileBuffer = new RegionSink.FileBuffer();
        }
        return fileBuffer;
    }

    /** A channel of this loop sent a file region whole; on the loop. */
    void regionSent() {
        regionsSent = regionsSent + 1; // one writer: the loop
    }

    /** How many file regions (Vert.x's {@code sendFile}) the channels of this loop sent whole. */
    public long regionsSent() {
        return regionsSent;
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
        return "node " + link.address() + " " + ip.config() + (ip.loopGroup().loops() > 1 ? " (loop " + ip.loop() + ")" : "");
    }
}
