package dev.nupa.perf;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

import org.HdrHistogram.Histogram;

import dev.nupa.ip.DscpLevels;
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
 * The payload bytes are never written, so the bulk rate is one of datagrams, not a bandwidth.
 */
@Command(name = "qos", mixinStandardHelpOptions = true,
        description = {"UDP ping-pong at a high DSCP beside a bulk stream at a low DSCP into the same receiver: idle,",
                "on one shared ring and on separate rings (service levels), in turns of one run."})
final class QosPerf implements Callable<Integer> {
    static final int ECHO_PORT = 7;
    static final int SINK_PORT = 9;
    static final int CONTROL_PORT = 10;
    private static final byte HELLO = 1;
    private static final byte BYE = 3;
    private static final int RINGS = 2;
    /** Bulk datagrams tried at most before a ping: a ring's slots and more, so a receiver that keeps up does not hold the ping back for ever. */
    private static final int FILL_TRIES = 1024;
    private static final String[] PHASES = {"idle", "shared ring", "separate rings"};

    @Mixin
    PerfOptions o;

    @Option(names = "--dscp", paramLabel = "DSCP", defaultValue = "46", description = "DSCP of the ping-pong (default: ${DEFAULT-VALUE}, EF).")
    int dscp;

    @Option(names = "--bulk-dscp", paramLabel = "DSCP", defaultValue = "0", description = "DSCP of the bulk stream (default: ${DEFAULT-VALUE}).")
    int bulkDscp;

    @Option(names = "--bulk-size", paramLabel = "BYTES", defaultValue = "1472", description = "UDP payload of each bulk datagram (default: ${DEFAULT-VALUE}).")
    int bulkSize;

