package dev.nupa.gateway;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import dev.nupa.ip.IpInterface;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.Route;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.wire.Checksum;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.l2.Datapath;

/**
 * The gateway's Ethernet side: a TAP device as an IPv4 interface of the node ({@link IpInterface}), with
 * Ethernet II framing and ARP (RFC 826) in front of it. The node's IP layer sends through it every
 * datagram whose next hop lies in its subnet, and it hands the node every IPv4 datagram that arrives
 * for it; it answers ARP for its own address and, as proxy ARP (RFC 1027), for the fabric's nodes.
 *
 * <p>Everything runs on the node's loop. As a {@link Datapath.Source} it reads frames when the TAP's watcher
 * says some wait ({@link #frameArrived}, which rings the loop's doorbell), at most {@link #BATCH} a round; as a
 * {@link Datapath.Timer} it runs ARP's timers and keeps the loop awake while it busy-polls the TAP. The TAP side is untrusted: whatever is malformed, not for us, or spoofs a fabric address is
 * counted ({@link GatewayCounter}) and dropped, and memory is bounded (the ARP cache and its queue).
 *
 * <p>With offloads ({@link Tap#offloads}) every frame carries a {@link VnetHeader}: partial checksums from Linux
 * are completed, its TCP super-frames are cut into segments ({@link TcpSegmenter}), and the TCP segments sent
 * to it within one round of the loop are joined into super-frames ({@link TcpCoalescer}), written when the
 * round's timers run.
 *
 * <p>A TAP of several queues has one interface per queue, each on its own event loop. The first (the primary)
 * keeps the neighbor cache, answers ARP and announces the address; the others read the addresses it knows from a
 * table it publishes, and hand it what they cannot send themselves (a datagram for a next hop not yet known, an
 * ARP frame that arrived on their queue), through its loop's task queue.
 */
public final class EthernetInterface implements IpInterface, Datapath.Source, Datapath.Timer {
    /** Frames read per round of the loop at most, so the fabric side is not starved. */
    public static final int BATCH = 64;
    /**
     * After a frame, the loop reads the TAP itself for this long (NAPI's busy polling), so the next frame of
     * an exchange does not wait for the watcher to wake it; as long as the event loop spins before it sleeps.
     */
    static final long BUSY_POLL_NS = 50_000;
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final GatewayCounter[] ALL = GatewayCounter.values();

    private final Tap tap;
    private final Ipv4Stack ip;
    private final String name;
    private final int address;
    private final int prefixLength;
    private final long mac;
    private final int mtu;
    private final ArpCache arp;
    private final ArpCache.Actions arpActions = new ArpActions();
    private final MemorySegment rx;
    private final MemorySegment tx;
    /** Where a frame starts in rx and tx: after the virtio-net header when offloads are on, else at 0. */
    private final int base;
    private final TcpSegmenter segmenter;
    private final TcpCoalescer coalescer;
    private final TcpSegmenter.Sink toIp = (d, o, n) -> onIpv4(d, o, n);
    private final EthernetFrame rxFrame = new EthernetFrame();
    private final ArpPacket rxArp = new ArpPacket();
    private final long[] counts = new long[ALL.length];
    /** ECN marking of what leaves toward the TAP (the backlog the loop forwards in a round) and toward the fabric. */
    private final EcnMarker ecnToTap = new EcnMarker(EcnMarker.DEFAULT_THRESHOLD);
    private final EcnMarker ecnToFabric = new EcnMarker(EcnMarker.DEFAULT_THRESHOLD);
    /** The time of the round whose TAP frames are being read. */
    private long rxNow;
    /** Set by the watcher when frames wait, cleared by the loop before it reads them. */
    private volatile boolean readable;
    /** The watcher signalled and waits to be told to watch again. */
    private volatile boolean watcherWaits;
    private volatile Runnable rearm = () -> { };
    private long lastFrameAt = Long.MIN_VALUE / 2;
    /** The interface that keeps the neighbor cache for this one (another queue's), or null: this is the primary. */
    private final EthernetInterface primary;
    /** What the primary's cache knows, as [ip, mac, ...] pairs, for the other queues; replaced when it changes. */
    private volatile long[] published = new long[0];
    private long publishedVersion = -1;
    /** Datagrams and ARP frames handed to the primary and not yet taken (at most {@link #MAX_HANDED_OFF}). */
    private final AtomicInteger handedOff = new AtomicInteger();
    static final int MAX_HANDED_OFF = 64;

