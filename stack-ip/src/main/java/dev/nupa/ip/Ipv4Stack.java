package dev.nupa.ip;

import dev.nupa.device.Trace;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.wire.Checksum;
import dev.nupa.ip.wire.IcmpHeader;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.UdpHeader;
import dev.nupa.ip.wire.WireStatus;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.RoceV2;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.l2.ProtocolHandler;

/**
 * One node's IPv4 (RFC 791, RFC 1122), ICMP (RFC 792) and UDP (RFC 768) over a {@link Link}.
 *
 * <p><b>Receiving</b> runs on the datapath thread, in place in ring memory: the link calls
 * {@link #onPacket}; the header is validated once, fragments are reassembled, and the datagram goes
 * to ICMP, UDP or a registered upper protocol by direct calls. Malformed input is counted
 * ({@link IpCounter}) and dropped or answered with ICMP; nothing received throws.
 *
 * <p><b>Sending</b> happens on the link's owner thread, as receiving does (see {@link Link}'s
 * threading: the node's datapath loop while it runs; a call from another thread throws
 * IllegalStateException, and {@link Link#execute} hands such work over). Datagrams are written
 * straight into the destination's ring (one copy from the caller's buffer), fragmented when they
 * exceed the MTU. A full destination ring is waited on for at most {@link IpConfig#sendWaitNs}; then
 * the send fails with a {@link SendStatus} code.
 *
 * <p><b>Time</b> comes from the link's poll ({@link Link#now()}) and {@link #poll(long)}; the stack
 * reads no clock except to bound a wait on a full ring.
 */
public final class Ipv4Stack implements ProtocolHandler, Datapath.Timer {
    /** First ephemeral UDP port (RFC 6335 6: 49152-65535). */
    public static final int EPHEMERAL_FIRST = 49152;

    private final Link link;
    private final NeighborDirectory neighbors;
    private final IpConfig config;
    /** The node's loops that share its address; this stack is loop {@link #loop} of them. */
    private final LoopGroup group;
    private final int loop;
    private final RouteTable routes = new RouteTable();
    private final Counters counters = new Counters();
    private final Reassembler reassembler;
    private final int broadcast;

    private final IpProtocolHandler[] protocols = new IpProtocolHandler[256];
    private final UdpPorts ports;
    private final MulticastGroups groups;
    private final Icmp icmp;

    // Receive side: owned by the datapath thread.
    private final Ipv4Header rxIp = new Ipv4Header();
    private final Ipv4Header rxWhole = new Ipv4Header();
    private final Ipv4Header rxQuoted = new Ipv4Header();
    private final UdpHeader rxUdp = new UdpHeader();
    private final Reassembler.TimeoutHandler onReassemblyTimeout = this::reassemblyTimedOut;
    private long reassemblyDeadline = Long.MAX_VALUE;
    /** The fabric node that sent the frame being received (see {@link #receivedFrom}). */
    private int rxSourceNode = -1;

    // Send side: owned by the same thread (the link's owner, see Link's threading).
    private final DatagramWriter writer;
    private final LoopbackInterface loopback;
    private final Ipv4Output output;
    /** The loopback queue is one of the datapath's sources (else {@link #poll} drains it: a loop driven by hand). */
    /** The next hop on the external interface that the last {@link #resolve} found. */
    private final UdpHeader txUdp = new UdpHeader();
    private final MemorySegment txHead = Arena.ofAuto().allocate(64);
    private final MemorySegment empty = MemorySegment.NULL;

    /**
     * Builds the stack over {@code link}, registers it for IPv4 frames, publishes its address in
     * the fabric's neighbor directory, and adds the on-link route of its subnet.
     */
    public Ipv4Stack(Link link, NeighborDirectory neighbors, IpConfig config) {
        this(link, neighbors, config, LoopGroup.single(), 0);
    }