    @Option(names = "--ring-policy", paramLabel = "W0,W1[/BURST]", defaultValue = "default",
            description = "How the receiver serves its two rings: weights of first turns and the lower ring's burst (default: ${DEFAULT-VALUE}, 1,7/"
                    + RingPolicy.DEFAULT_BURST + ").")
    String ringPolicy;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "20000", description = "Unmeasured round trips first, each phase (default: ${DEFAULT-VALUE}).")
    long warmup;

    private Ipv4Stack stack;
    private Link link;
    private final MemorySegment control = Arena.ofAuto().allocate(32);
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

    @Override
    public Integer call() throws Exception {
        o.validate(8, 1400);
        if (dscp < 0 || dscp > 63 || bulkDscp < 0 || bulkDscp > 63) {
            throw new IllegalArgumentException("--dscp and --bulk-dscp are DSCPs, 0..63 (RFC 2474)");
        }
        if (bulkSize < 8 || bulkSize > 8972) {
            throw new IllegalArgumentException("--bulk-size " + bulkSize + " is outside 8..8972 (one fabric frame of the 9000-byte MTU)");
        }
        RingPolicy.parse(ringPolicy, RINGS); // a bad policy fails here, before any process starts
        int size = o.size != null ? o.size : 64;
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client(size, o.iterations != null ? o.iterations : 100_000);
        }
        return PerfRunner.runBoth(o, "qos", o.freshGeometry(size, 256).withRingsPerNode(RINGS),
                List.of("--warmup", Long.toString(warmup), "--dscp", Integer.toString(dscp), "--bulk-dscp", Integer.toString(bulkDscp),
                        "--bulk-size", Integer.toString(bulkSize), "--ring-policy", ringPolicy));
    }

    private PerfNode node(boolean server) {
        PerfNode pn = new PerfNode(o, server, false);
        if (pn.link.rings() < RINGS) {
            pn.close();
            throw new IllegalArgumentException("qos needs a fabric of at least " + RINGS + " rings per node; " + o.fabric + " has "
                    + pn.link.rings() + " (nupa fabric create --rings " + RINGS + ", or give no role for a fresh one)");
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
                if (op == HELLO) {
                    stack.sendUdp(CONTROL_PORT, src, srcPort, control, 0, 1);
                } else if (op == BYE) {
                    done = true;
                }
            });
            System.out.println(PerfRunner.READY);
            System.out.flush();
            while (!done) {
                pn.poll(); // no PAUSE when idle: the phases with bulk never idle, so the idle phase must not pay one either
            }
            List<Long> rings = link.counters().ringFrames();
            System.out.println("qos server: frames per receive ring " + rings + ", bulk datagrams received " + bulkReceived);
        }
        return 0;
    }

    private int client(int size, long iterations) {
        try (PerfNode pn = node(false)) {
            stack = pn.ip;
            link = pn.link;
            int server = IpConfig.fabricPlan(o.serverAddress).address();
            int port = stack.bindUdp(0, (src, srcPort, dst, mem, off, len) -> {
                if (srcPort == CONTROL_PORT) {
                    helloAnswered = true;
                } else if (len >= 8 && mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
                    answered = true;
                }
            });
            hello(server, port);
            bulkFrom = pn.ip.address();
            bulkTo = server;
            bulkPort = port;
            ServiceLevels shared = ServiceLevels.shared(link.rings());
            ServiceLevels separate = ServiceLevels.defaults(link.rings());
            DscpLevels levels = stack.dscpLevels();
            int pingRing = separate.ring(levels.level(dscp << 2));
            int bulkRing = separate.ring(levels.level(bulkDscp << 2));
            if (pingRing == bulkRing) {
                throw new IllegalArgumentException("DSCP " + dscp + " and bulk DSCP " + bulkDscp + " take the same ring (" + pingRing
                        + ") by default; give the ping a DSCP of 32 or more and the bulk one below 32");
            }
            MemorySegment payload = Arena.ofAuto().allocate(size, 64);
            long seq = 0;
            long warm = Math.min(warmup, iterations);
            ServiceLevels[] maps = {separate, shared, separate};
            for (int phase = 0; phase < 3; phase++) {
                link.setServiceLevels(maps[phase]);
                seq = rounds(server, port, payload, size, phase > 0, seq, warm, null);
            }
            PerfReport report = o.report("qos");
            Turns turns = new Turns(3, iterations).observe(report, o.progress("qos", iterations), "idle", "shared", "separate");
            long[] bulkCount = new long[3]; // bulk datagrams the receiver's ring took, per phase
            long[] phaseNs = new long[3];
            for (int t = 0; t < turns.count(); t++) {
                long n = turns.length(t);
                for (int phase = 0; phase < 3; phase++) {
                    link.setServiceLevels(maps[phase]);
                    long b0 = bulkSent;
                    long t0 = System.nanoTime();
                    seq = rounds(server, port, payload, size, phase > 0, seq, n, turns.turn(phase));
                    phaseNs[phase] += System.nanoTime() - t0;
                    bulkCount[phase] += bulkSent - b0;
                }
                turns.endTurn();
            }
            control.set(ValueLayout.JAVA_BYTE, 0, BYE);
            link.setServiceLevels(separate);
            stack.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            System.out.printf(Locale.ROOT, "qos: UDP echo round trip, %d-byte payload at DSCP %d (ring %d), beside bulk %d-byte datagrams"
                    + " at DSCP %d (ring %d); receiver's ring policy %s; fabric %s%n", size, dscp, pingRing, bulkSize, bulkDscp, bulkRing,
                    RingPolicy.parse(ringPolicy, RINGS), o.fabric);
            System.out.printf("%-15s %s %10s %12s%n", "phase", LatencyStats.header(), "p50/idle", "bulk[Mdg/s]");
            StringBuilder json = new StringBuilder();
            for (int phase = 0; phase < 3; phase++) {
                LatencyStats s = LatencyStats.of(turns.pooled(phase));
                double ratio = turns.ratio(phase, 0);
                double mdgps = phaseNs[phase] == 0 ? 0 : bulkCount[phase] * 1000.0 / phaseNs[phase];
                System.out.printf(Locale.ROOT, "%-15s %s %10.2f %12.2f%n", PHASES[phase], s.row(size), ratio, mdgps);
                json.append(String.format(Locale.ROOT, "%s\"%s\":{%s,\"p50_ratio_to_idle\":%.3f,\"bulk_million_datagrams_per_s\":%.3f}",
                        phase == 0 ? "" : ",", new String[] {"idle", "shared", "separate"}[phase], s.json(), ratio, mdgps));
            }
            System.out.printf(Locale.ROOT, "fills before a ping: %d, %.1f bulk datagrams each on average, %d ended with the ring full%n",
                    fills, fillFrames / (double) Math.max(1, fills), fullFills);
            System.out.println("p50/idle: the median over " + turns.count() + " turns of the phase's p50 over the idle p50 of the same turn");
            if (o.json) {
                // The two ratios at the top level as well: the suite reads its figures there.
                System.out.printf(Locale.ROOT, "{\"test\":\"qos\",\"bytes\":%d,\"bulk_bytes\":%d,\"dscp\":%d,\"bulk_dscp\":%d,%s,\"turns\":%d,"
                        + "\"separate_ratio\":%.4f,\"shared_ratio\":%.4f}%n",
                        size, bulkSize, dscp, bulkDscp, json, turns.count(), turns.ratio(2, 0), turns.ratio(1, 0));
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
        while (!helloAnswered) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no qos server at node " + o.serverAddress + " of " + o.fabric
                        + " after 30 s; start one with --server");
            }
            stack.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
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
}