    /**
     * @param address the gateway's IPv4 address on the Ethernet side, in a subnet of {@code prefixLength} bits
     *                that does not overlap the fabric's
     * @param mac     its MAC address (a unicast one; {@link #localMac} makes one)
     */
    public EthernetInterface(Tap tap, Ipv4Stack ip, int address, int prefixLength, long mac, ArpCache arp) {
        this(tap, ip, address, prefixLength, mac, arp, null);
        if (prefixLength < 1 || prefixLength > 30) {
            throw new IllegalArgumentException("the TAP side's prefix /" + prefixLength + " must be 1..30 (room for the"
                    + " gateway and a Linux peer)");
        }
        if (EthernetFrame.isGroup(mac) || mac == 0) {
            throw new IllegalArgumentException("MAC " + EthernetFrame.macToString(mac) + " is not a unicast address");
        }
    }

    /**
     * The interface of another queue of {@code primary}'s TAP device, on the event loop of {@code ip} (a stack of
     * another loop of the same node): the same address and MAC, the primary's neighbor cache.
     */
    public EthernetInterface(Tap tap, Ipv4Stack ip, EthernetInterface primary) {
        this(tap, ip, primary.address, primary.prefixLength, primary.mac, null, primary);
        if (primary.primary != null || !tap.name().equals(primary.name)) {
            throw new IllegalArgumentException("queue " + tap.queue() + " of " + tap.name() + " needs the primary interface"
                    + " of the same device, not " + primary.name);
        }
    }

    private EthernetInterface(Tap tap, Ipv4Stack ip, int address, int prefixLength, long mac, ArpCache arp,
                              EthernetInterface primary) {
        this.tap = tap;
        this.ip = ip;
        this.name = tap.name();
        this.address = address;
        this.prefixLength = prefixLength;
        this.mac = mac;
        this.mtu = tap.mtu();
        this.arp = arp;
        this.primary = primary;
        Arena arena = Arena.ofAuto();
        this.base = tap.offloads() ? VnetHeader.LENGTH : 0;
        // Room for one frame past the MTU, VLAN tag included, so an oversized one is seen whole and counted (and
        // for a whole super-frame with offloads).
        this.rx = arena.allocate(base + Ipv4Header.MAX_TOTAL_LENGTH + EthernetFrame.HEADER + 4, 8);
        this.tx = arena.allocate(base + Ipv4Header.MAX_TOTAL_LENGTH + EthernetFrame.HEADER, 8); // its header stays zero
        this.segmenter = tap.offloads() ? new TcpSegmenter() : null;
        this.coalescer = tap.offloads() ? new TcpCoalescer() : null;
    }

    /** A locally administered unicast MAC address (IEEE 802: bit 1 of the first byte set, bit 0 clear) for {@code address}. */
    public static long localMac(int address) {
        return 0x02_4E_00_00_00_00L | (address & 0xFFFF_FFFFL);
    }