    /**
     * The stack of event loop {@code loop} of a node whose loops share one address ({@link LoopGroup}): as
     * {@link #Ipv4Stack(Link, NeighborDirectory, IpConfig)}, but only loop 0 publishes the address; the
     * others are reached through it.
     */
    public Ipv4Stack(Link link, NeighborDirectory neighbors, IpConfig config, LoopGroup group, int loop) {
        if (loop < 0 || loop >= group.loops()) {
            throw new IllegalArgumentException("loop " + loop + " is outside 0.." + (group.loops() - 1) + " of " + group);
        }
        if (link.mtu() < Link.MIN_MTU) {
            throw new IllegalArgumentException("link MTU " + link.mtu() + " is below the IPv4 minimum of " + Link.MIN_MTU);
        }
        this.link = link;
        this.neighbors = neighbors;
        this.config = config;
        this.group = group;
        this.loop = loop;
        this.reassembler = new Reassembler(config.reassemblySlots(), config.reassemblyTimeoutNs(), counters);
        this.ports = new UdpPorts(group, loop, config.address());
        this.icmp = new Icmp(this, config, counters, ports, protocols);
        this.broadcast = config.subnetBroadcast();
        this.loopback = new LoopbackInterface(this::receiveLoopback, LoopbackInterface.DEFAULT_CAPACITY);
        this.writer = new DatagramWriter(link, counters, loopback);
        this.output = new Ipv4Output(this, link, neighbors, config, group, loop, routes, counters, writer, loopback);
        int mask = Route.mask(config.prefixLength());
        routes.add(new Route(config.address() & mask, config.prefixLength(), 0));
        link.register(EtherType.IPV4, this);
        group.setNode(loop, link.address());
        this.groups = new MulticastGroups(link, neighbors, config, group, loop);
        if (loop == 0) {
            groups.publish();
        }
    }

    // ---- multicast (RFC 1112 host, level 2; membership published in the fabric instead of IGMP) ----------------

    /** Linux's default net.ipv4.igmp_max_memberships; the node table entry holds a few more. */
    public static final int MAX_GROUPS = MulticastGroups.MAX_GROUPS;

    /**
     * Joins multicast group {@code group} (224.0.0.0/4) for the node: datagrams to it are received, and senders on the
     * fabric learn the membership from the node table (no IGMP: the fabric is one link whose members can be read).
     * Counted per joiner; {@link #leaveGroup} as often leaves. On the primary loop, which holds the node's bindings.
     */
    public void joinGroup(int group) {
        groups.join(group);
    }

    /** Leaves {@code group} once; the node stops receiving it when its last joiner left. Returns whether it had joined. */
    public boolean leaveGroup(int group) {
        return groups.leave(group);
    }

    /** Whether the node joined {@code group}. */
    public boolean inGroup(int group) {
        return groups.contains(group);
    }

    /** The loops of this node that share its address. */
    public LoopGroup loopGroup() {
        return group;
    }

    /** Which of the node's loops this stack is (0: the primary, which peers send to). */
    public int loop() {
        return loop;
    }

    /**
     * The fabric node that sent the frame being received (-1: it came through the external interface, -2: through
     * the loopback interface); valid while an upper protocol handles it.
     */
    public int receivedFrom() {
        return rxSourceNode;
    }

    public IpConfig config() {
        return config;
    }

    public int address() {
        return config.address();
    }

    public Link link() {
        return link;
    }

    public NeighborDirectory neighbors() {
        return neighbors;
    }

    public RouteTable routes() {
        return routes;
    }

    /**
     * Adds a route after checking that its gateway is on-link (reachable without a gateway);
     * throws IllegalArgumentException naming the route otherwise.
     */
    public void addRoute(Route route) {
        if (!route.onLink()) {
            Route via = routes.lookup(route.gateway());
            if (via == null || !via.onLink()) {
                throw new IllegalArgumentException("route " + route + ": gateway " + Ipv4Address.toString(route.gateway())
                        + " is not on-link (outside " + config + " and every on-link route); give a gateway inside the subnet");
            }
        }
        routes.add(route);
    }

    /**
     * Gives the node an interface beside the fabric (the gateway's Ethernet side): datagrams whose next hop
     * lies in its subnet leave through it, datagrams to its address are the node's, and its subnet's
     * on-link route is added. One per node; on the node's loop.
     *
     * @throws IllegalStateException if the node has one already
     * @throws IllegalArgumentException if its subnet overlaps the fabric's
     */
    public void attach(IpInterface iface) {
        link.checkOwner();
        if (writer.external() != null) {
            throw new IllegalStateException("node " + this + " already has interface " + writer.external().name()
                    + "; detach it first (one external interface per node)");
        }
        int shorter = Math.min(iface.prefixLength(), config.prefixLength());
        if (((iface.address() ^ config.address()) & Route.mask(shorter)) == 0) {
            throw new IllegalArgumentException("interface " + iface.name() + " " + Ipv4Address.toString(iface.address()) + "/"
                    + iface.prefixLength() + " overlaps the fabric's subnet " + config + "; give it a subnet of its own");
        }
        int mask = Route.mask(iface.prefixLength());
        routes.add(new Route(iface.address() & mask, iface.prefixLength(), 0));
        writer.external(iface);
    }

