package dev.nupa.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

import org.HdrHistogram.Histogram;

import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.UdpHeader;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.LinkClaim;
import dev.nupa.l2.Link;
import dev.nupa.l2.RingPolicy;
import dev.nupa.l2.ServiceLevels;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf qos`: a UDP ping-pong at a high DSCP while a bulk UDP stream at a low DSCP fills the same receiver, on a
 * fabric of two rings per node (docs/link-layer.md, "Service levels"). In turns within one run: the ping-pong alone
 * (idle), with the bulk stream on one shared ring (the client maps every level to ring 0), and with the bulk stream on
 * its own ring (the default map: the ping's level on ring 1). The client's one thread sends the pings and the bulk
 * datagrams: before each ping it fills the receiver's bulk ring until it pushes back (up to 1024 tries), and keeps it
 * full while it waits for the pong, so two threads run on two CPUs. Bulk datagrams are written in place, headers only
 * (a zero-copy sender), and the receiver copies each one out of the ring, as a socket's read would, so the receiver is
 * the slower side and its bulk ring is mostly full when a ping arrives (the client prints how many fills ended full).
 * The payload bytes are never written, so the bulk rate is one of datagrams, not a bandwidth. With {@code --rdma} the
 * ping-pong (SENDs) and the bulk stream (RDMA WRITEs) are RC queue pairs at service levels {@code --sl} and
 * {@code --bulk-sl} instead ({@link QosRdma}), the WRITEs from {@code --bulk-senders} threads of their own, on a fabric of
 * four rings per node (the default map puts SL 7 on ring 1, SL 0 on ring 0).
 */
@Command(name = "qos", mixinStandardHelpOptions = true,
        description = {"UDP ping-pong at a high DSCP beside a bulk stream at a low DSCP into the same receiver: idle,",
                "on one shared ring and on separate rings (service levels), in turns of one run; --rdma: RC queue pairs",
                "(a SEND ping-pong at SL --sl, RDMA WRITEs at SL --bulk-sl) instead of datagrams."})
final class QosPerf implements Callable<Integer> {
    static final int ECHO_PORT = 7;
    static final int SINK_PORT = 9;
    static final int CONTROL_PORT = 10;
    private static final byte HELLO = 1;
    private static final byte BYE = 3;
    private static final int RINGS = 2;
    private static final int RDMA_RINGS = 4;
    /** Window space a node of the --rdma test takes at most: its region and its verbs' directory and guard. */
    private static final long MAX_BULK_WINDOW = QosRdma.MAX_BULK + (1L << 20);
    /** Bulk datagrams tried at most before a ping: a ring's slots and more, so a receiver that keeps up does not hold the ping back for ever. */
    private static final int FILL_TRIES = 1024;
    private static final String[] PHASES = {"idle", "shared ring", "separate rings"};

    @Mixin
    PerfOptions o;

    @Option(names = "--dscp", paramLabel = "DSCP", defaultValue = "46", description = "DSCP of the ping-pong (default: ${DEFAULT-VALUE}, EF).")
    int dscp;

    @Option(names = "--bulk-dscp", paramLabel = "DSCP", defaultValue = "0", description = "DSCP of the bulk stream (default: ${DEFAULT-VALUE}).")
    int bulkDscp;

    @Option(names = "--bulk-size", paramLabel = "BYTES",
            description = "Bytes of each bulk datagram's UDP payload, 8..8972 (default 1472), or with --rdma of each bulk WRITE,"
                    + " 1.." + QosRdma.MAX_BULK + " (default " + QosRdma.DEFAULT_BULK + ").")
    Integer bulkSizeOption;

    private int bulkSize;

    @Option(names = "--ring-policy", paramLabel = "W0,W1[/BURST]", defaultValue = "default",
            description = "How the receiver serves its two rings: weights of first turns and the lower ring's burst (default: ${DEFAULT-VALUE}, 1,7/"
                    + RingPolicy.DEFAULT_BURST + ").")
    String ringPolicy;

    @Option(names = "--rdma", description = "RC queue pairs instead of UDP: a SEND ping-pong at --sl beside RDMA WRITEs of"
            + " --bulk-size bytes at --bulk-sl.")
    boolean rdma;

    @Option(names = "--sl", paramLabel = "SL", defaultValue = "7", description = "With --rdma: the ping-pong QP's service level (default: ${DEFAULT-VALUE}).")
    int sl;

    @Option(names = "--bulk-sl", paramLabel = "SL", defaultValue = "0", description = "With --rdma: the bulk QP's service level (default: ${DEFAULT-VALUE}).")
    int bulkSl;

    @Option(names = "--bulk-senders", paramLabel = "N", defaultValue = "2",
            description = "With --rdma: bulk senders, each a node and thread of the client process (default: ${DEFAULT-VALUE}).")
    int senders;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "20000", description = "Unmeasured round trips first, each phase (default: ${DEFAULT-VALUE}).")
    long warmup;

    private Ipv4Stack stack;
    private Link link;
    private final MemorySegment control = Arena.ofAuto().allocate(128);
    private boolean done;
    private long bulkReceived;
    private long expected = -1;
    private boolean answered;
    private boolean helloAnswered;
    private long bulkSent;
    private long fills;
    private long fillFrames;
    private long fullFills;
    private final LinkClaim bulkClaim = new LinkClaim();
    private final Ipv4Header bulkIp = new Ipv4Header();
    private final UdpHeader bulkUdp = new UdpHeader();
    private int bulkFrom;
    private int bulkTo;
    private int bulkPort;
    private QosRdma rdmaSide;
    /** With --rdma, the client's bulk senders (each a node and thread of its own). */
    private List<QosRdma.Bulk> bulk;

    @Override
    public Integer call() throws Exception {
        o.validate(8, 1400);
        if (dscp < 0 || dscp > 63 || bulkDscp < 0 || bulkDscp > 63) {
            throw new IllegalArgumentException("--dscp and --bulk-dscp are DSCPs, 0..63 (RFC 2474)");
        }
        bulkSize = bulkSizeOption != null ? bulkSizeOption : rdma ? QosRdma.DEFAULT_BULK : 1472;
        if (rdma && (bulkSize < 1 || bulkSize > QosRdma.MAX_BULK)) {
            throw new IllegalArgumentException("--bulk-size " + bulkSize + " is outside 1.." + QosRdma.MAX_BULK + " for --rdma");
        }
        if (!rdma && (bulkSize < 8 || bulkSize > 8972)) {
            throw new IllegalArgumentException("--bulk-size " + bulkSize + " is outside 8..8972 (one fabric frame of the 9000-byte MTU)");
        }
        if (senders < 1 || senders > QosRdma.MAX_SENDERS) {
            throw new IllegalArgumentException("--bulk-senders " + senders + " is outside 1.." + QosRdma.MAX_SENDERS);
        }
        if (sl < 0 || sl > 15 || bulkSl < 0 || bulkSl > 15) {
            throw new IllegalArgumentException("--sl and --bulk-sl are service levels, 0..15 (IBA 7.6.5)");
        }
        RingPolicy.parse(ringPolicy, rings()); // a bad policy fails here, before any process starts
        int size = o.size != null ? o.size : 64;
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client(size, o.iterations != null ? o.iterations : 100_000);
        }
        List<String> args = new java.util.ArrayList<>(List.of("--warmup", Long.toString(warmup), "--dscp", Integer.toString(dscp),
                "--bulk-dscp", Integer.toString(bulkDscp), "--bulk-size", Integer.toString(bulkSize), "--ring-policy", ringPolicy,
                "--sl", Integer.toString(sl), "--bulk-sl", Integer.toString(bulkSl), "--bulk-senders", Integer.toString(senders)));
        if (rdma) {
            args.add("--rdma");
        }
        var geometry = o.freshGeometry(size, 256).withRingsPerNode(rings());
        if (rdma) { // room for the bulk senders' nodes, and for every node's verbs windows (directory, guard, region)
            geometry = geometry.withMaxNodes(Math.max(geometry.maxNodes(), Math.max(o.serverAddress, o.clientAddress) + 1 + senders))
                    .withWindows(8 * (senders + 2), (long) (senders + 2) * (2L * MAX_BULK_WINDOW));
        }
        return PerfRunner.runBoth(o, "qos", geometry, args);
    }

    /** The bulk senders' nodes with --rdma: the lowest addresses of the fabric that are neither the server's nor ours. */
    private int[] bulkAddresses(int maxNodes) {
        int[] a = new int[senders];
        int n = 0;
        for (int address = 0; address < maxNodes && n < senders; address++) {
            if (address != o.serverAddress && address != o.clientAddress) {
                a[n++] = address;
            }
        }
        if (n < senders) {
            throw new IllegalArgumentException("qos --rdma needs " + senders + " more node addresses on the fabric for its bulk senders;"
                    + " it has " + maxNodes + " (give no role for a fresh fabric, or fewer --bulk-senders)");
        }
        return a;
    }

    private int rings() {
        return rdma ? RDMA_RINGS : RINGS;
    }

    /** The ping-pong's level and the bulk stream's: service levels with --rdma, else their DSCPs' levels. */
    private int pingLevel() {
        return rdma ? sl : stack.dscpLevels().level(dscp << 2);
    }

    private int bulkLevel() {
        return rdma ? bulkSl : stack.dscpLevels().level(bulkDscp << 2);
    }

    private PerfNode node(boolean server) {
        PerfNode pn = new PerfNode(o, server, false);
        if (pn.link.rings() < rings()) {
            pn.close();
            throw new IllegalArgumentException("qos needs a fabric of at least " + rings() + " rings per node; " + o.fabric + " has "
                    + pn.link.rings() + " (nupa fabric create --rings " + rings() + ", or give no role for a fresh one)");
        }
        if (rdma) {
            rdmaSide = new QosRdma(pn, o.size != null ? o.size : 64, bulkSize, server ? senders : 0);
        }
        return pn;
    }

    private int server() {
        try (PerfNode pn = node(true)) {
            stack = pn.ip;
            link = pn.link;
            link.setRingPolicy(RingPolicy.parse(ringPolicy, link.rings()));
            int tos = dscp << 2;
            stack.bindUdp(ECHO_PORT, (src, srcPort, dst, mem, off, len) -> stack.sendUdp(ECHO_PORT, src, srcPort, mem, off, len,
                    1_000_000_000L, tos));
            MemorySegment sink = Arena.ofAuto().allocate(65_536, 64);
            stack.bindUdp(SINK_PORT, (src, srcPort, dst, mem, off, len) -> {
                MemorySegment.copy(mem, off, sink, 0, len); // the bulk receiver takes its data out, as a socket's read would
                bulkReceived++;
            });
            stack.bindUdp(CONTROL_PORT, (src, srcPort, dst, mem, off, len) -> {
                byte op = len > 0 ? mem.get(ValueLayout.JAVA_BYTE, off) : 0;
                if (op == HELLO && rdmaSide != null) {
                    if (!helloAnswered) { // a repeated HELLO gets the same answer, the QPs connected once
                        rdmaSide.connectServer(o.clientAddress, mem, off, len, sl, bulkSl);
                        helloAnswered = true;
                    }
                    stack.sendUdp(CONTROL_PORT, src, srcPort, control, 0, rdmaSide.answer(control));
                } else if (op == HELLO) {
                    stack.sendUdp(CONTROL_PORT, src, srcPort, control, 0, 1);
                } else if (op == BYE) {
                    done = true;
                }
            });
            System.out.println(PerfRunner.READY);
            System.out.flush();
            while (!done) {
                long now = System.nanoTime();
                pn.link.poll(16, now); // no PAUSE when idle: the phases with bulk never idle, so the idle phase must not pay one either
                if (rdmaSide != null) {
                    rdmaSide.poll(now);
                    rdmaSide.serve();
                }
            }
            if (rdmaSide != null) {
                rdmaSide.close();
            }
            List<Long> rings = link.counters().ringFrames();
            System.out.println("qos server: frames per receive ring " + rings
                    + (rdmaSide != null ? "" : ", bulk datagrams received " + bulkReceived));
        }
        return 0;
    }

    private int client(int size, long iterations) {
        try (PerfNode pn = node(false)) {
            stack = pn.ip;
            link = pn.link;
            int server = IpConfig.fabricPlan(o.serverAddress).address();
            int port = stack.bindUdp(0, (src, srcPort, dst, mem, off, len) -> {
                if (srcPort == CONTROL_PORT && rdmaSide != null && !helloAnswered && len >= 21 + 4 * bulk.size()) {
                    rdmaSide.connectPing(o.serverAddress, mem, off, sl);
                    byte[] answer = mem.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE);
                    bulk.forEach(b -> b.answered(answer));
                    helloAnswered = true;
                } else if (srcPort == CONTROL_PORT) {
                    helloAnswered = true;
                } else if (len >= 8 && mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
                    answered = true;
                }
            });
            if (rdma) {
                int[] addresses = bulkAddresses(pn.node.fabric().geometry().maxNodes());
                bulk = new java.util.ArrayList<>();
                for (int i = 0; i < senders; i++) {
                    bulk.add(new QosRdma.Bulk(o, i, addresses[i], size, bulkSize, bulkSl));
                }
            }
            hello(server, port);
            bulkFrom = pn.ip.address();
            bulkTo = server;
            bulkPort = port;
            ServiceLevels shared = ServiceLevels.shared(link.rings());
            ServiceLevels separate = ServiceLevels.defaults(link.rings());
            int pingRing = separate.ring(pingLevel());
            int bulkRing = separate.ring(bulkLevel());
            if (pingRing == bulkRing) {
                throw new IllegalArgumentException(rdma ? "SL " + sl + " and bulk SL " + bulkSl + " take the same ring (" + pingRing
                        + ") of " + link.rings() + " by default; give them levels in different quarters of 0..15"
                        : "DSCP " + dscp + " and bulk DSCP " + bulkDscp + " take the same ring (" + pingRing
                        + ") by default; give the ping a DSCP of 32 or more and the bulk one below 32");
            }
            MemorySegment payload = Arena.ofAuto().allocate(size, 64);
            long seq = 0;
            long warm = Math.min(warmup, iterations);
            ServiceLevels[] maps = {separate, shared, separate};
            for (int phase = 0; phase < 3; phase++) {
                startPhase(maps[phase], phase > 0);
                seq = rounds(server, port, payload, size, phase > 0, seq, warm, null);
            }
            PerfReport report = o.report("qos");
            Turns turns = new Turns(3, iterations).observe(report, o.progress("qos", iterations), "idle", "shared", "separate");
            long[] bulkCount = new long[3]; // bulk datagrams the receiver's ring took, per phase
            long[] phaseNs = new long[3];
            for (int t = 0; t < turns.count(); t++) {
                long n = turns.length(t);
                for (int phase = 0; phase < 3; phase++) {
                    startPhase(maps[phase], phase > 0);
                    long b0 = bulkSent();
                    long t0 = System.nanoTime();
                    seq = rounds(server, port, payload, size, phase > 0, seq, n, turns.turn(phase));
                    phaseNs[phase] += System.nanoTime() - t0;
                    bulkCount[phase] += bulkSent() - b0;
                }
                turns.endTurn();
            }
            if (bulk != null) { // the senders stop before the server goes: WRITEs to a node that left would fail
                bulk.forEach(QosRdma.Bulk::close);
            }
            control.set(ValueLayout.JAVA_BYTE, 0, BYE);
            link.setServiceLevels(separate);
            stack.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            if (rdmaSide != null) {
                rdmaSide.close();
                System.out.printf(Locale.ROOT, "qos: RC SEND round trip, %d bytes at SL %d (ring %d), beside RDMA WRITEs of %d bytes"
                        + " at SL %d (ring %d); receiver's ring policy %s; fabric %s%n", size, sl, pingRing, bulkSize, bulkSl, bulkRing,
                        RingPolicy.parse(ringPolicy, link.rings()), o.fabric);
            } else {
                System.out.printf(Locale.ROOT, "qos: UDP echo round trip, %d-byte payload at DSCP %d (ring %d), beside bulk %d-byte datagrams"
                        + " at DSCP %d (ring %d); receiver's ring policy %s; fabric %s%n", size, dscp, pingRing, bulkSize, bulkDscp, bulkRing,
                        RingPolicy.parse(ringPolicy, link.rings()), o.fabric);
            }
            System.out.printf("%-15s %s %10s %12s%n", "phase", LatencyStats.header(), "p50/idle", rdma ? "bulk[Mwr/s]" : "bulk[Mdg/s]");
            StringBuilder json = new StringBuilder();
            for (int phase = 0; phase < 3; phase++) {
                LatencyStats s = LatencyStats.of(turns.pooled(phase));
                double ratio = turns.ratio(phase, 0);
                double mdgps = phaseNs[phase] == 0 ? 0 : bulkCount[phase] * 1000.0 / phaseNs[phase];
                System.out.printf(Locale.ROOT, "%-15s %s %10.2f %12.2f%n", PHASES[phase], s.row(size), ratio, mdgps);
                json.append(String.format(Locale.ROOT, "%s\"%s\":{%s,\"p50_ratio_to_idle\":%s,\"bulk_million_%s_per_s\":%s}",
                        phase == 0 ? "" : ",", new String[] {"idle", "shared", "separate"}[phase], s.json(), JsonNumber.of(ratio, 3),
                        rdma ? "writes" : "datagrams", JsonNumber.of(mdgps, 3)));
            }
            if (rdma) {
                System.out.printf(Locale.ROOT, "bulk WRITEs posted by %d senders (nodes %s, %d kept outstanding each): %d%n",
                        senders, bulk.stream().map(b -> Integer.toString(b.address)).toList(), QosRdma.BULK_DEPTH, bulkSent());
            } else {
                System.out.printf(Locale.ROOT, "fills before a ping: %d, %.1f bulk datagrams each on average, %d ended with the ring full%n",
                        fills, fillFrames / (double) Math.max(1, fills), fullFills);
            }
            System.out.println("p50/idle: the median over " + turns.count() + " turns of the phase's p50 over the idle p50 of the same turn");
            if (o.json) {
                // The two ratios at the top level as well: the suite reads its figures there.
                String levels = rdma ? String.format(Locale.ROOT, "\"transport\":\"rdma\",\"sl\":%d,\"bulk_sl\":%d", sl, bulkSl)
                        : String.format(Locale.ROOT, "\"transport\":\"udp\",\"dscp\":%d,\"bulk_dscp\":%d", dscp, bulkDscp);
                System.out.printf(Locale.ROOT, "{\"test\":\"qos\",\"bytes\":%d,\"bulk_bytes\":%d,%s,%s,\"turns\":%d,"
                        + "\"separate_ratio\":%s,\"shared_ratio\":%s}%n",
                        size, bulkSize, levels, json, turns.count(), JsonNumber.of(turns.ratio(2, 0), 4),
                        JsonNumber.of(turns.ratio(1, 0), 4));
            }
        }
        return 0;
    }

    /**
     * One bulk datagram, written in place into the receiver's ring as a zero-copy sender writes it: the IPv4 and UDP
     * headers only (UDP checksum 0, "none", RFC 768), the payload left as the slot holds it. So the sender outruns the
     * receiver, which copies each payload out, and the bulk ring stays full. False when the ring pushes back.
     */
    private boolean sendBulk() {
        int total = Ipv4Header.MIN_HEADER + UdpHeader.HEADER + bulkSize;
        if (link.tryClaim(o.serverAddress, EtherType.IPV4, total, stack.dscpLevels().level(bulkDscp << 2), bulkClaim) != SendStatus.OK) {
            return false;
        }
        MemorySegment m = bulkClaim.memory();
        long at = bulkClaim.payloadOffset();
        bulkIp.wrapForWrite(m, at, total);
        bulkIp.emit(bulkDscp << 2, total, 0, Ipv4Header.flagsWord(true, false, 0), 64, Ipv4Header.PROTOCOL_UDP, bulkFrom, bulkTo);
        bulkUdp.wrapForWrite(m, at + Ipv4Header.MIN_HEADER, UdpHeader.HEADER);
        bulkUdp.emit(bulkPort, SINK_PORT, UdpHeader.HEADER + bulkSize, 0);
        return bulkClaim.publish() == SendStatus.OK;
    }

    private void hello(int server, int port) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        control.set(ValueLayout.JAVA_BYTE, 0, HELLO);
        int length = 1;
        if (rdmaSide != null) {
            int[] qpns = new int[bulk.size()];
            int[] nodes = new int[bulk.size()];
            for (int i = 0; i < qpns.length; i++) {
                try {
                    qpns[i] = bulk.get(i).opened.get(60, java.util.concurrent.TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException("qos --rdma: bulk sender " + i + "'s node did not open: "
                            + (e.getCause() != null ? e.getCause().getMessage() : e), e);
                }
                nodes[i] = bulk.get(i).address;
            }
            length = rdmaSide.hello(control, qpns, nodes);
        }
        while (!helloAnswered) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no qos server at node " + o.serverAddress + " of " + o.fabric
                        + " after 30 s; start one with --server");
            }
            stack.sendUdp(port, server, CONTROL_PORT, control, 0, length);
            long until = System.nanoTime() + 10_000_000L;
            while (!helloAnswered && System.nanoTime() < until) {
                link.poll(16, System.nanoTime());
            }
        }
    }

    private long rounds(int server, int port, MemorySegment payload, int size, boolean withBulk, long seq, long n,
                        Histogram h) {
        for (long i = 0; i < n; i++, seq++) {
            long t = round(server, port, payload, size, withBulk, seq);
            if (h != null) {
                h.recordValue(t);
            }
        }
        return seq;
    }

    /**
     * One timed round trip. With bulk, the receiver's ring is filled first (bulk datagrams until it pushes back, untimed),
     * and kept full while the pong is awaited: the bulk stream the receiver sees is as fast as it can take it.
     */
    private long round(int server, int port, MemorySegment payload, int size, boolean withBulk, long seq) {
        if (rdmaSide != null) {
            return rdmaRound();
        }
        int i = 0;
        for (; withBulk && i < FILL_TRIES && sendBulk(); i++) {
            bulkSent++;
        }
        if (withBulk) {
            fills++;
            fillFrames += i;
            fullFills += i < FILL_TRIES ? 1 : 0;
        }
        payload.set(ValueLayout.JAVA_LONG, 0, seq);
        expected = seq;
        answered = false;
        long t0 = System.nanoTime();
        int rc = stack.sendUdp(port, server, ECHO_PORT, payload, 0, size, 1_000_000_000L, dscp << 2);
        if (rc != SendStatus.OK) {
            throw new IllegalStateException("UDP send failed: " + SendStatus.describe(rc));
        }
        for (int looks = 0; !answered; looks++) {
            if (withBulk && sendBulk()) {
                bulkSent++;
            }
            link.poll(16, (looks & 15) == 0 ? System.nanoTime() : link.now()); // no PAUSE in any phase, as the server
        }
        return System.nanoTime() - t0;
    }

    /** One timed RDMA round trip: a SEND, its answer awaited; the bulk sender's thread keeps its stream going meanwhile. */
    private long rdmaRound() {
        long t0 = System.nanoTime();
        rdmaSide.postPing();
        boolean pong = false;
        for (int looks = 0; !pong; looks++) {
            long now = (looks & 15) == 0 ? System.nanoTime() : link.now();
            link.poll(16, now);
            rdmaSide.poll(now);
            pong = rdmaSide.pong();
        }
        return System.nanoTime() - t0;
    }

    /**
     * A phase's service levels, and with --rdma the bulk sender on or off: on, the phase starts once it has posted a
     * full queue of WRITEs more (the receiver's ring is full by then, as the UDP test fills it before each ping).
     */
    private void startPhase(ServiceLevels levels, boolean withBulk) {
        link.setServiceLevels(levels);
        if (bulk == null) {
            return;
        }
        bulk.forEach(b -> b.on = withBulk);
        long from = bulkSent();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (withBulk && bulkSent() - from < (long) QosRdma.BULK_DEPTH * senders) {
            long now = System.nanoTime();
            if (now > deadline) {
                throw new IllegalStateException("qos --rdma: the bulk senders posted " + (bulkSent() - from) + " WRITEs in 10 s");
            }
            link.poll(16, now);
            rdmaSide.poll(now);
        }
    }

    private long bulkSent() {
        if (bulk == null) {
            return bulkSent;
        }
        long n = 0;
        for (QosRdma.Bulk b : bulk) {
            n += b.posted;
        }
        return n;
    }
}
