package dev.nupa.perf;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ByteChannel;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.SendStatus;
import dev.nupa.l2.Datapath;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.StackConfig;

/**
 * `nupa perf udp-lat --rate R` and `tcp-lat --rate R`: echo requests in an open loop ({@link OpenLoop}: Poisson
 * arrivals, each timed from its arrival), as a service sees them at light load, in one process. Ours: two nodes on a
 * fresh fabric file, each a datapath on a thread of its own idling as the node's does (its {@link Datapath.Idle}:
 * the default, or {@code --idle}); the client's datapath is handed each request as a task (the way an application
 * thread hands work to a node) and sends it; the server's echoes it. The peer: Linux UDP or TCP over loopback
 * between two threads that each block in epoll (a java.nio Selector) as an event loop does, no busy-polling; the
 * client's is handed each request through its queue and a selector wake-up (an eventfd write, as Netty's epoll loop is
 * woken). Each request carries its arrival time, which the answer brings back. Turns of ours and the peer's alternate;
 * each reports p50, p99 and the CPU time of each side's two threads (client and server), and the ratios are the
 * medians of the turns' ratios, as vertx-http --rate reports them.
 */
final class OpenLoopLatency {
    private static final int PORT = 7;
    private static final int SERVER_NODE = 0;
    private static final int CLIENT_NODE = 1;
    /** Requests handed over and not yet sent that the harness lets wait before it waits itself. */
    private static final int BACKLOG = 4096;
    /** Requests a client sends before it looks for answers again. */
    private static final int BATCH = 16;

    private final String test;
    private final boolean tcp;
    private final double rate;
    private final double seconds;
    private final int turns;
    private final int size;
    private final Datapath.Idle idle;

    OpenLoopLatency(String test, boolean tcp, double rate, double seconds, int turns, int size, Datapath.Idle idle) {
        if (!(rate > 0) || !(seconds > 0) || turns < 1 || size < 8) {
            throw new IllegalArgumentException("--rate takes requests per second above 0, -t seconds above 0, --turns at least 1"
                    + " and -s at least 8 bytes (the arrival time rides in the request); got " + rate + ", " + seconds + ", "
                    + turns + ", " + size);
        }
        this.test = test;
        this.tcp = tcp;
        this.rate = rate;
        this.seconds = seconds;
        this.turns = turns;
        this.size = size;
        this.idle = idle;
    }

    /** One turn's figures. */
    private record Result(double rate, long p50, long p99, double cpuClient, double cpuServer, long lost) {
        double cpu() {
            return cpuClient + cpuServer;
        }
    }

    /**
     * The client side of a transport under test: takes requests from the harness's thread and answers each into the
     * turn running; its two threads (client, server) are timed for CPU.
     */
    private abstract static class Side implements AutoCloseable {
        final String key;
        volatile OpenLoop turn;
        private final long[] arrivals = new long[BACKLOG];
        private volatile long published;
        /** How many of the published the client thread has sent (its thread only, read by the harness to bound the backlog). */
        volatile long sent;
        Thread client;
        Thread server;

        Side(String key) {
            this.key = key;
        }

        /** On the harness's thread: the request that arrived at {@code at} goes to the client's thread. */
        final void request(long at) {
            long p = published;
            while (p - sent >= BACKLOG) {
                Thread.onSpinWait(); // the client is that far behind: the harness waits, and the arrival's time counts it
            }
            arrivals[(int) (p % BACKLOG)] = at;
            published = p + 1;
            handOver();
        }

        /**
         * On the client's thread: up to {@code limit} of the arrival times handed over and not yet sent, each sent by
         * {@code send} (false: no room for it now); returns whether more wait.
         */
        final boolean sendPublished(java.util.function.LongPredicate send, int limit) {
            long p = published;
            long s = sent;
            for (long end = Math.min(p, s + limit); s < end; s++) {
                if (!send.test(arrivals[(int) (s % BACKLOG)])) {
                    break; // no room now: this one goes first next time
                }
                sent = s + 1;
            }
            return s < p;
        }

        /** Wakes the client's thread for what was published. */
        abstract void handOver();