    /** Takes the interface {@link #attach} gave back, with its on-link route; on the node's loop. */
    public void detach(IpInterface iface) {
        link.checkOwner();
        if (writer.external() == iface) {
            writer.external(null);
            int mask = Route.mask(iface.prefixLength());
            routes.remove(iface.address() & mask, iface.prefixLength());
        }
    }

    /**
     * The external interface could not deliver {@code [off, off + len)} of {@code mem}, a datagram it was given,
     * because its next hop never answered: answers the datagram's source with host unreachable (RFC 1812
     * 4.3.3.1, RFC 1122 3.2.2.1). On the node's loop.
     */
    public void hostUnreachable(MemorySegment mem, long off, int len) {
        Ipv4Header q = rxQuoted;
        if (q.wrap(mem, off, len, false) == WireStatus.OK) {
            icmp.sendError(q, IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.UNREACHABLE_HOST, 0, false, link.now());
        }
    }

    /**
     * The source address of a datagram this node sends to {@code destination}: the external interface's when it
     * leaves through that interface (RFC 1122 3.3.4.3: the address of the interface it goes out on), else the
     * node's.
     */
    public int sourceFor(int destination) {
        if (Ipv4Address.isLoopback(destination)) {
            return Ipv4Address.LOCALHOST; // lo's address, as Linux chooses it
        }
        IpInterface x = writer.external();
        if (x != null) {
            long hop = routes.nextHop(destination);
            if (hop != RouteTable.NO_ROUTE && x.onLink((int) hop)) {
                return x.address();
            }
        }
        return config.address();
    }

    /**
     * Whether {@code address} is one of the node's own: its fabric address, its external interface's, or one of
     * 127.0.0.0/8 (its loopback interface's, as Linux's local routes hold the whole block).
     */
    public boolean isLocal(int address) {
        IpInterface x = writer.external();
        return address == config.address() || Ipv4Address.isLoopback(address) || (x != null && address == x.address());
    }

    /** Whether a datagram to {@code address} goes through the loopback interface: one of the node's own, on a node of one loop. */
    public boolean viaLoopbackInterface(int address) {
        return group.loops() == 1 && isLocal(address);
    }

    /** Largest UDP payload that leaves in one frame, without fragmentation. */
    public int maxUnfragmentedUdpPayload() {
        return link.mtu() - Ipv4Header.MIN_HEADER - UdpHeader.HEADER;
    }

    public long counter(IpCounter c) {
        return counters.get(c);
    }

    /** For sockets that drop a datagram because their receive queue is full. */
    public void countReceiveQueueDrop() {
        counters.inc(IpCounter.UDP_RCVBUF_ERRORS);
    }

    /** A socket that holds the port but is bound to another local address dropped a datagram ({@link IpCounter#UDP_NO_PORTS}). */
    public void countNoPort() {
        counters.inc(IpCounter.UDP_NO_PORTS);
    }

    public Map<IpCounter, Long> counters() {
        return counters.snapshot();
    }

    /** Registers an upper protocol (e.g. TCP, 6); throws IllegalStateException if it has a handler or is built in. */
    public synchronized void register(int protocol, IpProtocolHandler handler) {
        if (protocol == Ipv4Header.PROTOCOL_ICMP || protocol == Ipv4Header.PROTOCOL_UDP) {
            throw new IllegalStateException("IP protocol " + protocol + " is built into the stack; register another");
        }
        if (protocol < 0 || protocol > 255) {
            throw new IllegalArgumentException("IP protocol " + protocol + " is outside 0..255");
        }
        if (protocols[protocol] != null) {
            throw new IllegalStateException("IP protocol " + protocol + " already has a handler: " + protocols[protocol]);
        }
        protocols[protocol] = handler;
    }

    /** Removes the handler of an upper protocol, if any: its datagrams are answered with protocol unreachable again. */
    public synchronized void unregister(int protocol) {
        if (protocol >= 0 && protocol <= 255) {
            protocols[protocol] = null;
        }
    }

    // ---- UDP ports -------------------------------------------------------------------------

