package dev.nupa.ip;

import java.lang.foreign.MemorySegment;
import java.util.BitSet;
import java.util.concurrent.ThreadLocalRandom;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;

/**
 * One node's IPv4 output (Linux's ip_output.c and the route lookup before it): picks the fabric node a datagram goes
 * to (the route's next hop through the neighbor directory, the external interface, or the node's own loopback), fans
 * broadcast and multicast out to every node that should have a copy, numbers datagrams, and has the
 * {@link DatagramWriter} write them. The link's owner thread; allocation-free.
 */
final class Ipv4Output {
    /** ECN field of an ECN-capable transport, ECT(0) (RFC 3168 5). */
    static final int ECT_0 = 2;

    private final Ipv4Stack stack;
    private final Link link;
    private final NeighborDirectory neighbors;
    private final IpConfig config;
    private final LoopGroup group;
    private final int loop;
    private final RouteTable routes;
    private final Counters counters;
    private final DatagramWriter writer;
    private final LoopbackInterface loopback;
    /** The nodes one fan-out has sent to (a node may publish several bindings); reused, as sending allocates nothing. */
    private final BitSet fanOutSeen = new BitSet();
    private boolean loopbackPolled;
    private int externalHop;
    private int identification = ThreadLocalRandom.current().nextInt(65536);

    Ipv4Output(Ipv4Stack stack, Link link, NeighborDirectory neighbors, IpConfig config, LoopGroup group, int loop,
               RouteTable routes, Counters counters, DatagramWriter writer, LoopbackInterface loopback) {
        this.stack = stack;
        this.link = link;
        this.neighbors = neighbors;
        this.config = config;
        this.group = group;
        this.loop = loop;
        this.routes = routes;
        this.counters = counters;
        this.writer = writer;
        this.loopback = loopback;
    }

    /**
     * Sends a datagram whose payload is {@code head} then {@code body}, through fabric node {@code via} (-1: as routed),
     * with IP_TOS {@code tos} and, for multicast, IP_MULTICAST_LOOP {@code multicastLoop}. {@code icrc}: a RoCEv2
     * datagram, whose last 4 bytes (beyond head and body) take its ICRC once the header is written; it leaves ECT(0).
     */
    int send(long waitNs, int via, int src, int destination, int protocol, boolean df, int tos, boolean multicastLoop,
             MemorySegment head, long headOff, int headLen, MemorySegment body, long bodyOff, int bodyLen, boolean icrc) {
        counters.inc(IpCounter.OUT_REQUESTS);
        if (via < 0 && (stack.isBroadcast(destination) || Ipv4Address.isMulticast(destination))) {
            return fanOut(waitNs, src, destination, protocol, df, tos, multicastLoop, head, headOff, headLen, body, bodyOff, bodyLen);
        }
        int node = via >= 0 ? via : resolve(destination);
        if (node < 0 && node != DatagramWriter.VIA_EXTERNAL && node != DatagramWriter.VIA_LOOPBACK) {
            counters.inc(IpCounter.OUT_NO_ROUTES);
            return node;
        }
        // RoCEv2 leaves ECN-capable, ECT(0) (RFC 3168), as RoCEv2 NICs send it: a congested hop marks CE for DCQCN.
        int t = icrc ? (tos & ~3) | ECT_0 : tos;
        int rc = writer.emit(node, externalHop, src, destination, protocol, config.defaultTtl(), t, df, nextId(), 0, false,
                head, headOff, headLen, body, bodyOff, bodyLen, icrc, waitNs, link.now());
        countSendFailure(rc);
        return rc;
    }