        Result measure(OpenLoop t) throws Exception {
            turn = t;
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long c0 = mx.getThreadCpuTime(client.threadId());
            long s0 = mx.getThreadCpuTime(server.threadId());
            long t0 = System.nanoTime();
            try {
                t.run(this::request);
            } catch (IllegalStateException e) {
                throw new IllegalStateException(key + ": " + e.getMessage(), e);
            }
            double elapsed = System.nanoTime() - t0;
            return new Result(t.offered(), t.p50(), t.p99(), (mx.getThreadCpuTime(client.threadId()) - c0) / elapsed,
                    (mx.getThreadCpuTime(server.threadId()) - s0) / elapsed, t.lost());
        }
    }

    int run(boolean json) throws Exception {
        Path fabric = PerfRunner.freshFabricPath("perf-open");
        if (Files.exists(fabric)) {
            throw new IllegalStateException("fabric file " + fabric + " exists");
        }
        List<Side> sides = new ArrayList<>();
        try {
            sides.add(tcp ? new OursTcp(fabric) : new OursUdp(fabric));
            sides.add(tcp ? new LinuxTcp() : new LinuxUdp());
            for (Side side : sides) { // warm-up, not counted: the JIT compiles both sides' paths
                side.measure(new OpenLoop(Math.max(rate, 10_000), 1.0, !tcp));
            }
            List<List<Result>> results = List.of(new ArrayList<>(), new ArrayList<>());
            for (int i = 0; i < turns; i++) {
                for (int k = 0; k < sides.size(); k++) {
                    results.get(k).add(sides.get(k).measure(new OpenLoop(rate, seconds, !tcp)));
                }
            }
            report(results.get(0), results.get(1), json);
        } finally {
            for (Side side : sides) {
                side.close();
            }
            Files.deleteIfExists(fabric);
        }
        return 0;
    }

