package dev.nupa.perf;

import dev.nupa.ip.IpConfig;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

import org.HdrHistogram.Histogram;

import dev.nupa.device.FabricNode;
import dev.nupa.device.FabricWindow;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.UdpReceiver;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf udp-lat` and `nupa perf icmp-lat`: UDP echo (or ICMP echo, as `ping -A` sends them back
 * to back) round trips between two processes over the fabric, beside the peer
 * measured in the same run by the same two processes: Linux UDP over loopback with busy-polling
 * non-blocking sockets, and the floor: one cache line bounced through a fabric window. Each side runs its stack on its own thread with no datapath thread (the
 * sans-IO stack is polled in line), so neither side hops threads; rounds of ours and the peer's
 * alternate so drift hits both alike. Round trips are reported whole (not halved).
 */
abstract class IpLatency implements Callable<Integer> {
    @Command(name = "udp-lat", mixinStandardHelpOptions = true,
            description = "UDP echo round trip over the fabric, beside Linux UDP over loopback (busy-polling) and the cache-line floor.")
    static final class Udp extends IpLatency {
        Udp() {
            super("udp-lat", false);
        }
    }

    @Command(name = "icmp-lat", mixinStandardHelpOptions = true,
            description = "ICMP echo round trip over the fabric, back to back as `ping -A`, beside the cache-line floor.")
    static final class Icmp extends IpLatency {
        Icmp() {
            super("icmp-lat", true);
        }
    }

    private final String name;
    private final boolean icmp;
    private PerfTrace trace;

    IpLatency(String name, boolean icmp) {
        this.name = name;
        this.icmp = icmp;
    }

    static final int ECHO_PORT = 7;
    static final int CONTROL_PORT = 9;
    static final int ECHO_ID = 0x4e50;
    private static final byte HELLO = 1;
    private static final byte LINUX = 2;
    private static final byte BYE = 3;
    private static final byte FLOOR = 4;

    @Mixin
    PerfOptions o;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "20000",
            description = "Unmeasured round trips of each kind first, in turns as the measured ones (default: ${DEFAULT-VALUE}).")
    long warmup;

    @Option(names = "--checksums", paramLabel = "on|off", defaultValue = "on",
            description = "Compute and verify UDP checksums (default: ${DEFAULT-VALUE}); off is the lossless-fabric link policy, "
                    + "and what Linux does on loopback (checksum offload).")
    String checksums;

    @Option(names = "--peer", paramLabel = "A.B.C.D",
            description = "Measure against a UDP echo server on port 7 that another program serves on --fabric (a C or GPU node):"
                    + " our round trips alone, no Linux peer, no floor.")
    String peer;

    @Option(names = "--rate", paramLabel = "PER_SECOND",
            description = "udp-lat: open loop, in one process: requests arrive at this mean rate (Poisson), each timed from its"
                    + " arrival; ours two nodes' datapaths idling as a node's do, the peer Linux UDP with each side blocking in"
                    + " epoll; p50, p99 and each side's CPU (default: closed loop, busy-polling, two processes).")
    Double rate;

    @Option(names = {"-t", "--time"}, paramLabel = "SECONDS", defaultValue = "2", description = "With --rate: seconds per turn (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "3", description = "With --rate: turns of each side (default: ${DEFAULT-VALUE}).")
    int turns;

    @Option(names = "--idle", paramLabel = "SPIN_US,YIELD_US", description = "With --rate: " + IdleOption.DESCRIPTION)
    String idleSpec;

    private Ipv4Stack stack;
    private Link link;
    private final MemorySegment control = Arena.ofAuto().allocate(32);
    // Server state
    private long linuxToEcho;
    private boolean done;
    private int linuxPort;
    // Client state
    private long expected = -1;
    private int expectedLength = -1;
    private boolean answered;
    private int helloPort = -1;
    private int windowId;
    private int windowKey;
    private long floorStart;
    private long floorCount;
    private FabricWindow floorWindow;

    @Override
    public Integer call() throws Exception {
        o.validate(8, 65_507);
        if (!checksums.equals("on") && !checksums.equals("off")) {
            throw new IllegalArgumentException("--checksums must be on or off, not " + checksums);
        }
        int size = o.size != null ? o.size : 64;
        if (peer != null) {
            if (icmp || o.server) {
                throw new IllegalArgumentException("--peer is for udp-lat's client alone: give udp-lat --peer A.B.C.D --fabric F");
            }
            return peerClient(Ipv4Address.parse(peer), size, o.iterations != null ? o.iterations : 200_000);
        }
        if (rate != null || idleSpec != null) {
            if (icmp || rate == null) {
                throw new IllegalArgumentException("--rate (and --idle with it) goes with udp-lat only, and --idle with --rate");
            }
            if (o.server || o.client) {
                throw new IllegalArgumentException("--rate runs both sides in one process; leave out --server and --client");
            }
            return new OpenLoopLatency(name, false, rate, seconds, turns, size, IdleOption.parse(idleSpec)).run(o.json);
        }
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client(size, o.iterations != null ? o.iterations : 200_000);
        }
        return PerfRunner.runBoth(o, name, o.freshGeometry(size, 256),
                List.of("--warmup", Long.toString(warmup), "--checksums", checksums));
    }

    private int server() throws IOException {
        try (PerfNode pn = new PerfNode(o, true, checksums.equals("on")); DatagramChannel linux = DatagramChannel.open()) {
            FabricNode node = pn.node;
            stack = pn.ip;
            link = pn.link;
            linux.bind(new InetSocketAddress("127.0.0.1", 0));
            linux.configureBlocking(false);
            linuxPort = ((InetSocketAddress) linux.getLocalAddress()).getPort();
            ByteBuffer buf = ByteBuffer.allocateDirect(65_536);
            stack.bindUdp(ECHO_PORT, (src, srcPort, dst, mem, off, len) -> stack.sendUdp(ECHO_PORT, src, srcPort, mem, off, len));
            stack.bindUdp(CONTROL_PORT, this::serverControl);
            floorWindow = node.exportWindow(4096, FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE);
            System.out.println(PerfRunner.READY);
            System.out.flush();
            for (int looks = 0; !done; looks++) {
                look(looks);
                if (floorCount > 0) {
                    FloorLine.echo(floorWindow.memory(), floorStart, floorCount);
                    floorCount = 0;
                }
                while (linuxToEcho > 0) {
                    echoLinux(linux, buf);
                }
            }
        }
        return 0;
    }

    /** One look for a Linux datagram to echo (a method of its own; see {@link FloorLine#ping}). */
    private void echoLinux(DatagramChannel linux, ByteBuffer buf) throws IOException {
        SocketAddress from = linux.receive(buf.clear());
        if (from != null) {
            linux.send(buf.flip(), from);
            linuxToEcho--;
        } else {
            Thread.onSpinWait();
        }
    }

    private void serverControl(int src, int srcPort, int dst, MemorySegment mem, long off, int len) {
        byte op = len > 0 ? mem.get(ValueLayout.JAVA_BYTE, off) : 0;
        if (op == HELLO) {
            control.set(ValueLayout.JAVA_INT_UNALIGNED, 0, linuxPort);
            control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, floorWindow.id());
            control.set(ValueLayout.JAVA_INT_UNALIGNED, 8, floorWindow.key());
            stack.sendUdp(CONTROL_PORT, src, srcPort, control, 0, 12);
        } else if (op == FLOOR && len >= 17) {
            floorStart = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 1);
            floorCount = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 9);
        } else if (op == LINUX && len >= 9) {
            linuxToEcho = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 1);
        } else if (op == BYE) {
            done = true;
        }
    }

    private int client(int size, long iterations) throws IOException {
        try (PerfNode pn = new PerfNode(o, false, checksums.equals("on")); DatagramChannel linux = DatagramChannel.open()) {
            FabricNode node = pn.node;
            stack = pn.ip;
            link = pn.link;
            int server = IpConfig.fabricPlan(o.serverAddress).address();
            UdpReceiver replies = (src, srcPort, dst, mem, off, len) -> {
                if (srcPort == CONTROL_PORT && len >= 12) {
                    windowId = mem.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
                    windowKey = mem.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
                    helloPort = mem.get(ValueLayout.JAVA_INT_UNALIGNED, off);
                } else if (len >= 8 && mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
                    answered = true;
                }
            };
            int port = stack.bindUdp(0, replies);
            stack.addEchoListener(ECHO_ID, (from, sequence, ttl, mem, off, len, now) -> {
                if (len >= 8 && mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
                    answered = true;
                }
            });
            hello(server, port);
            linux.connect(new InetSocketAddress("127.0.0.1", helloPort));
            linux.configureBlocking(false);
            MemorySegment payload = Arena.ofAuto().allocate(size, 64);
            ByteBuffer out = ByteBuffer.allocateDirect(size);
            ByteBuffer in = ByteBuffer.allocateDirect(65_536);
            floorWindow = node.openWindow(windowId, windowKey);
            long seq = 0;
            long counter = 0;
            for (long n : Turns.warmUp(Math.min(warmup, iterations))) { // in turns, as the measured run goes
                seq = fabric(server, port, payload, size, seq, n, null);
                if (!icmp) {
                    linuxRounds(server, port, linux, out, in, size, n, null);
                }
                counter = floor(server, port, counter, n, null);
            }
            PerfReport report = o.report(name);
            trace = o.tracing(icmp ? "ICMP echo round trip" : "UDP datagram round trip").attach(report);
            Turns turns = new Turns(3, iterations, Turns.PEER_TURN) // 0 ours, 1 floor, 2 Linux
                    .observe(report, o.progress(name, iterations), "ours", "floor", "linux");
            for (int t = 0; t < turns.count(); t++) {
                long n = turns.length(t);
                seq = fabric(server, port, payload, size, seq, n, turns.turn(0));
                if (!icmp) {
                    linuxRounds(server, port, linux, out, in, size, n, turns.turn(2));
                }
                counter = floor(server, port, counter, n, turns.turn(1));
                turns.endTurn();
            }
            floorWindow.close();
            trace.export();
            control.set(ValueLayout.JAVA_BYTE, 0, BYE);
            stack.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            LatencyStats a = LatencyStats.of(turns.pooled(0));
            LatencyStats fl = LatencyStats.of(turns.pooled(1));
            double floorRatio = turns.ratio(0, 1);
            System.out.println(name + ": " + (icmp ? "ICMP echo round trip, back to back, " + size + " data bytes"
                    : "UDP echo round trip, " + size + "-byte payload") + ", checksums " + checksums + ", fabric " + o.fabric);
            System.out.println(LatencyStats.header());
            System.out.println(a.row(size));
            String peerJson = "";
            if (!icmp) {
                LatencyStats p = LatencyStats.of(turns.pooled(2));
                double ratio = turns.ratio(0, 2);
                System.out.println("peer: Linux UDP over loopback, busy-polling non-blocking sockets, the same two processes");
                System.out.println(p.row(size));
                System.out.printf(Locale.ROOT, "ratio (p50 ours / p50 peer, median over %d turns): %.3f; pooled p50 ratio: %.3f%n",
                        turns.count(), ratio, turns.pooledRatio(0, 2));
                peerJson = String.format(Locale.ROOT, ",\"peer\":{\"bytes\":%d,%s},\"ratio\":%s,\"pooled_ratio\":%s",
                        size, p.json(), JsonNumber.of(ratio, 3), JsonNumber.of(turns.pooledRatio(0, 2), 3));
            }
            System.out.println("floor: one cache line bounced between the same two processes (round trip)");
            System.out.println(fl.row(8));
            System.out.printf(Locale.ROOT, "ratio (p50 ours / p50 floor, median over turns): %.2f%n", floorRatio);
            if (o.json) {
                System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"bytes\":%d,\"round_trip\":true,\"checksums\":\"%s\",%s%s,"
                        + "\"floor\":{\"bytes\":8,%s},\"floor_ratio\":%s,\"turns\":%d}%n", name, size, checksums, a.json(), peerJson,
                        fl.json(), JsonNumber.of(floorRatio, 3), turns.count());
            }
        }
        return 0;
    }

    /** Round trips to an echo server another program runs at {@code server}: the echo's own bytes checked, nothing else run. */
    private int peerClient(int server, int size, long iterations) {
        try (PerfNode pn = new PerfNode(o, false, checksums.equals("on"))) {
            stack = pn.ip;
            link = pn.link;
            int port = stack.bindUdp(0, (src, srcPort, dst, mem, off, len) -> {
                if (src == server && srcPort == ECHO_PORT && len == expectedLength && mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
                    answered = true;
                }
            });
            expectedLength = size;
            MemorySegment payload = Arena.ofAuto().allocate(size, 64);
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (stack.neighbors().lookup(server) < 0) { // the peer's address in the neighbor directory
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no node publishes " + peer + " on " + o.fabric + " after 30 s; start its echo server first");
                }
                link.poll(16, System.nanoTime());
            }
            long seq = fabric(server, port, payload, size, 0, Math.min(warmup, iterations), null);
            Histogram h = LatencyStats.newHistogram();
            trace = o.tracing("UDP datagram round trip");
            fabric(server, port, payload, size, seq, iterations, h);
            LatencyStats a = LatencyStats.of(h);
            System.out.println(name + ": UDP echo round trip, " + size + "-byte payload, checksums " + checksums + ", to " + peer
                    + " on fabric " + o.fabric);
            System.out.println(LatencyStats.header());
            System.out.println(a.row(size));
            if (o.json) {
                System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"peer\":\"%s\",\"bytes\":%d,\"round_trip\":true,\"checksums\":\"%s\",%s}%n",
                        name, peer, size, checksums, a.json());
            }
        }
        return 0;
    }

    /** Asks the server for its loopback port, retrying while its address is not yet bound in the directory. */
    private void hello(int server, int port) {
        long deadline = System.nanoTime() + 30_000_000_000L;
        control.set(ValueLayout.JAVA_BYTE, 0, HELLO);
        while (helloPort < 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + name + " server at node " + o.serverAddress + " of " + o.fabric
                        + " after 30 s; start one with --server");
            }
            stack.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            long until = System.nanoTime() + 10_000_000L;
            while (helloPort < 0 && System.nanoTime() < until) {
                link.poll(16, System.nanoTime());
            }
        }
    }

    private long fabric(int server, int port, MemorySegment payload, int size, long seq, long n, Histogram h) {
        for (long i = 0; i < n; i++, seq++) {
            boolean traced = h != null && trace.begin();
            long t = round(server, port, payload, size, seq);
            if (traced) {
                trace.end();
            }
            if (h != null) {
                h.recordValue(t);
            }
        }
        return seq;
    }

    /** One timed round trip, in a method of its own called per round (as write-lat's RdmaPerf.writeRound). */
    private long round(int server, int port, MemorySegment payload, int size, long seq) {
        payload.set(ValueLayout.JAVA_LONG, 0, seq);
        expected = seq;
        answered = false;
        long t0 = System.nanoTime();
        int rc = icmp ? stack.sendEchoRequest(server, ECHO_ID, (int) seq, payload, 0, size)
                : stack.sendUdp(port, server, ECHO_PORT, payload, 0, size);
        if (rc != SendStatus.OK) {
            throw new IllegalStateException((icmp ? "ICMP" : "UDP") + " send failed: " + SendStatus.describe(rc));
        }
        for (int looks = 0; !answered; looks++) {
            look(looks);
        }
        return System.nanoTime() - t0;
    }

    /**
     * One look while waiting: the link polled, the clock read on the first look and every 16th after (the stack needs it
     * for timers, not for an echo; a read costs as much as a poll here), and PAUSE when nothing came,
     * as the floor and the Linux peer spin.
     */
    private void look(int looks) {
        if (link.poll(16, (looks & 15) == 0 ? System.nanoTime() : link.now()) == 0) {
            Thread.onSpinWait();
        }
    }

    private long floor(int server, int port, long start, long n, Histogram h) {
        control.set(ValueLayout.JAVA_BYTE, 0, FLOOR);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 1, start);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 9, n);
        stack.sendUdp(port, server, CONTROL_PORT, control, 0, 17);
        return FloorLine.measure(floorWindow.memory(), start, n, h);
    }

    private void linuxRounds(int server, int port, DatagramChannel linux, ByteBuffer out, ByteBuffer in, int size, long n,
                             Histogram h) throws IOException {
        control.set(ValueLayout.JAVA_BYTE, 0, LINUX);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 1, n);
        stack.sendUdp(port, server, CONTROL_PORT, control, 0, 9);
        for (long i = 0; i < n; i++) {
            long t = linuxRound(linux, out, in, size, i);
            if (h != null) {
                h.recordValue(t);
            }
        }
    }

    /** One timed Linux round trip (a method of its own; see {@link FloorLine#ping}). */
    private static long linuxRound(DatagramChannel linux, ByteBuffer out, ByteBuffer in, int size, long i) throws IOException {
        out.clear().putLong(0, i);
        out.limit(size);
        long t0 = System.nanoTime();
        while (linux.write(out) == 0) {
            Thread.onSpinWait();
        }
        int got;
        while ((got = linux.read(in.clear())) <= 0 || in.getLong(0) != i) {
            if (got <= 0) {
                Thread.onSpinWait();
            }
        }
        return System.nanoTime() - t0;
    }
}
