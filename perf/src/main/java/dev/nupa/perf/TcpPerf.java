package dev.nupa.perf;

import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.file.Path;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;

import org.HdrHistogram.Histogram;

import dev.nupa.ip.UdpReceiver;
import dev.nupa.tcp.BufferUnavailableException;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.tcp.TcpState;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf tcp-lat | tcp-bw | tcp-crr`: TCP between two processes over the fabric, each side
 * polling its stack in line (no datapath thread), beside Linux TCP over loopback between the same
 * two processes (JDK sockets) measured in the same run, rounds alternating. tcp-lat: request /
 * response round trips of {@code -s} bytes (busy-polling on both); tcp-bw: one connection streaming
 * for {@code -t} seconds; tcp-crr: connect, 1-byte request and response, close, as a rate.
 *
 * <p>With {@code --loopback} (tcp-lat, tcp-bw) the test is one process: ours is a listener and a client of one
 * node's TcpLayer talking over its loopback interface (127.0.0.1), driven in line on one thread; the peer is Linux
 * TCP over 127.0.0.1 between two threads of the same process. The rounds are the same code either way.
 */
abstract class TcpPerf implements Callable<Integer> {
    enum Mode { LAT, BW, CRR }

    @Command(name = "tcp-lat", mixinStandardHelpOptions = true,
            description = {"TCP request/response round trip over the fabric beside Linux TCP over loopback (busy-polling).",
                    "With --loopback: over one node's loopback interface, in one process."})
    static final class Lat extends TcpPerf {
        Lat() {
            super("tcp-lat", Mode.LAT);
        }
    }

    @Command(name = "tcp-bw", mixinStandardHelpOptions = true,
            description = {"One TCP connection's bulk throughput over the fabric beside Linux TCP over loopback.",
                    "With --loopback: over one node's loopback interface, in one process."})
    static final class Bw extends TcpPerf {
        Bw() {
            super("tcp-bw", Mode.BW);
        }
    }

    @Command(name = "tcp-crr", mixinStandardHelpOptions = true,
            description = "TCP connect, 1-byte request/response, close: the rate, beside Linux TCP over loopback.")
    static final class Crr extends TcpPerf {
        Crr() {
            super("tcp-crr", Mode.CRR);
        }
    }

    static final int TCP_PORT = 5001;
    private static final int CONTROL_PORT = 9;
    private static final byte HELLO = 1;
    private static final byte LINUX = 2;
    private static final byte BYE = 3;
    /** tcp-crr: warm-up is over; count from here. */
    private static final byte MEASURE = 4;
    /** tcp-crr: what the server counted since MEASURE (allocation by ours, connections, collections). */
    private static final byte STATS = 5;
    private static final int STATS_BYTES = 48;
    private static final int ROUNDS = 3;

    @Mixin
    PerfOptions o;

    @Option(names = {"-t", "--time"}, paramLabel = "SECONDS",
            description = "tcp-bw: seconds per round (default: 2); tcp-crr: turns go on for this long instead of -n connections;"
                    + " tcp-lat --rate: seconds per turn (default: 2).")
    Double seconds;

    @Option(names = "--rate", paramLabel = "PER_SECOND",
            description = "tcp-lat: open loop, in one process: requests arrive at this mean rate (Poisson), each timed from its"
                    + " arrival; ours two nodes' datapaths idling as a node's do, the peer Linux TCP with each side blocking in"
                    + " epoll; p50, p99 and each side's CPU (default: closed loop, busy-polling, two processes).")
    Double rate;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "3", description = "tcp-lat --rate: turns of each side (default: ${DEFAULT-VALUE}).")
    int turns;

    @Option(names = "--idle", paramLabel = "SPIN_US,YIELD_US", description = "tcp-lat --rate: " + IdleOption.DESCRIPTION)
    String idleSpec;

    @Option(names = "--checksums", paramLabel = "on|off", defaultValue = "on",
            description = "Compute and verify checksums (default: ${DEFAULT-VALUE}); off is the lossless-fabric policy, as Linux on lo."
                    + " The loopback interface carries none either way.")
    String checksums;

    @Option(names = "--mtu", paramLabel = "BYTES", defaultValue = "9000",
            description = "The nodes' link MTU, " + Link.MIN_MTU + ".." + Link.MAX_MTU + "; the fresh fabric's slots"
                    + " are made to hold it (default: ${DEFAULT-VALUE}).")
    int mtu;

    @Option(names = "--loopback", description = "tcp-lat, tcp-bw: one process; ours over one node's loopback interface"
            + " (127.0.0.1, driven in line on one thread), the peer Linux TCP over 127.0.0.1 between two threads.")
    boolean loopback;

    private final String name;
    private final Mode mode;
    private PerfTrace trace;
    private final MemorySegment scratch = Arena.ofAuto().allocate(1 << 20);
    private final MemorySegment control = Arena.ofAuto().allocate(48);
    private PerfNode pn;
    private TcpLayer tcp;
    // server
    private long linuxCount = -1;
    private boolean done;
    private final GcWatch gc = new GcWatch();
    private long measureAllocated;
    private long linuxAllocated;
    private long accepted;
    private int linuxPort;
    /** --loopback: the Linux peer's turns, handed to its thread (a count of round trips or connections; -1 ends it). */
    private BlockingQueue<Long> linuxTurns;
    // client
    /** The Linux peer's port on 127.0.0.1: the server's answer to HELLO, or with --loopback this process's own listener. */
    private int helloPort = -1;
    private long got;
    private long[] serverStats;
    /** tcp-lat: bytes this thread allocated in ours' measured round trips, and how many (both ends with --loopback). */
    private long oursAllocated;
    private long oursRounds;

    TcpPerf(String name, Mode mode) {
        this.name = name;
        this.mode = mode;
    }

    @Override
    public Integer call() throws Exception {
        o.validate(1, 1 << 20);
        if (!checksums.equals("on") && !checksums.equals("off")) {
            throw new IllegalArgumentException("--checksums must be on or off, not " + checksums);
        }
        Link.checkMtu(mtu, Link.frameFor(mtu));
        if (seconds != null && seconds <= 0) {
            throw new IllegalArgumentException("-t must be positive, not " + seconds);
        }
        if (mode != Mode.LAT) {
            o.tracesNothing(name);
        }
        if (rate != null || idleSpec != null) {
            if (mode != Mode.LAT || rate == null) {
                throw new IllegalArgumentException("--rate (and --idle with it) goes with tcp-lat only, and --idle with --rate");
            }
            if (o.server || o.client || loopback) {
                throw new IllegalArgumentException("--rate runs both sides in one process; leave out --server, --client and --loopback");
            }
            return new OpenLoopLatency(name, true, rate, seconds != null ? seconds : 2, turns, o.size != null ? o.size : 8,
                    IdleOption.parse(idleSpec)).run(o.json);
        }
        if (loopback) {
            if (mode == Mode.CRR) {
                throw new IllegalArgumentException("--loopback goes with tcp-lat and tcp-bw, not tcp-crr");
            }
            if (o.server || o.client) {
                throw new IllegalArgumentException("--loopback runs in one process; leave out --server and --client");
            }
            if (o.gcLog) {
                throw new IllegalArgumentException("--gc-log starts the two processes with -Xlog:gc; with --loopback there are"
                        + " none: give the JVM -Xlog:gc:stderr instead");
            }
            return loopback();
        }
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client();
        }
        List<String> extra = new java.util.ArrayList<>(List.of("--checksums", checksums, "--mtu", Integer.toString(mtu)));
        if (seconds != null) {
            extra.addAll(List.of("-t", Double.toString(seconds)));
        }
        return PerfRunner.runBoth(o, name, o.freshGeometry(Link.frameFor(mtu), 256), extra);
    }

    private TcpConfig config;

    /** The connections' settings, made once: opening a connection allocates nothing of the tool's either. */
    private TcpConfig config() {
        if (config == null) {
            TcpConfig c = TcpConfig.defaults(mtu).withTimeWait(1_000_000_000L);
            config = mode == Mode.BW ? c.withBuffers(4 << 20, 4 << 20) : c.withNoDelay(true).withDelayedAck(0);
        }
        return config;
    }

    private double bwSeconds() {
        return seconds != null ? seconds : 2;
    }

    private long now() {
        return System.nanoTime();
    }

    private void pump() {
        long t = now();
        pn.link.poll(16, t);
        pn.ip.poll(t); // the loopback queue: with no datapath thread, the stack's poll delivers it
        tcp.poll(t);
    }

    /** What ours measures over, for the printed lines. */
    private String ourPath() {
        return loopback ? "over the loopback interface of one node (127.0.0.1), one thread"
                : "checksums " + checksums + ", MTU " + mtu + ", fabric " + o.fabric;
    }

    /** Where the Linux peer runs, for the printed lines. */
    private String peerPlace() {
        return loopback ? "two threads of this process" : "the same two processes";
    }

    /** The JSON object's first fields. */
    private String jsonTest() {
        return "\"test\":\"" + name + "\"" + (loopback ? ",\"loopback\":true" : "") + (mtu != Link.DEFAULT_MTU ? ",\"mtu\":" + mtu : "");
    }

    // ---- loopback: one process --------------------------------------------------------------

    /**
     * --loopback: one node on a fresh fabric file (removed after), ours' listener and client both in its
     * TcpLayer, and the Linux peer's server side on a thread of its own, which echoes or drains when the
     * measuring thread hands it a turn ({@link #linuxPhase}) and waits otherwise.
     */
    private int loopback() throws Exception {
        Path path = PerfRunner.freshFabricPath("perf");
        ShmFabric.create(path, o.freshGeometry(Link.frameFor(mtu), 256)).close();
        Thread cleanup = new Thread(() -> PerfRunner.deleteQuietly(path));
        Runtime.getRuntime().addShutdownHook(cleanup);
        try (PerfNode node = new PerfNode(o, path, true, checksums.equals("on"), mtu);
             ServerSocketChannel linux = ServerSocketChannel.open()) {
            pn = node;
            tcp = new TcpLayer(node.ip, config());
            listenOurs();
            linux.bind(new InetSocketAddress("127.0.0.1", 0));
            helloPort = ((InetSocketAddress) linux.getLocalAddress()).getPort();
            linuxTurns = new LinkedBlockingQueue<>();
            Thread peer = Thread.ofPlatform().daemon().name("linux-peer").start(() -> linuxPeer(linux));
            String result = mode == Mode.LAT ? latency(Ipv4Address.LOCALHOST, 0) : bandwidth(Ipv4Address.LOCALHOST, 0);
            linuxTurns.put(-1L);
            peer.join();
            if (o.json) {
                System.out.println(result);
            }
        } finally {
            cleanup.run();
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway
            }
        }
        return 0;
    }

    /** The Linux peer's server thread: serves each turn handed to it until -1. */
    private void linuxPeer(ServerSocketChannel linux) {
        SocketChannel kept = null;
        try {
            for (long n; (n = linuxTurns.take()) >= 0; ) {
                kept = linuxServer(linux, kept, n);
            }
            if (kept != null) {
                kept.close();
            }
        } catch (IOException | InterruptedException e) {
            // The measuring thread would wait on its socket for ever: end the run, with the reason.
            System.err.println("nupa: the Linux peer's server thread failed: " + e);
            System.exit(1);
        }
    }

    // ---- server ---------------------------------------------------------------------------

    private int server() throws IOException {
        try (PerfNode node = new PerfNode(o, true, checksums.equals("on"), mtu);
             ServerSocketChannel linux = ServerSocketChannel.open()) {
            pn = node;
            tcp = new TcpLayer(node.ip, config());
            linux.bind(new InetSocketAddress("127.0.0.1", 0));
            linuxPort = ((InetSocketAddress) linux.getLocalAddress()).getPort();
            listenOurs();
            node.ip.bindUdp(CONTROL_PORT, this::serverControl);
            System.out.println(PerfRunner.READY);
            System.out.flush();
            SocketChannel kept = null;
            while (!done) {
                pump();
                if (linuxCount >= 0) {
                    long a0 = GcWatch.threadAllocated();
                    gc.peerBegins();
                    kept = linuxServer(linux, kept, linuxCount);
                    gc.peerEnds();
                    linuxAllocated += GcWatch.threadAllocated() - a0;
                    linuxCount = -1;
                }
            }
            if (kept != null) {
                kept.close();
            }
        }
        return 0;
    }

    /** Ours' server side: a listener on {@link #TCP_PORT} that echoes what it reads (drains it for tcp-bw). */
    private void listenOurs() {
        TcpConnection.Events echo = new TcpConnection.Events() {
            @Override
            public void onReadable(TcpConnection c) {
                int n;
                while ((n = c.read(scratch, 0, (int) scratch.byteSize(), now())) > 0) {
                    if (mode != Mode.BW) {
                        try {
                            c.write(scratch, 0, n, now()); // echo
                        } catch (BufferUnavailableException e) {
                            // Not thrown out of the datapath's segment processing: the client times out and says so.
                            System.err.println("nupa perf: the echo stops: " + e.getMessage());
                            return;
                        }
                    }
                }
            }

            @Override
            public void onPeerClosed(TcpConnection c) {
                c.close(now());
            }
        };
        tcp.listen(TCP_PORT, 1024, config(), c -> {
            accepted++;
            tcp.setEvents(c, echo);
        });
    }

    private void serverControl(int src, int srcPort, int dst, MemorySegment mem, long off, int len) {
        byte op = len > 0 ? mem.get(ValueLayout.JAVA_BYTE, off) : 0;
        if (op == HELLO) {
            control.set(ValueLayout.JAVA_INT_UNALIGNED, 0, linuxPort);
            pn.ip.sendUdp(CONTROL_PORT, src, srcPort, control, 0, 4);
        } else if (op == LINUX && len >= 9) {
            linuxCount = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 1);
        } else if (op == MEASURE) {
            System.gc(); // as the client: the warm-up's garbage goes before the measured turns
            gc.reset();
            measureAllocated = GcWatch.threadAllocated();
            linuxAllocated = 0;
            accepted = 0;
        } else if (op == STATS) {
            control.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, GcWatch.threadAllocated() - measureAllocated - linuxAllocated);
            control.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, accepted);
            control.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, gc.collections());
            control.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, gc.longestMs());
            long[] ours = gc.ours();
            control.set(ValueLayout.JAVA_LONG_UNALIGNED, 32, ours[0]);
            control.set(ValueLayout.JAVA_LONG_UNALIGNED, 40, ours[1]);
            pn.ip.sendUdp(CONTROL_PORT, src, srcPort, control, 0, STATS_BYTES);
        } else if (op == BYE) {
            done = true;
        }
    }

    /** The Linux side of one round, on JDK sockets: echo {@code n} messages, drain a stream, or serve {@code n} connections. */
    private SocketChannel linuxServer(ServerSocketChannel linux, SocketChannel kept, long n) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
        switch (mode) {
            case LAT -> {
                if (kept == null) {
                    kept = linux.accept();
                    kept.setOption(StandardSocketOptions.TCP_NODELAY, true);
                    kept.configureBlocking(false);
                }
                int size = o.size != null ? o.size : 1;
                for (long i = 0; i < n; i++) {
                    buf.clear().limit(size);
                    while (buf.hasRemaining()) {
                        if (kept.read(buf) < 0) {
                            return null;
                        }
                    }
                    buf.flip();
                    while (buf.hasRemaining()) {
                        kept.write(buf);
                    }
                }
            }
            case BW -> {
                try (SocketChannel s = linux.accept()) {
                    while (s.read(buf.clear()) >= 0) {
                        // discard
                    }
                }
            }
            case CRR -> {
                for (long i = 0; i < n; i++) {
                    try (SocketChannel s = linux.accept()) {
                        buf.clear().limit(1);
                        if (s.read(buf) == 1) {
                            s.write(buf.flip());
                        }
                    }
                }
            }
        }
        return kept;
    }

    // ---- client ---------------------------------------------------------------------------

    private int client() throws IOException {
        try (PerfNode node = new PerfNode(o, false, checksums.equals("on"), mtu)) {
            pn = node;
            tcp = new TcpLayer(node.ip, config());
            int server = IpConfig.fabricPlan(o.serverAddress).address();
            UdpReceiver replies = (src, srcPort, dst, mem, off, len) -> {
                if (len == STATS_BYTES) {
                    serverStats = new long[STATS_BYTES / 8];
                    for (int i = 0; i < serverStats.length; i++) {
                        serverStats[i] = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8L * i);
                    }
                } else if (len >= 4) {
                    helloPort = mem.get(ValueLayout.JAVA_INT_UNALIGNED, off);
                }
            };
            int port = node.ip.bindUdp(0, replies);
            hello(server, port);
            String result = switch (mode) {
                case LAT -> latency(server, port);
                case BW -> bandwidth(server, port);
                case CRR -> connectRate(server, port);
            };
            control.set(ValueLayout.JAVA_BYTE, 0, BYE);
            node.ip.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            if (o.json) {
                System.out.println(result);
            }
        }
        return 0;
    }

    private void hello(int server, int port) {
        long deadline = now() + 30_000_000_000L;
        control.set(ValueLayout.JAVA_BYTE, 0, HELLO);
        while (helloPort < 0) {
            if (now() > deadline) {
                throw new IllegalStateException("no " + name + " server at node " + o.serverAddress + " of " + o.fabric
                        + " after 30 s; start one with --server");
            }
            pn.ip.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            long until = now() + 10_000_000L;
            while (helloPort < 0 && now() < until) {
                pump();
            }
        }
    }

    private void linuxPhase(int server, int port, long n) {
        if (linuxTurns != null) {
            linuxTurns.add(n);
            return;
        }
        control.set(ValueLayout.JAVA_BYTE, 0, LINUX);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 1, n);
        pn.ip.sendUdp(port, server, CONTROL_PORT, control, 0, 9);
    }

    private final TcpConnection.Events counting = new TcpConnection.Events() {
        @Override
        public void onReadable(TcpConnection c) {
            int n;
            while ((n = c.read(scratch, 0, (int) scratch.byteSize(), now())) > 0) {
                got += n;
            }
        }
    };

    private TcpConnection open(int server) {
        TcpConnection c = tcp.connect(server, TCP_PORT, config(), counting, now());
        long deadline = now() + 10_000_000_000L;
        while (c.state() != TcpState.ESTABLISHED) {
            if (c.state() == TcpState.CLOSED || now() > deadline) {
                throw new IllegalStateException("cannot connect to the " + name + " server: "
                        + (c.error() != null ? c.error().message() : "no answer"));
            }
            pump();
        }
        return c;
    }

    private String latency(int server, int port) throws IOException {
        int size = o.size != null ? o.size : 1;
        long iterations = o.iterations != null ? o.iterations : 100_000;
        TcpConnection c = open(server);
        MemorySegment msg = Arena.ofAuto().allocate(size);
        PerfReport report = o.report(name);
        trace = o.tracing("TCP request/response round trip").attach(report);
        Turns turns = new Turns(2, iterations, Turns.PEER_TURN) // 0 ours, 1 Linux
                .observe(report, o.progress(name, iterations), "ours", "linux");
        try (SocketChannel linux = SocketChannel.open(new InetSocketAddress("127.0.0.1", helloPort))) {
            linux.setOption(StandardSocketOptions.TCP_NODELAY, true);
            linux.configureBlocking(false);
            ByteBuffer buf = ByteBuffer.allocateDirect(size);
            for (long n : Turns.warmUp(Math.min(20_000, iterations))) { // in turns, as the measured run goes
                latencyTurn(c, msg, size, linux, buf, server, port, n, null, null);
            }
            for (int t = 0; t < turns.count(); t++) {
                latencyTurn(c, msg, size, linux, buf, server, port, turns.length(t), turns.turn(0), turns.turn(1));
                turns.endTurn();
            }
        }
        c.close(now());
        trace.export();
        LatencyStats a = LatencyStats.of(turns.pooled(0));
        LatencyStats p = LatencyStats.of(turns.pooled(1));
        double ratio = turns.ratio(0, 1);
        double alloc = (double) oursAllocated / oursRounds;
        System.out.println(name + ": TCP request/response round trip, " + size + "-byte messages, " + ourPath());
        System.out.println(LatencyStats.header());
        System.out.println(a.row(size));
        System.out.println("peer: Linux TCP over loopback, TCP_NODELAY, busy-polling non-blocking sockets, " + peerPlace());
        System.out.println(p.row(size));
        System.out.printf(Locale.ROOT, "ratio (p50 ours / p50 peer, median over %d turns): %.2f; pooled p50 ratio: %.2f%n",
                turns.count(), ratio, turns.pooledRatio(0, 1));
        System.out.printf(Locale.ROOT, "allocated per round trip of ours (%s): %.1f B%n", loopback ? "both ends" : "client",
                alloc);
        return String.format(Locale.ROOT, "{%s,\"bytes\":%d,\"round_trip\":true,%s,\"peer\":{\"bytes\":%d,%s},"
                + "\"alloc_b\":%s,\"ratio\":%s,\"pooled_ratio\":%s,\"turns\":%d}", jsonTest(), size, a.json(), size,
                p.json(), JsonNumber.of(alloc, 1), JsonNumber.of(ratio, 3), JsonNumber.of(turns.pooledRatio(0, 1), 3), turns.count());
    }

    /** One turn of tcp-lat: {@code n} round trips of ours, then of Linux's (recorded where not null). */
    private void latencyTurn(TcpConnection c, MemorySegment msg, int size, SocketChannel linux, ByteBuffer buf, int server,
            int port, long n, Histogram ours, Histogram peer) throws IOException {
        long a0 = GcWatch.threadAllocated();
        for (long i = 0; i < n; i++) {
            boolean traced = ours != null && trace.begin();
            long t = ourRound(c, msg, size);
            if (traced) {
                trace.end();
            }
            if (ours != null) {
                ours.recordValue(t);
            }
        }
        if (ours != null) { // the measured turns only: the warm-up compiles, and loads classes
            oursAllocated += GcWatch.threadAllocated() - a0;
            oursRounds += n;
        }
        linuxPhase(server, port, n);
        for (long i = 0; i < n; i++) {
            long t = linuxRound(linux, buf);
            if (peer != null) {
                peer.recordValue(t);
            }
        }
    }

    /** One timed round trip of ours (a method of its own; see {@link FloorLine#ping}). */
    private long ourRound(TcpConnection c, MemorySegment msg, int size) {
        long target = got + size;
        long t0 = now();
        c.write(msg, 0, size, t0);
        while (got < target) {
            pump();
        }
        return now() - t0;
    }

    /** One timed round trip of Linux's (a method of its own). */
    private long linuxRound(SocketChannel linux, ByteBuffer buf) throws IOException {
        long t0 = now();
        buf.clear();
        while (buf.hasRemaining()) {
            linux.write(buf);
        }
        buf.clear();
        while (buf.hasRemaining()) {
            linux.read(buf);
        }
        return now() - t0;
    }

    private String bandwidth(int server, int port) throws IOException {
        int size = o.size != null ? o.size : 65_536;
        MemorySegment msg = Arena.ofAuto().allocate(size);
        double oursBits = 0;
        double oursSecs = 0;
        double peerBits = 0;
        double peerSecs = 0;
        PerfReport report = o.report(name);
        if (report != null) {
            report.rates("Gbit/s", "ours", "linux");
        }
        for (int r = 0; r < ROUNDS; r++) {
            TcpConnection c = open(server);
            long bytes = 0;
            long t0 = now();
            long end = t0 + (long) (bwSeconds() * 1e9);
            while (now() < end) {
                bytes += c.write(msg, 0, size, now());
                pump();
            }
            c.close(now());
            while (c.unacknowledged() > 0 && c.state() != TcpState.CLOSED) {
                pump();
            }
            oursBits += bytes * 8.0;
            oursSecs += (now() - t0) / 1e9;
            if (report != null) {
                report.rate(0, bytes * 8.0 / (now() - t0));
            }
            linuxPhase(server, port, 1);
            try (SocketChannel linux = SocketChannel.open(new InetSocketAddress("127.0.0.1", helloPort))) {
                ByteBuffer buf = ByteBuffer.allocateDirect(size);
                long lb = 0;
                long l0 = now();
                long lend = l0 + (long) (bwSeconds() * 1e9);
                while (now() < lend) {
                    buf.clear();
                    lb += linux.write(buf);
                }
                linux.shutdownOutput();
                linux.read(ByteBuffer.allocate(1)); // until the server closed: everything was read
                peerBits += lb * 8.0;
                peerSecs += (now() - l0) / 1e9;
                if (report != null) {
                    report.rate(1, lb * 8.0 / (now() - l0));
                }
            }
        }
        if (report != null) {
            report.write(false);
        }
        double ours = oursBits / oursSecs / 1e9;
        double peer = peerBits / peerSecs / 1e9;
        System.out.println(name + ": one TCP connection, " + size + "-byte writes, " + ROUNDS + " x " + bwSeconds()
                + " s, " + ourPath());
        System.out.printf(Locale.ROOT, "ours: %.2f Gbit/s%npeer: Linux TCP over loopback, %s: %.2f Gbit/s%n"
                + "ratio (ours / peer): %.2f%n", ours, peerPlace(), peer, ours / peer);
        return String.format(Locale.ROOT, "{%s,\"bytes\":%d,\"gbit_s\":%s,\"peer\":{\"gbit_s\":%s},\"ratio\":%s}",
                jsonTest(), size, JsonNumber.of(ours, 3), JsonNumber.of(peer, 3), JsonNumber.of(ours / peer, 3));
    }

    /**
     * tcp-crr in turns: a warm-up of both (the JIT compiles the paths of connection setup and teardown), then
     * turns of {@value #CRR_TURN} connections of ours and of Linux's, alternating, each turn's ratio kept;
     * the median and range of the turns' ratios are the figure. Beside it, what ours allocates per connection
     * on each side and each process's collections and longest pause while the turns ran.
     */
    private String connectRate(int server, int port) throws IOException {
        long iterations = o.iterations != null ? o.iterations : 20_000;
        long warm = Math.min(CRR_WARM, iterations);
        MemorySegment one = Arena.ofAuto().allocate(1);
        ByteBuffer b = ByteBuffer.allocateDirect(1);
        // Warm until connections leave TIME-WAIT as fast as new ones enter it: from then on each one reuses a
        // closed one (TcpLayer's pool), as on a node that has been serving for a while.
        long warmUntil = now() + config().timeWaitNs() + 500_000_000L;
        long warmed = 0;
        while (warmed < warm || now() < warmUntil) {
            oursConnections(server, one, CRR_TURN);
            warmed += CRR_TURN;
        }
        linuxPhase(server, port, warm);
        linuxConnections(b, warm);
        control.set(ValueLayout.JAVA_BYTE, 0, MEASURE);
        pn.ip.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
        System.gc(); // what the warm-up left goes now, not in a measured turn (the server does the same)
        gc.reset();
        List<Double> ratios = new java.util.ArrayList<>();
        long oursCount = 0;
        long peerCount = 0;
        double oursSecs = 0;
        double peerSecs = 0;
        long oursAllocated = 0;
        long deadline = seconds != null ? now() + (long) (seconds * 1e9) : Long.MAX_VALUE;
        PerfReport report = o.report(name);
        if (report != null) {
            report.rates("connections/s", "ours", "linux");
        }
        while (seconds != null ? now() < deadline : oursCount < iterations) {
            long n = seconds != null ? CRR_TURN : Math.min(CRR_TURN, iterations - oursCount);
            long a0 = GcWatch.threadAllocated();
            long t0 = now();
            oursConnections(server, one, n);
            double os = (now() - t0) / 1e9;
            oursAllocated += GcWatch.threadAllocated() - a0;
            gc.peerBegins();
            linuxPhase(server, port, n);
            long l0 = now();
            linuxConnections(b, n);
            double ps = (now() - l0) / 1e9;
            gc.peerEnds();
            ratios.add(ps / os); // (n / os) / (n / ps)
            if (report != null) {
                report.rate(0, n / os);
                report.rate(1, n / ps);
            }
            oursCount += n;
            peerCount += n;
            oursSecs += os;
            peerSecs += ps;
        }
        if (report != null) {
            report.write(false);
        }
        long[] st = serverStats(server, port);
        double ours = oursCount / oursSecs;
        double peer = peerCount / peerSecs;
        double[] r = ratios.stream().mapToDouble(Double::doubleValue).toArray();
        double median = Turns.median(r);
        double min = java.util.Arrays.stream(r).min().orElse(Double.NaN);
        double max = java.util.Arrays.stream(r).max().orElse(Double.NaN);
        double clientAlloc = (double) oursAllocated / oursCount;
        double serverAlloc = st[1] > 0 ? (double) st[0] / st[1] : Double.NaN;
        System.out.println(name + ": connect, 1-byte request and response, close; " + oursCount + " connections each in "
                + r.length + " turns after " + warmed + " of warm-up, fabric " + o.fabric);
        System.out.printf(Locale.ROOT, "ours: %.0f connections/s%npeer: Linux TCP over loopback, the same two processes: "
                + "%.0f connections/s%nratio (ours / peer, median over %d turns): %.2f (%.2f-%.2f)%n", ours, peer, r.length,
                median, min, max);
        System.out.printf(Locale.ROOT, "allocated per connection of ours: client %.0f B, server %.0f B%n", clientAlloc, serverAlloc);
        long[] mine = gc.ours();
        System.out.printf(Locale.ROOT, "garbage collections that began in ours' turns: client %d (longest %d ms), server %d (longest"
                + " %d ms); in all turns, Linux's included: client %d (longest %d ms), server %d (longest %d ms)%n", mine[0], mine[1],
                st[4], st[5], gc.collections(), gc.longestMs(), st[2], st[3]);
        return String.format(Locale.ROOT, "{\"test\":\"%s\",\"iterations\":%d,\"msgs_s\":%s,\"peer\":{\"msgs_s\":%s},"
                + "\"ratio\":%s,\"ratio_min\":%s,\"ratio_max\":%s,\"turns\":%d,\"alloc_b\":%s,\"server_alloc_b\":%s,"
                + "\"gc\":{\"client\":%d,\"client_longest_ms\":%d,\"server\":%d,\"server_longest_ms\":%d},"
                + "\"gc_all\":{\"client\":%d,\"client_longest_ms\":%d,\"server\":%d,\"server_longest_ms\":%d}}",
                name, oursCount, JsonNumber.of(ours, 1), JsonNumber.of(peer, 1), JsonNumber.of(median, 3), JsonNumber.of(min, 3),
                JsonNumber.of(max, 3), r.length, JsonNumber.of(clientAlloc, 1), JsonNumber.of(serverAlloc, 1), mine[0], mine[1], st[4],
                st[5], gc.collections(), gc.longestMs(), st[2], st[3]);
    }

    static final int CRR_TURN = 2_000;
    static final int CRR_WARM = 5_000;

    /** {@code n} connections of ours in a row: connect, one byte each way, close (until TIME-WAIT). */
    private void oursConnections(int server, MemorySegment one, long n) {
        for (long i = 0; i < n; i++) {
            TcpConnection c = open(server);
            long target = got + 1;
            c.write(one, 0, 1, now());
            while (got < target) {
                pump();
            }
            c.close(now());
            while (c.state() != TcpState.TIME_WAIT && c.state() != TcpState.CLOSED) {
                pump();
            }
        }
    }

    /** {@code n} connections of Linux's in a row, to the server's JDK socket (after {@link #linuxPhase}). */
    private void linuxConnections(ByteBuffer b, long n) throws IOException {
        for (long i = 0; i < n; i++) {
            try (SocketChannel s = SocketChannel.open(new InetSocketAddress("127.0.0.1", helloPort))) {
                s.write(b.clear());
                s.read(b.clear());
            }
        }
    }

    /**
     * What the server counted since MEASURE: bytes allocated by ours, connections of ours, collections and the
     * longest in ms, and those of them that began outside Linux's turns and the longest of those.
     */
    private long[] serverStats(int server, int port) {
        long deadline = now() + 10_000_000_000L;
        control.set(ValueLayout.JAVA_BYTE, 0, STATS);
        while (serverStats == null) {
            if (now() > deadline) {
                throw new IllegalStateException("the " + name + " server did not answer for its counts within 10 s");
            }
            pn.ip.sendUdp(port, server, CONTROL_PORT, control, 0, 1);
            long until = now() + 10_000_000L;
            while (serverStats == null && now() < until) {
                pump();
            }
        }
        return serverStats;
    }
}