    /**
     * As {@link #bindUdp(int, UdpReceiver)}, sharing the port with other sockets that set the same option, as Linux
     * lets sockets share it with SO_REUSEADDR or SO_REUSEPORT (socket(7), see {@link UdpPortShare}); sockets on one
     * port must be on one event loop of the node.
     */
    public int bindUdp(int port, UdpReceiver receiver, boolean reuseAddress, boolean reusePort) {
        return ports.bind(port, receiver, reuseAddress, reusePort);
    }

    /**
     * Binds {@code port} (0: an ephemeral one) to {@code receiver}; returns the port. Throws
     * IllegalStateException naming the port when it is taken or no ephemeral port is free.
     */
    public int bindUdp(int port, UdpReceiver receiver) {
        return ports.bind(port, receiver);
    }

    /** Unbinds {@code port} if {@code receiver} holds it. */
    public boolean unbindUdp(int port, UdpReceiver receiver) {
        return ports.unbind(port, receiver);
    }

    /** Registers the receiver of echo replies with {@code identifier}; throws if one is registered. */
    public void addEchoListener(int identifier, EchoListener listener) {
        icmp.addEchoListener(identifier, listener);
    }

    public void removeEchoListener(int identifier, EchoListener listener) {
        icmp.removeEchoListener(identifier, listener);
    }

    // ---- timers ----------------------------------------------------------------------------

    /** Expires reassemblies; returns when it wants to be polled next. Datapath thread. */
    @Override
    public long poll(long now) {
        if (now - reassemblyDeadline >= 0) {
            reassemblyDeadline = reassembler.poll(now, onReassemblyTimeout);
        }
        if (!output.loopbackPolled() && loopback.ready()) {
            loopback.poll(Datapath.BATCH, now);
            if (loopback.ready()) {
                return now;
            }
        }
        return reassemblyDeadline;
    }

    /** The node's loopback interface ({@code lo}): its queue and counters. */
    public LoopbackInterface loopback() {
        return loopback;
    }

    /** A datagram the node sent itself, received on its own loop: trusted as Linux trusts {@code lo}. */
    private void receiveLoopback(MemorySegment mem, long off, int len) {
        link.captureLoopback(EtherType.IPV4, mem, off, len);
        receive(LOOPBACK_SOURCE, mem, off, len, false);
    }

    private void reassemblyTimedOut(Ipv4Header first) {
        // RFC 792 / RFC 1122 3.3.2: time exceeded, code 1, only when fragment zero came.
        icmp.sendError(first, IcmpHeader.TYPE_TIME_EXCEEDED, IcmpHeader.TIME_EXCEEDED_REASSEMBLY, 0, false,
                link.now());
    }

    // ---- receiving -------------------------------------------------------------------------

    @Override
    public void onPacket(int sourceNode, MemorySegment mem, long off, int len) {
        receive(sourceNode, mem, off, len, config.verifyChecksums());
    }

    /**
     * A datagram that arrived on the external interface ({@link #attach}): received as one from the fabric,
     * except that its header checksum is always verified (the edge trusts no link). On the node's loop.
     */
    public void receiveExternal(MemorySegment mem, long off, int len) {
        receive(-1, mem, off, len, true);
    }

    /** {@link #receivedFrom} for a datagram that came through the loopback interface. */
    private static final int LOOPBACK_SOURCE = -2;