    /**
     * A broadcast or multicast datagram on the fabric, which has no broadcast medium: a copy to every node that is up
     * and in the subnet (broadcast) or published the group (multicast), and one to this node itself: Linux loops a
     * broadcast back to its sender's host, and a multicast when the node joined the group and the socket's
     * IP_MULTICAST_LOOP is on. Not through the gateway: a router forwards no broadcast (RFC 1812 5.3.5.1), and multicast
     * routing is not done. Best effort, as on a wire: a copy a full ring refuses is counted. Memberships are read from
     * the fabric at most once a millisecond.
     */
    private int fanOut(long waitNs, int src, int destination, int protocol, boolean df, int tos, boolean multicastLoop,
                       MemorySegment head, long headOff, int headLen, MemorySegment body, long bodyOff, int bodyLen) {
        boolean multicast = Ipv4Address.isMulticast(destination);
        if (multicast) {
            neighbors.rescanIfOlder(NeighborDirectory.RESCAN_INTERVAL_NS);
        }
        BitSet seen = fanOutSeen;
        seen.clear();
        int id = nextId();
        long now = link.now();
        for (NeighborDirectory.Binding b : neighbors.bindings()) {
            int node = b.node();
            if (group.isLoop(node) || node == link.address() || seen.get(node) || !link.device().isUp(node)
                    || (multicast ? b.ipv4() != destination : !config.inSubnet(b.ipv4()))) {
                continue;
            }
            seen.set(node);
            countSendFailure(writer.emit(node, 0, src, destination, protocol, config.defaultTtl(), tos, df, id, 0, false,
                    head, headOff, headLen, body, bodyOff, bodyLen, false, waitNs, now));
        }
        if (multicast && (!multicastLoop || !stack.inGroup(destination))) {
            return SendStatus.OK;
        }
        int self = resolve(config.address()); // lo on the primary loop, else the primary's ring
        countSendFailure(writer.emit(self, 0, src, destination, protocol, config.defaultTtl(), tos, df, id, 0, false,
                head, headOff, headLen, body, bodyOff, bodyLen, false, waitNs, now));
        return SendStatus.OK;
    }

    private void countSendFailure(int rc) {
        if (rc == FabricDevice.BACK_PRESSURED) {
            counters.inc(IpCounter.OUT_BACK_PRESSURED);
        } else if (rc != SendStatus.OK && rc != SendStatus.TOO_BIG) {
            counters.inc(IpCounter.OUT_DISCARDS);
        }
    }

    private int nextId() {
        identification = (identification + 1) & 0xFFFF;
        return identification;
    }

    /** See {@link Ipv4Stack#reachability}. */
    int reachability(int destination) {
        int node = resolve(destination);
        if (node == SendStatus.NO_NEIGHBOR) {
            neighbors.rescan(); // not only a rate-limited look: a node that joined just now is not refused
            node = resolve(destination);
        }
        if (node == DatagramWriter.VIA_EXTERNAL || node == DatagramWriter.VIA_LOOPBACK) {
            return SendStatus.OK; // the external interface resolves its neighbor itself (ARP); lo is always up
        }
        if (node < 0) {
            return node;
        }
        return node == link.address() || link.device().isUp(node) ? SendStatus.OK : FabricDevice.PEER_DOWN;
    }

    /**
     * The fabric node to send to for {@code destination}, {@link DatagramWriter#VIA_EXTERNAL} (the next hop is then
     * {@link #externalHop()}), {@link DatagramWriter#VIA_LOOPBACK}, or NO_ROUTE / NO_NEIGHBOR.
     */
    int resolve(int destination) {
        if (stack.isLocal(destination)) {
            // To ourselves, as Linux through lo: the primary loop queues it for its own next round; another loop of
            // the node sends it to the primary's ring, which receives for the node's addresses and hands on.
            if (loop != 0) {
                return group.node(0);
            }
            if (!loopbackPolled && link.datapath() != null) {
                link.datapath().addSource(loopback);
                loopbackPolled = true;
            }
            return DatagramWriter.VIA_LOOPBACK;
        }
        long hop = routes.nextHop(destination);
        if (hop == RouteTable.NO_ROUTE) {
            return SendStatus.NO_ROUTE;
        }
        IpInterface x = writer.external();
        if (x != null && x.onLink((int) hop)) {
            externalHop = (int) hop;
            return DatagramWriter.VIA_EXTERNAL;
        }
        int node = neighbors.lookup((int) hop);
        return node < 0 ? SendStatus.NO_NEIGHBOR : node;
    }

    /** The external interface's next hop the last {@link #resolve} to {@link DatagramWriter#VIA_EXTERNAL} found. */
    int externalHop() {
        return externalHop;
    }

    /** Whether the datapath polls the loopback interface as a source of its own (else the stack's timer does). */
    boolean loopbackPolled() {
        return loopbackPolled;
    }
}