    private void report(List<Result> ours, List<Result> peer, boolean json) {
        int n = ours.size();
        double[] p50 = new double[n];
        double[] p99 = new double[n];
        double[] cpu = new double[n];
        for (int i = 0; i < n; i++) {
            p50[i] = (double) ours.get(i).p50() / peer.get(i).p50();
            p99[i] = (double) ours.get(i).p99() / peer.get(i).p99();
            cpu[i] = ours.get(i).cpu() / peer.get(i).cpu();
        }
        Result o = median(ours);
        Result p = median(peer);
        System.out.printf(Locale.ROOT, "%s --rate %.0f: %d-byte %s echo, open loop (Poisson arrivals, each timed from its arrival),"
                        + " %d turns of %.1f s each, one process; ours: two nodes' datapaths (idle %s); peer: Linux %s over"
                        + " loopback, each side a thread blocking in epoll%n", test, rate, size, tcp ? "TCP" : "UDP", turns, seconds,
                describe(idle), tcp ? "TCP" : "UDP");
        for (int i = 0; i < n; i++) {
            System.out.printf(Locale.ROOT, "  turn %d: ours %s; linux %s%n", i + 1, show(ours.get(i)), show(peer.get(i)));
        }
        System.out.printf(Locale.ROOT, "  median: ours %s; linux %s%n", show(o), show(p));
        System.out.printf(Locale.ROOT, "  against linux: p50 ratio %s, p99 ratio %s, CPU ratio %s (medians of the turns' ratios)%n",
                JsonNumber.orNa(Turns.median(p50), 2), JsonNumber.orNa(Turns.median(p99), 2), JsonNumber.orNa(Turns.median(cpu), 2));
        if (json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"open_loop\":true,\"rate\":%s,\"bytes\":%d,\"turns\":%d,\"ours\":%s,"
                            + "\"peer\":%s,\"latency_ratio\":%s,\"p99_ratio\":%s,\"cpu_ratio\":%s}%n", test, JsonNumber.of(rate, 1), size,
                    n, json(o), json(p), JsonNumber.of(Turns.median(p50), 4), JsonNumber.of(Turns.median(p99), 4),
                    JsonNumber.of(Turns.median(cpu), 4));
        }
    }

    private static String describe(Datapath.Idle idle) {
        return idle.adapts() ? String.format(Locale.ROOT, "adaptive, polling at most %d us", idle.yieldNs() / 1000)
                : String.format(Locale.ROOT, "fixed, spin %d us, yield to %d us", idle.spinNs() / 1000, idle.yieldNs() / 1000);
    }

    private static String show(Result r) {
        return String.format(Locale.ROOT, "%,.0f/s p50 %.1f us p99 %.1f us, CPU %.3f cores (client %.3f, server %.3f)%s", r.rate(),
                r.p50() / 1e3, r.p99() / 1e3, r.cpu(), r.cpuClient(), r.cpuServer(), r.lost() > 0 ? ", " + r.lost() + " lost" : "");
    }

    private static String json(Result r) {
        return String.format(Locale.ROOT, "{\"msgs_s\":%s,\"p50_ns\":%d,\"p99_ns\":%d,\"cpu\":%s,\"cpu_client\":%s,\"cpu_server\":%s,"
                + "\"lost\":%d}", JsonNumber.of(r.rate(), 1), r.p50(), r.p99(), JsonNumber.of(r.cpu(), 4), JsonNumber.of(r.cpuClient(), 4),
                JsonNumber.of(r.cpuServer(), 4), r.lost());
    }

    private static Result median(List<Result> rs) {
        double[] rate = new double[rs.size()];
        double[] p50 = new double[rs.size()];
        double[] p99 = new double[rs.size()];
        double[] c = new double[rs.size()];
        double[] s = new double[rs.size()];
        long lost = 0;
        for (int i = 0; i < rs.size(); i++) {
            lost += rs.get(i).lost();
            rate[i] = rs.get(i).rate();
            p50[i] = rs.get(i).p50();
            p99[i] = rs.get(i).p99();
            c[i] = rs.get(i).cpuClient();
            s[i] = rs.get(i).cpuServer();
        }
        return new Result(Turns.median(rate), (long) Turns.median(p50), (long) Turns.median(p99), Turns.median(c), Turns.median(s), lost);
    }

    // ---- ours: two nodes' datapaths --------------------------------------------------------

    /** Two nodes on {@code fabric}; the subclass sets up echo and client before their datapaths start. */
    private abstract class Ours extends Side {
        final FabricStack serverStack;
        final FabricStack clientStack;
        final MemorySegment payload = Arena.ofAuto().allocate(Math.max(size, 8), 8);
        /** The one task that sends what was handed over (queued as often as handed over; a run may find none left). */
        final Runnable sendTask = this::sendSome;
        private final java.util.function.LongPredicate sender = this::send;

        /**
         * Sends a batch of what waits; more wait for the next round, after the loop has polled its ring: a client that
         * sent all of a long backlog at once would fill the server's ring while the echoes fill its own.
         */
        private void sendSome() {
            if (sendPublished(sender, BATCH)) {
                clientStack.datapath().post(sendTask);
            }
        }

        Ours(Path fabric) {
            super("ours");
            // The server waits for room in the client's ring (its echo is not dropped while the client is busy).
            serverStack = FabricStack.open(StackConfig.defaults(fabric, SERVER_NODE).withIdle(idle)
                    .withIp(IpConfig.fabricPlan(SERVER_NODE).withSendWait(1_000_000_000L)));
            // The client never waits for room in the server's ring (the server may be waiting for room in the client's):
            // a request that finds it full is sent on a later round, after the loop has taken its echoes.
            clientStack = FabricStack.open(StackConfig.defaults(fabric, CLIENT_NODE).withIdle(idle)
                    .withIp(IpConfig.fabricPlan(CLIENT_NODE).withSendWait(0)));
        }

        /** Starts both datapaths on threads of their own, once the subclass has set up. */
        final void start() throws Exception {
            serverStack.datapath().start();
            clientStack.datapath().start();
            server = threadOf(serverStack.datapath());
            client = threadOf(clientStack.datapath());
        }

        private Thread threadOf(Datapath d) throws Exception {
            CompletableFuture<Thread> t = new CompletableFuture<>();
            d.execute(() -> t.complete(Thread.currentThread()));
            return t.get(10, TimeUnit.SECONDS);
        }

        int serverIp() {
            return IpConfig.fabricPlan(SERVER_NODE).address();
        }

        /** Sends the request that arrived at {@code arrival}; false if there is no room for it now. */
        abstract boolean send(long arrival);

        @Override
        void handOver() {
            clientStack.datapath().execute(sendTask);
        }

        @Override
        public void close() {
            clientStack.close();
            serverStack.close();
        }
    }

    private final class OursUdp extends Ours {
        private final int clientPort;

        OursUdp(Path fabric) throws Exception {
            super(fabric);
            serverStack.ip().bindUdp(PORT, (src, srcPort, dst, mem, off, len) -> {
                int rc = serverStack.ip().sendUdp(PORT, src, srcPort, mem, off, len);
                if (rc != SendStatus.OK) {
                    turn.failed(new IllegalStateException("ours: the server's echo failed: " + SendStatus.describe(rc)));
                }
            });
            clientPort = clientStack.ip().bindUdp(0, (src, srcPort, dst, mem, off, len) -> {
                if (len >= 8) {
                    turn.answered(mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off));
                }
            });
            start();
        }

        @Override
        boolean send(long arrival) {
            payload.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, arrival);
            int rc = clientStack.ip().sendUdp(clientPort, serverIp(), PORT, payload, 0, size);
            if (rc == FabricDevice.BACK_PRESSURED) {
                return false;
            }
            if (rc != SendStatus.OK) {
                turn.failed(new IllegalStateException("UDP send failed: " + SendStatus.describe(rc)));
            }
            return true;
        }
    }

    private final class OursTcp extends Ours {
        private final MemorySegment scratch = Arena.ofAuto().allocate(1 << 16);
        private final MemorySegment answer = Arena.ofAuto().allocate(Math.max(size, 8), 8);
        private int have;
        private TcpConnection connection;

        OursTcp(Path fabric) throws Exception {
            super(fabric);
            TcpConfig config = TcpConfig.defaults(serverStack.link().mtu()).withNoDelay(true); // as Vert.x and Netty set it
            TcpConnection.Events echo = new TcpConnection.Events() {
                @Override
                public void onReadable(TcpConnection c) {
                    for (int n; (n = c.read(scratch, 0, (int) scratch.byteSize(), System.nanoTime())) > 0; ) {
                        c.write(scratch, 0, n, System.nanoTime());
                    }
                }
            };
            serverStack.tcp().listen(PORT, 16, config, c -> serverStack.tcp().setEvents(c, echo));
            start();
            CompletableFuture<TcpConnection> up = new CompletableFuture<>();
            clientStack.datapath().execute(() -> clientStack.tcp().connect(serverIp(), PORT, config, new TcpConnection.Events() {
                @Override
                public void onEstablished(TcpConnection c) {
                    up.complete(c);
                }

                @Override
                public void onReadable(TcpConnection c) {
                    read(c);
                }
            }, System.nanoTime()));
            connection = up.get(10, TimeUnit.SECONDS);
        }

        /** Reads the echoes, {@code size} bytes each, whatever the segments' boundaries. */
        private void read(TcpConnection c) {
            for (int n; (n = c.read(answer, have, size - have, System.nanoTime())) > 0; ) {
                have += n;
                if (have == size) {
                    turn.answered(answer.get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
                    have = 0;
                }
            }
        }

        @Override
        boolean send(long arrival) {
            payload.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, arrival);
            int n = connection.write(payload, 0, size, System.nanoTime());
            if (n != size) {
                turn.failed(new IllegalStateException("TCP send buffer full: " + n + " of " + size + " bytes taken"));
            }
            return true;
        }
    }

    // ---- the peer: Linux over loopback, each side blocking in epoll --------------------------------

    /** Two threads each looping on a Selector (epoll_wait), the server echoing, the client sending what is handed over. */
    private abstract class Linux extends Side {
        private volatile boolean running = true;
        final Selector serverSelector = Selector.open();
        final Selector clientSelector = Selector.open();
        final ByteBuffer out = ByteBuffer.allocateDirect(Math.max(size, 8)).order(ByteOrder.nativeOrder());
        final ByteBuffer in = ByteBuffer.allocateDirect(1 << 16).order(ByteOrder.nativeOrder());

        Linux() throws IOException {
            super("linux");
        }

        final void start() {
            server = Thread.ofPlatform().daemon().name("linux-server").start(() -> loop(serverSelector, this::serve));
            client = Thread.ofPlatform().daemon().name("linux-client").start(() -> loop(clientSelector, this::clientRound));
        }

        private void loop(Selector selector, IoRound round) {
            try {
                while (running) {
                    selector.select(); // epoll_wait, until a socket is ready or a wake-up
                    selector.selectedKeys().clear();
                    round.run();
                }
            } catch (IOException e) {
                OpenLoop t = turn;
                if (t != null) {
                    t.failed(e);
                }
                System.err.println("nupa: the Linux peer's loop failed: " + e);
            }
        }

        private void clientRound() throws IOException {
            receive();
            while (sendPublished(arrival -> {
                out.clear().putLong(0, arrival);
                try {
                    write(out);
                } catch (IOException e) {
                    turn.failed(e);
                }
                return true;
            }, BATCH)) {
                receive(); // a long backlog: the echoes are read between batches
            }
        }

        abstract void serve() throws IOException;

        abstract void receive() throws IOException;

        abstract void write(ByteBuffer b) throws IOException;

        @Override
        void handOver() {
            clientSelector.wakeup();
        }

        @Override
        public void close() throws Exception {
            running = false;
            serverSelector.wakeup();
            clientSelector.wakeup();
            if (server != null) {
                server.join(5_000);
                client.join(5_000);
            }
            serverSelector.close();
            clientSelector.close();
        }
    }

    @FunctionalInterface
    private interface IoRound {
        void run() throws IOException;
    }

    private final class LinuxUdp extends Linux {
        private final DatagramChannel echo = DatagramChannel.open();
        private final DatagramChannel socket = DatagramChannel.open();

        LinuxUdp() throws IOException {
            echo.bind(new InetSocketAddress("127.0.0.1", 0)).configureBlocking(false);
            echo.register(serverSelector, SelectionKey.OP_READ);
            socket.bind(new InetSocketAddress("127.0.0.1", 0)).connect(echo.getLocalAddress()).configureBlocking(false);
            socket.register(clientSelector, SelectionKey.OP_READ);
            start();
        }

        private final ByteBuffer serverBuffer = ByteBuffer.allocateDirect(1 << 16);

        @Override
        void serve() throws IOException {
            for (java.net.SocketAddress from; (from = echo.receive(serverBuffer.clear())) != null; ) {
                if (echo.send(serverBuffer.flip(), from) == 0) {
                    turn.failed(new IllegalStateException("linux: the server's echo found no room in its socket's send buffer"));
                }
            }
        }

        @Override
        void receive() throws IOException {
            while (socket.read(in.clear()) >= 8) {
                turn.answered(in.getLong(0));
            }
        }

        @Override
        void write(ByteBuffer b) throws IOException {
            if (socket.write(b) == 0) {
                turn.failed(new IllegalStateException("linux: the client's request found no room in its socket's send buffer"));
            }
        }

        @Override
        public void close() throws Exception {
            super.close();
            echo.close();
            socket.close();
        }
    }

    private final class LinuxTcp extends Linux {
        private final ServerSocketChannel listener = ServerSocketChannel.open();
        private final SocketChannel accepted;
        private final SocketChannel socket;
        private final ByteBuffer serverBuffer = ByteBuffer.allocateDirect(1 << 16);
        private final ByteBuffer answer = ByteBuffer.allocateDirect(Math.max(size, 8)).order(ByteOrder.nativeOrder());

        LinuxTcp() throws IOException {
            listener.bind(new InetSocketAddress("127.0.0.1", 0));
            socket = SocketChannel.open(listener.getLocalAddress());
            accepted = listener.accept();
            for (SocketChannel s : List.of(socket, accepted)) {
                s.setOption(StandardSocketOptions.TCP_NODELAY, true); // as Vert.x and Netty set it
                s.configureBlocking(false);
            }
            accepted.register(serverSelector, SelectionKey.OP_READ);
            socket.register(clientSelector, SelectionKey.OP_READ);
            start();
        }

        @Override
        void serve() throws IOException {
            while (accepted.read(serverBuffer.clear()) > 0) {
                writeAll(accepted, serverBuffer.flip());
            }
        }

        @Override
        void receive() throws IOException {
            while (socket.read(answer) > 0) {
                if (!answer.hasRemaining()) {
                    turn.answered(answer.getLong(0));
                    answer.clear();
                }
            }
        }

        @Override
        void write(ByteBuffer b) throws IOException {
            writeAll(socket, b);
        }

        /** Writes all of {@code b} (echoes are small: a full send buffer is not waited on in epoll but spun through). */
        private void writeAll(ByteChannel c, ByteBuffer b) throws IOException {
            while (b.hasRemaining()) {
                c.write(b);
            }
        }

        @Override
        public void close() throws Exception {
            super.close();
            socket.close();
            accepted.close();
            listener.close();
        }
    }
}