    /** Which queue of the TAP device this interface serves. */
    public int queue() {
        return tap.queue();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int address() {
        return address;
    }

    @Override
    public int prefixLength() {
        return prefixLength;
    }

    @Override
    public int mtu() {
        return mtu;
    }

    public long mac() {
        return mac;
    }

    /**
     * The ECN marking threshold, in frames of a round's backlog, both ways ({@link EcnMarker}; default
     * {@value EcnMarker#DEFAULT_THRESHOLD}; {@link Integer#MAX_VALUE} turns marking off). On the loop, or before it starts.
     */
    public void ecnThreshold(int frames) {
        ecnToTap.threshold(frames);
        ecnToFabric.threshold(frames);
    }

    public int ecnThreshold() {
        return ecnToTap.threshold();
    }

    /** The watcher's call: frames wait on the TAP. {@code rearm} tells the watcher to watch again once they are read. */
    public void frameArrived(Runnable rearm) {
        this.rearm = rearm;
        watcherWaits = true;
        readable = true;
    }

    // ---- receiving -------------------------------------------------------------------------

    /** Whether the watcher said frames wait: the loop's look before it sleeps. */
    @Override
    public boolean ready() {
        return readable;
    }

    /** Reads up to {@code limit} frames (at most {@link #BATCH}) when the watcher said some wait, or while busy. */
    @Override
    public int poll(int limit, long now) {
        boolean busy = now - lastFrameAt < BUSY_POLL_NS;
        int n = 0;
        ecnToFabric.roundEnded();
        rxNow = now;
        if (readable || busy) {
            readable = false;
            int max = Math.min(limit, BATCH);
            while (n < max) {
                int len = tap.read(rx, 0, (int) rx.byteSize());
                if (len == 0) {
                    break;
                }
                n++;
                if (len < 0) {
                    inc(GatewayCounter.RX_ERRORS);
                    continue;
                }
                onFrame(len, now);
            }
            if (n > 0) {
                lastFrameAt = now;
            }
            if (n == max) {
                readable = true; // more may wait: read them on the next round
            }
        }
        // The watcher stays idle while the loop reads the TAP itself; it watches again once frames stop.
        if (watcherWaits && !readable && now - lastFrameAt >= BUSY_POLL_NS) {
            watcherWaits = false;
            rearm.run();
        }
        return n;
    }

    /**
     * Writes the TCP segments joined this round, runs ARP's timers; returns now while the loop busy-polls the TAP
     * (for {@link #BUSY_POLL_NS} after a frame: the loop does not sleep meanwhile), else ARP's next deadline.
     */
    @Override
    public long poll(long now) {
        flushCoalesced();
        ecnToTap.roundEnded(); // the timers run once a round, after its sources
        long next = Long.MAX_VALUE;
        if (arp != null) {
            next = arp.poll(now, arpActions);
            publishNeighbors();
        }
        return now - lastFrameAt < BUSY_POLL_NS ? now : next;
    }

    private void onFrame(int len, long now) {
        inc(GatewayCounter.RX_FRAMES);
        add(GatewayCounter.RX_BYTES, len - base);
        EthernetFrame f = rxFrame;
        if (len < base || !f.wrap(rx, base, len - base)) {
            inc(GatewayCounter.DROP_RUNT);
            return;
        }
        long dst = f.destination();
        if (dst != mac && dst != EthernetFrame.BROADCAST) {
            inc(EthernetFrame.isGroup(dst) ? GatewayCounter.DROP_MULTICAST : GatewayCounter.DROP_NOT_FOR_US);
            return;
        }
        if (EthernetFrame.isGroup(f.source())) {
            inc(GatewayCounter.DROP_BAD_SOURCE_MAC);
            return;
        }
        switch (f.etherType()) {
            case EthernetFrame.TYPE_IPV4 -> {
                if (base == 0 || offloaded(f)) {
                    onIpv4(rx, f.payloadOffset(), f.payloadLength());
                }
            }
            case EthernetFrame.TYPE_ARP -> {
                if (primary == null) {
                    onArp(rx, f, now);
                } else {
                    handArpOff(f);
                }
            }
            case EthernetFrame.TYPE_IPV6 -> inc(GatewayCounter.DROP_IPV6);
            case EthernetFrame.TYPE_VLAN, EthernetFrame.TYPE_QINQ -> inc(GatewayCounter.DROP_VLAN);
            default -> inc(GatewayCounter.DROP_ETHERTYPE);
        }
    }

    /**
     * What the virtio-net header of an IPv4 frame asks (virtio 1.2 5.1.6.2.1): a partial checksum is completed in
     * place; a TCP/IPv4 super-frame is cut into segments, each handed on. True when the frame itself goes on.
     */
    private boolean offloaded(EthernetFrame f) {
        int gso = VnetHeader.gsoType(rx, 0);
        if ((gso & ~VnetHeader.GSO_ECN) == VnetHeader.GSO_TCPV4) {
            inc(GatewayCounter.RX_GSO_FRAMES);
            int n = segmenter.segment(rx, f.payloadOffset(), f.payloadLength(), VnetHeader.gsoSize(rx, 0), toIp);
            if (n < 0) {
                inc(GatewayCounter.DROP_BAD_VNET);
            } else {
                add(GatewayCounter.RX_GSO_SEGMENTS, n);
            }
            return false;
        }
        if (gso != VnetHeader.GSO_NONE) {
            inc(GatewayCounter.DROP_BAD_VNET); // UDP or IPv6 segmentation, which the TAP was not offered
            return false;
        }
        if ((VnetHeader.flags(rx, 0) & VnetHeader.NEEDS_CSUM) != 0) {
            // The field holds the pseudo header's sum: the checksum is the sum from csum_start to the end.
            long start = base + VnetHeader.csumStart(rx, 0);
            long field = start + VnetHeader.csumOffset(rx, 0);
            int total = rx.get(EthernetFrame.BE_SHORT, f.payloadOffset() + 2) & 0xFFFF; // not the frame's padding
            long end = f.payloadOffset() + Math.min(f.payloadLength(), total);
            if (start < f.payloadOffset() + Ipv4Header.MIN_HEADER || field + 2 > end) {
                inc(GatewayCounter.DROP_BAD_VNET);
                return false;
            }
            int c = Checksum.finish(Checksum.sum(rx, start, end - start));
            boolean udp = (rx.get(java.lang.foreign.ValueLayout.JAVA_BYTE, f.payloadOffset() + 9) & 0xFF) == 17;
            rx.set(EthernetFrame.BE_SHORT, field, (short) (udp && c == 0 ? 0xFFFF : c)); // RFC 768: 0 means none
            inc(GatewayCounter.RX_CSUM_COMPLETED);
        }
        return true;
    }

    private void onIpv4(MemorySegment m, long offset, int len) {
        if (len > mtu) {
            inc(GatewayCounter.DROP_OVERSIZE);
            return;
        }
        if (len >= Ipv4Header.MIN_HEADER) {
            // Nobody on this side may speak for the fabric or for the gateway (RFC 1812 5.3.7's martians).
            int src = m.get(EthernetFrame.BE_INT, offset + 12);
            if (ip.config().inSubnet(src) || src == address) {
                inc(GatewayCounter.DROP_SPOOFED);
                return;
            }
            int dst = m.get(EthernetFrame.BE_INT, offset + 16);
            if (dst == -1 || dst == (address | ~Route.mask(prefixLength))) {
                inc(GatewayCounter.DROP_BROADCAST); // it would go back out where it came from
                return;
            }
        }
        if (!roceV2(m, offset, len, GatewayCounter.ROCEV2_IN)) {
            return;
        }
        if (ecnToFabric.onDatagram(m, offset, len, rxNow)) {
            inc(GatewayCounter.ECN_MARKED_IN);
        }
        inc(GatewayCounter.IPV4_IN);
        ip.receiveExternal(m, offset, len); // IP validates the rest and counts what it drops
    }

    /** Checks RoCEv2 at the edge (RoceV2Filter) and counts it as {@code passed}; false when it is dropped. */
    private boolean roceV2(MemorySegment s, long offset, int length, GatewayCounter passed) {
        switch (RoceV2Filter.classify(s, offset, length)) {
            case RoceV2Filter.OK -> inc(passed);
            case RoceV2Filter.MALFORMED -> {
                inc(GatewayCounter.DROP_BAD_ROCEV2);
                return false;
            }
            case RoceV2Filter.BAD_ICRC -> {
                inc(GatewayCounter.DROP_BAD_ICRC);
                return false;
            }
            default -> {
            }
        }
        return true;
    }

    private void onArp(MemorySegment m, EthernetFrame f, long now) {
        ArpPacket a = rxArp;
        if (!a.wrap(m, f.payloadOffset(), f.payloadLength())
                || (a.operation() != ArpPacket.REQUEST && a.operation() != ArpPacket.REPLY)) {
            inc(GatewayCounter.DROP_BAD_ARP);
            return;
        }
        boolean request = a.operation() == ArpPacket.REQUEST;
        inc(request ? GatewayCounter.ARP_REQUESTS_IN : GatewayCounter.ARP_REPLIES_IN);
        int spa = a.senderIp();
        long sha = a.senderMac();
        int tpa = a.targetIp();
        if (EthernetFrame.isGroup(sha) || sha == 0) {
            inc(GatewayCounter.DROP_BAD_ARP);
            return;
        }
        // RFC 826: update the sender's entry if there is one, then, if we are the target, add it.
        boolean valid = spa != 0 && onLink(spa) && spa != address;
        boolean merged = valid && arp.learn(spa, sha, now, false, arpActions);
        boolean ours = tpa == address;
        boolean proxied = !ours && fronts(tpa) && spa != tpa;
        if (!ours && !proxied) {
            return;
        }
        if (valid && !merged) {
            arp.learn(spa, sha, now, true, arpActions);
        }
        if (request) {
            writeArp(ArpPacket.REPLY, sha, tpa, sha, spa);
            inc(proxied ? GatewayCounter.PROXY_ARP_REPLIES : GatewayCounter.ARP_REPLIES_OUT);
        }
    }

    /** Whether the gateway answers ARP for {@code address}: a node of the fabric that is there now. */
    private boolean fronts(int address) {
        return ip.config().inSubnet(address) && ip.neighbors().lookup(address) >= 0;
    }

    // ---- sending ---------------------------------------------------------------------------

    @Override
    public int transmit(int nextHop, MemorySegment datagram, long offset, int length, long now) {
        if (!roceV2(datagram, offset, length, GatewayCounter.ROCEV2_OUT)) {
            return SendStatus.OK; // dropped and counted here, as a wire would lose it
        }
        if (ecnToTap.onDatagram(datagram, offset, length, now)) {
            inc(GatewayCounter.ECN_MARKED_OUT);
        }
        if (primary != null) {
            long to = primary.publishedMac(nextHop);
            if (to < 0) {
                return handOff(nextHop, datagram, offset, length); // the primary counts it
            }
            inc(GatewayCounter.IPV4_OUT);
            return sendTo(to, datagram, offset, length);
        }
        inc(GatewayCounter.IPV4_OUT);
        return resolveAndSend(nextHop, datagram, offset, length, now);
    }

    private int sendTo(long to, MemorySegment datagram, long offset, int length) {
        if (coalescer != null && coalesce(to, datagram, offset, length)) {
            return SendStatus.OK;
        }
        return writeFrame(to, EthernetFrame.TYPE_IPV4, datagram, offset, length) ? SendStatus.OK : SendStatus.NO_NEIGHBOR;
    }

    /** The primary's way: its cache's address for {@code nextHop}, or the datagram waits for one. */
    private int resolveAndSend(int nextHop, MemorySegment datagram, long offset, int length, long now) {
        long to = arp.lookup(nextHop, now, arpActions);
        if (to >= 0) {
            return sendTo(to, datagram, offset, length);
        }
        if (arp.enqueue(nextHop, datagram, offset, length, now, arpActions)) {
            return SendStatus.OK; // waits for the next hop's answer; host unreachable goes back if none comes
        }
        inc(GatewayCounter.DROP_ARP_QUEUE_FULL);
        return SendStatus.NO_NEIGHBOR;
    }

    // ---- the queues of one device -----------------------------------------------------------

    /** The MAC address the primary's cache knows for {@code ip}, or -1; any thread. */
    private long publishedMac(int ip) {
        long[] p = published;
        for (int i = 0; i < p.length; i += 2) {
            if ((int) p[i] == ip) {
                return p[i + 1];
            }
        }
        return -1;
    }

    /** The primary publishes what its cache knows when that changed, for the other queues' loops. */
    private void publishNeighbors() {
        if (arp.version() != publishedVersion) {
            publishedVersion = arp.version();
            published = arp.known();
        }
    }

    /**
     * A datagram for a next hop the primary's table does not hold yet goes to the primary's loop (a copy), which
     * resolves it and sends it on its queue. Bounded: past {@link #MAX_HANDED_OFF} waiting, it is dropped.
     */
    private int handOff(int nextHop, MemorySegment datagram, long offset, int length) {
        if (handedOff.incrementAndGet() > MAX_HANDED_OFF) {
            handedOff.decrementAndGet();
            inc(GatewayCounter.DROP_ARP_QUEUE_FULL);
            return SendStatus.NO_NEIGHBOR;
        }
        byte[] copy = datagram.asSlice(offset, length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        primary.ip.link().execute(() -> {
            try {
                primary.inc(GatewayCounter.IPV4_OUT);
                primary.resolveAndSend(nextHop, MemorySegment.ofArray(copy), 0, copy.length, primary.ip.link().now());
            } finally {
                handedOff.decrementAndGet();
            }
        });
        return SendStatus.OK;
    }

    /** ARP that arrived on this queue goes to the primary, which keeps the cache and answers. */
    private void handArpOff(EthernetFrame f) {
        if (handedOff.incrementAndGet() > MAX_HANDED_OFF) {
            handedOff.decrementAndGet();
            inc(GatewayCounter.DROP_BAD_ARP);
            return;
        }
        byte[] copy = rx.asSlice(base, EthernetFrame.HEADER + f.payloadLength()).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        primary.ip.link().execute(() -> {
            try {
                primary.arpFromQueue(copy);
            } finally {
                handedOff.decrementAndGet();
            }
        });
    }

    /** On the primary's loop, outside its reads: an ARP frame another queue took. */
    private void arpFromQueue(byte[] frame) {
        MemorySegment m = MemorySegment.ofArray(frame);
        if (rxFrame.wrap(m, 0, frame.length)) {
            onArp(m, rxFrame, ip.link().now());
            publishNeighbors();
        }
    }

    /** Joins a TCP segment to the run the coalescer holds, or starts one; false when it goes alone, now. */
    private boolean coalesce(long to, MemorySegment datagram, long offset, int length) {
        if (coalescer.extend(to, datagram, offset, length)) {
            return true;
        }
        flushCoalesced();
        if (coalescer.start(to, mac, datagram, offset, length)) {
            // The run goes out when the timers run next; make sure they run on the next round even if it idles.
            Datapath d = ip.link().datapath();
            if (d != null) {
                d.timersChanged();
            }
            return true;
        }
        return false;
    }

    /** Writes the run the coalescer holds, if any: one super-frame, or its one segment as it was. */
    private void flushCoalesced() {
        if (coalescer == null || coalescer.segments() == 0) {
            return;
        }
        int segments = coalescer.segments();
        int length = coalescer.finish();
        if (segments > 1) {
            inc(GatewayCounter.TX_GSO_FRAMES);
            add(GatewayCounter.TX_GSO_SEGMENTS, segments);
        }
        write(coalescer.buffer(), length);
    }

    /** Announces the gateway's address (gratuitous ARP: a request for itself, RFC 5227 2.4). */
    public void announce() {
        writeArp(ArpPacket.REQUEST, EthernetFrame.BROADCAST, address, 0, address);
    }

    private void writeArp(int operation, long frameTo, int senderIp, long targetMac, int targetIp) {
        flushCoalesced(); // what was joined before goes first
        EthernetFrame.writeHeader(tx, base, frameTo, mac, EthernetFrame.TYPE_ARP);
        ArpPacket.write(tx, base + EthernetFrame.HEADER, operation, mac, senderIp, targetMac, targetIp);
        if (operation == ArpPacket.REQUEST) {
            inc(GatewayCounter.ARP_REQUESTS_OUT);
        }
        send(EthernetFrame.HEADER + ArpPacket.LENGTH);
    }

    private boolean writeFrame(long to, int etherType, MemorySegment payload, long offset, int length) {
        flushCoalesced();
        EthernetFrame.writeHeader(tx, base, to, mac, etherType);
        MemorySegment.copy(payload, offset, tx, base + EthernetFrame.HEADER, length);
        return send(EthernetFrame.HEADER + length);
    }

    /** Writes the frame of {@code length} bytes in tx (after its zero virtio-net header, with offloads). */
    private boolean send(int length) {
        return write(tx, base + length);
    }

    private boolean write(MemorySegment buffer, int length) {
        if (!tap.write(buffer, 0, length)) {
            inc(GatewayCounter.DROP_TX_FULL);
            return false;
        }
        inc(GatewayCounter.TX_FRAMES);
        add(GatewayCounter.TX_BYTES, length - base);
        return true;
    }

    private final class ArpActions implements ArpCache.Actions {
        @Override
        public void request(int target) {
            writeArp(ArpPacket.REQUEST, EthernetFrame.BROADCAST, address, 0, target);
        }

        @Override
        public void send(long to, MemorySegment datagram, long offset, int length) {
            writeFrame(to, EthernetFrame.TYPE_IPV4, datagram, offset, length);
        }

        @Override
        public void unresolved(int target, MemorySegment datagram, long offset, int length) {
            inc(GatewayCounter.DROP_UNRESOLVED);
            ip.hostUnreachable(datagram, offset, length);
        }
    }

    // ---- counters --------------------------------------------------------------------------

    private void inc(GatewayCounter c) {
        add(c, 1);
    }

    private void add(GatewayCounter c, long delta) {
        int i = c.ordinal();
        LONGS.setOpaque(counts, i, (long) LONGS.getOpaque(counts, i) + delta);
    }

    /** One counter; readable from any thread. */
    public long counter(GatewayCounter c) {
        return (long) LONGS.getOpaque(counts, c.ordinal());
    }

    public Map<GatewayCounter, Long> counters() {
        Map<GatewayCounter, Long> m = new EnumMap<>(GatewayCounter.class);
        for (GatewayCounter c : ALL) {
            m.put(c, counter(c));
        }
        return m;
    }

    /** The ARP entry for {@code address} as text, for tools; null when there is none. On the loop. */
    public String neighbor(int address) {
        return primary != null ? primary.neighbor(address) : arp.describe(address);
    }

    @Override
    public String toString() {
        return name + (tap.queue() > 0 ? " queue " + tap.queue() : "") + " " + Ipv4Address.toString(address) + "/" + prefixLength + " "
                + EthernetFrame.macToString(mac) + " mtu " + mtu;
    }
}