    private void receive(int sourceNode, MemorySegment mem, long off, int len, boolean verify) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.IP_IN);
        }
        long now = link.now();
        rxSourceNode = sourceNode;
        counters.inc(IpCounter.IN_RECEIVES);
        Ipv4Header ip = rxIp;
        int status = ip.wrap(mem, off, len, verify);
        if (status != WireStatus.OK) {
            counters.inc(status == WireStatus.TRUNCATED ? IpCounter.IN_TRUNCATED : IpCounter.IN_HDR_ERRORS);
            return;
        }
        int src = ip.sourceAddress();
        int dst = ip.destinationAddress();
        // RFC 1122 3.2.1.3: silently discard a datagram whose source is broadcast or multicast.
        if (Ipv4Address.isBroadcast(src) || Ipv4Address.isMulticast(src) || (broadcast != 0 && src == broadcast)) {
            counters.inc(IpCounter.IN_ADDR_ERRORS);
            return;
        }
        // RFC 1122 3.2.1.3: 127/8 never appears outside a host, and a datagram from the wire that claims one of our
        // own addresses as its source is forged (Linux's martian source): only the node's own loops send such.
        if (sourceNode != LOOPBACK_SOURCE && (isLocal(src) || Ipv4Address.isLoopback(dst))
                && !(sourceNode >= 0 && group.isLoop(sourceNode))) {
            counters.inc(IpCounter.IN_ADDR_ERRORS);
            return;
        }
        boolean toBroadcast = isBroadcast(dst) || Ipv4Address.isMulticast(dst) && inGroup(dst); // one of many receivers
        if (!isLocal(dst) && !toBroadcast) {
            if (config.forwarding()) {
                forward(ip, now);
            } else {
                counters.inc(IpCounter.IN_ADDR_ERRORS);
            }
            return;
        }
        // RFC 1122 3.2.1.7: a host must not discard a datagram for itself because of its TTL.
        if (ip.isFragment()) {
            int slot = reassembler.accept(ip, now);
            if (reassembler.inProgress() > 0 && reassemblyDeadline == Long.MAX_VALUE) {
                reassemblyDeadline = now + config.reassemblyTimeoutNs();
            }
            if (slot < 0) {
                return;
            }
            try {
                if (rxWhole.wrap(reassembler.datagram(slot), reassembler.datagramOffset(slot),
                        reassembler.datagramLength(slot), false) == WireStatus.OK) {
                    deliver(rxWhole, toBroadcast, now);
                }
            } finally {
                reassembler.release(slot);
            }
            return;
        }
        deliver(ip, toBroadcast, now);
    }

    private void deliver(Ipv4Header ip, boolean toBroadcast, long now) {
        int protocol = ip.protocol();
        if (protocol == Ipv4Header.PROTOCOL_ICMP) {
            counters.inc(IpCounter.IN_DELIVERS);
            icmp.input(ip, toBroadcast, now);
        } else if (protocol == Ipv4Header.PROTOCOL_UDP) {
            counters.inc(IpCounter.IN_DELIVERS);
            udpInput(ip, toBroadcast, now);
        } else {
            IpProtocolHandler h = protocols[protocol];
            if (h == null) {
                counters.inc(IpCounter.IN_UNKNOWN_PROTOS);
                if (!toBroadcast) {
                    icmp.sendError(ip, IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.UNREACHABLE_PROTOCOL, 0, false, now);
                }
                return;
            }
            counters.inc(IpCounter.IN_DELIVERS);
            h.onDatagram(ip, now);
        }
    }

    private void udpInput(Ipv4Header ip, boolean toBroadcast, long now) {
        UdpHeader udp = rxUdp;
        if (udp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength(), ip.sourceAddress(), ip.destinationAddress(),
                config.verifiesFrom(ip.sourceAddress())) != WireStatus.OK) {
            counters.inc(IpCounter.UDP_IN_ERRORS);
            return;
        }
        UdpReceiver r = ports.get(udp.destinationPort());
        if (r == null) {
            int owner = loop == 0 && group.loops() > 1 ? group.udpOwner(udp.destinationPort()) : -1;
            if (owner > 0) {
                handOver(owner, ip);
                return;
            }
            counters.inc(IpCounter.UDP_NO_PORTS);
            if (!toBroadcast) {
                icmp.sendError(ip, IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.UNREACHABLE_PORT, 0, false, now);
            }
            return;
        }
        counters.inc(IpCounter.UDP_IN_DATAGRAMS);
        if (Trace.ENABLED) {
            Trace.mark(Trace.CALLBACK);
        }
        if (r instanceof UdpPortShare share) {
            share.deliver(ip, toBroadcast, udp.sourcePort(), udp.segment(), udp.payloadOffset(), udp.payloadLength());
            return;
        }
        r.onDatagram(ip, udp.sourcePort(), udp.segment(), udp.payloadOffset(), udp.payloadLength());
    }

    // ---- forwarding (RFC 1812 5.2 / 5.3) ---------------------------------------------------

    private void forward(Ipv4Header ip, long now) {
        if (ip.ttl() <= 1) {
            counters.inc(IpCounter.FORW_TTL_EXCEEDED);
            icmp.sendError(ip, IcmpHeader.TYPE_TIME_EXCEEDED, IcmpHeader.TIME_EXCEEDED_TTL, 0, false, now);
            return;
        }
        int node = output.resolve(ip.destinationAddress());
        if (node < 0 && node != DatagramWriter.VIA_EXTERNAL) {
            counters.inc(IpCounter.OUT_NO_ROUTES);
            icmp.sendError(ip, IcmpHeader.TYPE_DESTINATION_UNREACHABLE,
                    node == SendStatus.NO_ROUTE ? IcmpHeader.UNREACHABLE_NET : IcmpHeader.UNREACHABLE_HOST, 0, false, now);
            return;
        }
        int hop = output.externalHop();
        int mtu = writer.mtu(node);
        int rc;
        if (ip.totalLength() <= mtu) {
            rc = writer.forwardWhole(node, hop, ip, config.sendWaitNs(), now);
        } else if (ip.dontFragment()) {
            counters.inc(IpCounter.FRAG_FAILS);
            icmp.sendError(ip, IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.UNREACHABLE_FRAGMENTATION_NEEDED,
                    mtu & 0xFFFF, false, now);
            return;
        } else {
            // Refragment: options are not copied (RFC 791 lets a router drop the ones not marked "copied").
            rc = writer.emit(node, hop, ip.sourceAddress(), ip.destinationAddress(), ip.protocol(), ip.ttl() - 1,
                    ip.typeOfService(), false, ip.identification(), ip.fragmentOffset(), ip.moreFragments(),
                    empty, 0, 0, ip.segment(), ip.payloadOffset(), ip.payloadLength(), false, config.sendWaitNs(), now);
        }
        counters.inc(rc == SendStatus.OK ? IpCounter.FORW_DATAGRAMS : IpCounter.OUT_DISCARDS);
    }

    // ---- hand-over between the node's loops ------------------------------------------------

    /**
     * Passes a datagram this loop received to loop {@code toLoop} of the node, through that loop's ring, as
     * it arrived (TTL unchanged: it is not routed; refragmented if it was reassembled). Counted as
     * {@link IpCounter#LOOP_HANDOVERS}, or {@link IpCounter#OUT_DISCARDS} if it could not go.
     */
    public int handOver(int toLoop, Ipv4Header ip) {
        int rc = writer.emit(group.node(toLoop), 0, ip.sourceAddress(), ip.destinationAddress(), ip.protocol(), ip.ttl(),
                ip.typeOfService(), ip.dontFragment(), ip.identification(), 0, false, empty, 0, 0, ip.segment(),
                ip.payloadOffset(), ip.payloadLength(), false, config.sendWaitNs(), 0);
        counters.inc(rc == SendStatus.OK ? IpCounter.LOOP_HANDOVERS : IpCounter.OUT_DISCARDS);
        return rc;
    }

    // ---- sending ---------------------------------------------------------------------------

    /**
     * Sends a UDP datagram from {@code sourcePort} to {@code destination}:{@code destinationPort} with
     * {@code length} bytes of {@code data} at {@code offset}, fragmented if it exceeds the MTU.
     * Returns {@link SendStatus#OK} or a negative {@link SendStatus} code. The link's owner thread; allocation-free.
     */
    public int sendUdp(int sourcePort, int destination, int destinationPort, MemorySegment data, long offset, int length) {
        return sendUdp(sourcePort, destination, destinationPort, data, offset, length, config.sendWaitNs());
    }

    /**
     * {@link #sendUdp(int, int, int, MemorySegment, long, int)} that waits at most {@code waitNs} on a
     * full ring (0: not at all, for event loops that retry later on BACK_PRESSURED).
     */
    public int sendUdp(int sourcePort, int destination, int destinationPort, MemorySegment data, long offset, int length,
                       long waitNs) {
        return udp(sourcePort, destination, destinationPort, data, offset, length, waitNs, 0, true);
    }

    private int udp(int sourcePort, int destination, int destinationPort, MemorySegment data, long offset, int length,
                    long waitNs, int tos, boolean multicastLoop) {
        if (length < 0 || length > MAX_UDP_PAYLOAD || (sourcePort | destinationPort) >>> 16 != 0) {
            throw badUdpSend(sourcePort, destinationPort, length);
        }
        link.checkOwner(); // before the scratch headers are touched
        int udpLength = UdpHeader.HEADER + length;
        int src = sourceFor(destination);
        int checksum = 0;
        if (config.computesTo(destination)) {
            // RFC 768: pseudo header, the header's words (checksum zero; the ports and length from the
            // values, not read back), then the data, which the 8-byte header keeps word-aligned.
            int sum = Checksum.pseudoHeaderSum(src, destination, Ipv4Header.PROTOCOL_UDP, udpLength);
            sum = Checksum.add(sum, Checksum.fold((long) sourcePort + destinationPort + udpLength));
            sum = Checksum.add(sum, Checksum.sum(data, offset, length));
            int c = Checksum.finish(sum);
            checksum = c == 0 ? 0xFFFF : c;
        }
        UdpHeader h = txUdp;
        h.wrapForWrite(txHead, 0, UdpHeader.HEADER);
        h.emit(sourcePort, destinationPort, udpLength, checksum);
        int rc = output.send(waitNs, -1, src, destination, Ipv4Header.PROTOCOL_UDP, false, tos, multicastLoop, txHead, 0, UdpHeader.HEADER,
                data, offset, length, false);
        if (rc == SendStatus.OK) {
            counters.inc(IpCounter.UDP_OUT_DATAGRAMS);
        }
        return rc;
    }

    /**
     * As {@link #sendUdp(int, int, int, MemorySegment, long, int, long)}, with the socket's IP_MULTICAST_LOOP: whether a
     * datagram to a multicast group this node joined is also received by the node itself (ip(7); on by default).
     */
    public int sendUdp(int sourcePort, int destination, int destinationPort, MemorySegment data, long offset, int length,
                       long waitNs, boolean multicastLoop) {
        return udp(sourcePort, destination, destinationPort, data, offset, length, waitNs, 0, multicastLoop);
    }

    /**
     * As {@link #sendUdp(int, int, int, MemorySegment, long, int, long)}, with the socket's IP_TOS ({@code tos}: DSCP &lt;&lt; 2
     * | ECN, ip(7)): the datagram carries it, and its DSCP's service level ({@link #setDscpLevels}) picks the ring of the
     * receiving node (docs/link-layer.md, "Service levels").
     */
    public int sendUdp(int sourcePort, int destination, int destinationPort, MemorySegment data, long offset, int length,
                       long waitNs, int tos) {
        if (tos >>> 8 != 0) {
            throw new IllegalArgumentException("TOS " + tos + " is outside 0..255 (DSCP << 2 | ECN)");
        }
        return udp(sourcePort, destination, destinationPort, data, offset, length, waitNs, tos, true);
    }

    /** Sets the service level of each DSCP for the datagrams this node sends and forwards; the link's owner thread or before it runs. */
    public void setDscpLevels(DscpLevels levels) {
        writer.dscpLevels(levels);
    }

    public DscpLevels dscpLevels() {
        return writer.dscpLevels();
    }

    /** Sends an ICMP echo request (RFC 792) with {@code length} bytes of data. Returns a {@link SendStatus} code. */
    public int sendEchoRequest(int destination, int identifier, int sequence, MemorySegment data, long offset, int length) {
        return icmp.sendEchoRequest(destination, identifier, sequence, data, offset, length);
    }

    /**
     * Sends a datagram of an upper protocol whose payload is {@code head} followed by {@code body}
     * (e.g. a TCP header and data, checksum already filled). Returns a {@link SendStatus} code.
     */
    public int sendDatagram(int destination, int protocol, boolean dontFragment, MemorySegment head, long headOffset,
                            int headLength, MemorySegment body, long bodyOffset, int bodyLength) {
        return sendDatagram(destination, protocol, dontFragment, head, headOffset, headLength, body, bodyOffset, bodyLength,
                config.sendWaitNs());
    }

    /** {@link #sendDatagram} waiting at most {@code waitNs} on a full ring (0: not at all; the caller retries). */
    public int sendDatagram(int destination, int protocol, boolean dontFragment, MemorySegment head, long headOffset,
                            int headLength, MemorySegment body, long bodyOffset, int bodyLength, long waitNs) {
        return sendDatagram(-1, destination, protocol, dontFragment, head, headOffset, headLength, body, bodyOffset, bodyLength,
                waitNs);
    }

    /**
     * {@link #sendDatagram} through fabric node {@code via}, where the upper protocol knows it (a peer's loop that
     * its frames came from); -1: the node the route and the neighbor directory give.
     */
    public int sendDatagram(int via, int destination, int protocol, boolean dontFragment, MemorySegment head, long headOffset,
                            int headLength, MemorySegment body, long bodyOffset, int bodyLength, long waitNs) {
        return sendDatagram(via, config.address(), destination, protocol, dontFragment, head, headOffset, headLength, body,
                bodyOffset, bodyLength, waitNs);
    }

    /**
     * {@link #sendDatagram(int, int, int, boolean, MemorySegment, long, int, MemorySegment, long, int, long)} from
     * {@code source}, one of the node's own addresses ({@link #isLocal}): a connection answered at the gateway's
     * Ethernet address answers from it.
     */
    public int sendDatagram(int via, int source, int destination, int protocol, boolean dontFragment, MemorySegment head,
                            long headOffset, int headLength, MemorySegment body, long bodyOffset, int bodyLength, long waitNs) {
        link.checkOwner();
        if (!isLocal(source)) {
            throw new IllegalArgumentException(Ipv4Address.toString(source) + " is not an address of node " + this
                    + "; send from its own (its fabric address, its external interface's, or 127.0.0.0/8)");
        }
        return output.send(waitNs, via, source, destination, protocol, dontFragment, 0, true, head, headOffset, headLength, body,
                bodyOffset, bodyLength, false);
    }

    /**
     * Sends a RoCEv2 datagram (IBA vol 1 annex A17.4): UDP from {@code sourcePort} to 4791, Don't Fragment set
     * (RoCEv2 is never fragmented; the path MTU is the QP's), the transport packet of {@code length} bytes at
     * {@code offset} of {@code packet} (BTH through pad), then its 4-byte invariant CRC, computed over the datagram
     * as it leaves ({@link RoceV2#writeIcrc}). The UDP checksum is 0: over IPv4 that means "none" (RFC 768), and
     * the ICRC covers the payload end to end. Returns a {@link SendStatus} code; waits at most {@code waitNs} on
     * a full ring. The link's owner thread; allocation-free.
     */
    public int sendRoceV2(int sourcePort, int destination, MemorySegment packet, long offset, int length, long waitNs) {
        if (length < RoceV2.BTH_LENGTH || length > MAX_UDP_PAYLOAD - RoceV2.ICRC_LENGTH || sourcePort >>> 16 != 0) {
            throw badUdpSend(sourcePort, RoceV2.UDP_PORT, length);
        }
        link.checkOwner();
        UdpHeader h = txUdp;
        h.wrapForWrite(txHead, 0, UdpHeader.HEADER);
        h.emit(sourcePort, RoceV2.UDP_PORT, UdpHeader.HEADER + length + RoceV2.ICRC_LENGTH, 0);
        int rc = output.send(waitNs, -1, sourceFor(destination), destination, Ipv4Header.PROTOCOL_UDP, true, 0, true, txHead, 0,
                UdpHeader.HEADER, packet, offset, length, true);
        if (rc == SendStatus.OK) {
            counters.inc(IpCounter.UDP_OUT_DATAGRAMS);
        }
        return rc;
    }

    /** A datagram of ICMP's (no TOS), through the output path; see {@link Ipv4Output#send}. */
    int send(long waitNs, int via, int src, int destination, int protocol, boolean df, MemorySegment head,
             long headOff, int headLen, MemorySegment body, long bodyOff, int bodyLen) {
        return output.send(waitNs, via, src, destination, protocol, df, 0, true, head, headOff, headLen, body, bodyOff, bodyLen,
                false);
    }

    /** Whether {@code address} is the limited broadcast (255.255.255.255) or this node's subnet broadcast. */
    public boolean isBroadcast(int address) {
        return address == Ipv4Address.BROADCAST || (broadcast != 0 && address == broadcast);
    }

    /**
     * Whether a datagram to {@code destination} could leave now: {@link SendStatus#OK}, {@link SendStatus#NO_ROUTE},
     * {@link SendStatus#NO_NEIGHBOR}, or {@link FabricDevice#PEER_DOWN} when the fabric node holding the next hop is
     * not up in the node table. A connect asks first, to fail at once as Linux's does without a route
     * (ENETUNREACH) or a reachable neighbor (EHOSTUNREACH), rather than resend its SYN into nothing.
     */
    public int reachability(int destination) {
        return output.reachability(destination);
    }

    private static final int MAX_UDP_PAYLOAD = Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER - UdpHeader.HEADER;

    /** The error for a send {@link #sendUdp} refuses (a method of its own: the JIT's inlining limits count bytecode). */
    private static IllegalArgumentException badUdpSend(int sourcePort, int destinationPort, int length) {
        if (length < 0 || length > MAX_UDP_PAYLOAD) {
            return new IllegalArgumentException("UDP payload of " + length + " bytes is outside 0.." + MAX_UDP_PAYLOAD
                    + " (RFC 768 / RFC 791 limit)");
        }
        boolean destination = destinationPort >>> 16 != 0;
        return new IllegalArgumentException((destination ? "destination" : "source") + " UDP port "
                + (destination ? destinationPort : sourcePort) + " is outside 0..65535");
    }

    @Override
    public String toString() {
        return "Ipv4Stack[" + config + " on node " + link.address() + "]";
    }
}
