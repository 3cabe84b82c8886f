package dev.nupa.perf;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.HdrHistogram.Histogram;

import com.google.protobuf.ByteString;

import dev.nupa.examples.HelloServer;
import dev.nupa.examples.grpc.GreeterGrpcClient;
import dev.nupa.examples.grpc.HelloRequest;
import dev.nupa.l2.Datapath;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.core.transport.Transport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf vertx-http | vertx-echo | vertx-udp | vertx-grpc`: one Vert.x application (a server instance and a
 * client instance, one event loop each, or {@code --loops} for vertx-http) run over the NUPA transport, two fabric nodes on a fresh
 * fabric file, and over Vert.x's epoll transport on Linux loopback, in turns within one process.
 * vertx-http: HTTP/1.1 keep-alive request/response, {@code -c} connections each with one request
 * outstanding (requests/s, p50, p99); vertx-echo: one NetSocket streaming {@code -s}-byte buffers
 * through a pipeTo echo (Gbit/s echoed); vertx-udp: {@code -s}-byte datagrams echoed by a
 * DatagramSocket with a window of {@code -w} outstanding (datagrams/s); vertx-grpc: unary calls of the
 * examples' Greeter ({@code -s}-byte payload, {@code -c} calls outstanding; calls/s, p50, p99). The
 * ratio is the median over the turns of each turn's ours/peer.
 */
abstract class VertxPerf implements Callable<Integer> {
    enum Kind { HTTP, ECHO, UDP, GRPC }

    @Command(name = "vertx-http", mixinStandardHelpOptions = true,
            description = "Vert.x HTTP/1.1 keep-alive requests over the fabric beside Vert.x on epoll over loopback.")
    static final class Http extends VertxPerf {
        Http() {
            super("vertx-http", Kind.HTTP, 16);
        }
    }

    @Command(name = "vertx-echo", mixinStandardHelpOptions = true,
            description = "Vert.x NetSocket bulk echo (pipeTo) over the fabric beside Vert.x on epoll over loopback.")
    static final class Echo extends VertxPerf {
        Echo() {
            super("vertx-echo", Kind.ECHO, 65_536);
        }
    }

    @Command(name = "vertx-grpc", mixinStandardHelpOptions = true,
            description = "Vert.x gRPC unary calls (the examples' Greeter.SayHello) over the fabric beside Vert.x on epoll over loopback.")
    static final class Grpc extends VertxPerf {
        Grpc() {
            super("vertx-grpc", Kind.GRPC, 16);
        }
    }

    @Command(name = "vertx-udp", mixinStandardHelpOptions = true,
            description = "Vert.x DatagramSocket echo over the fabric beside Vert.x on epoll over loopback.")
    static final class Udp extends VertxPerf {
        Udp() {
            super("vertx-udp", Kind.UDP, 64);
        }
    }

    @Option(names = {"-t", "--time"}, paramLabel = "SECONDS", defaultValue = "2", description = "Seconds per turn (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "3", description = "Turns of each transport (default: ${DEFAULT-VALUE}).")
    int turns;

    @Option(names = "--warmup-time", paramLabel = "SECONDS", defaultValue = "1.5",
            description = "Seconds of each of the two warm-up turns per transport, not counted (default: ${DEFAULT-VALUE}).")
    double warmupSeconds;

    @Option(names = {"-c", "--connections"}, paramLabel = "N", defaultValue = "1",
            description = "vertx-http: connections, one request outstanding on each (default: ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--loops", paramLabel = "N", defaultValue = "1",
            description = "vertx-http: event loops of each instance, ours and the peer's; the server runs as N verticle"
                    + " instances and the -c connections are spread over the client's N loops (default: ${DEFAULT-VALUE}).")
    int loops;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", description = "Body, buffer or datagram size (default: 16 / 65536 / 64).")
    Integer size;

    @Option(names = {"-w", "--window"}, paramLabel = "N", defaultValue = "16", description = "vertx-udp: datagrams outstanding (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--report", paramLabel = "DIR", description = "Write a report of the run into DIR (report.html with the rates"
            + " over time, timeline.csv, summary.json; docs/tracing.md).")
    Path report;

    @Option(names = "--json", description = "Print one JSON object on the last line.")
    boolean json;

    @Option(names = "--idle", paramLabel = "SPIN_US,YIELD_US",
            description = "How our event loops idle: spin, then yield, then sleep on the fabric's interrupt (default: the transport's).")
    String idleSpec;

    @Option(names = "--fabric", paramLabel = "PATH", description = "Fabric file to create and remove (default: a fresh one in /dev/shm).")
    Path fabric;

    private final String name;
    private final Kind kind;
    private final int defaultSize;

    VertxPerf(String name, Kind kind, int defaultSize) {
        this.name = name;
        this.kind = kind;
        this.defaultSize = defaultSize;
    }

    /**
     * One turn's result: a rate (requests, Gbit/s or datagrams per second), the latency if measured,
     * how many messages (requests, buffers, datagrams) it moved, and the bytes both event-loop
     * threads allocated per message (the JVM's thread allocation counter).
     */
    record Result(double rate, long p50Ns, long p99Ns, long messages, double allocPerMessage) {
        Result(double rate, long p50Ns, long p99Ns, long messages) {
            this(rate, p50Ns, p99Ns, messages, Double.NaN);
        }
    }

    @Override
    public Integer call() throws Exception {
        int sz = size != null ? size : defaultSize;
        if (seconds <= 0 || turns < 1 || connections < 1 || window < 1 || sz < 1 || (kind == Kind.UDP && sz > 65_507)) {
            throw new IllegalArgumentException("need -t > 0, --turns >= 1, -c >= 1, -w >= 1 and -s >= 1 (at most 65507 for UDP)");
        }
        if (loops < 1 || loops > StackConfig.MAX_LOOPS || (loops > 1 && kind != Kind.HTTP) || connections < loops) {
            throw new IllegalArgumentException("--loops takes 1.." + StackConfig.MAX_LOOPS + ", more than 1 for vertx-http only,"
                    + " and at most as many as -c connections; got " + loops);
        }
        Path f = fabric != null ? fabric : PerfRunner.freshFabricPath("perf-vertx");
        if (Files.exists(f)) {
            throw new IllegalArgumentException("fabric file " + f + " exists; give a fresh path with --fabric");
        }
        Datapath.Idle idle = idle();
        StackConfig server = StackConfig.defaults(f, 0).withIdle(idle).withLoops(loops);
        Vertx ourServer = NupaVertx.create(server);
        Vertx ourClient = NupaVertx.create(StackConfig.defaults(f, 1).withIdle(idle).withLoops(loops));
        VertxOptions same = new VertxOptions().setEventLoopPoolSize(loops);
        Vertx peerServer = Vertx.builder().with(same).withTransport(Transport.EPOLL).build();
        Vertx peerClient = Vertx.builder().with(same).withTransport(Transport.EPOLL).build();
        String peerName = peerServer.isNativeTransportEnabled() ? "Vert.x epoll over loopback" : "Vert.x NIO over loopback (epoll unavailable)";
        Workload ours = null;
        Workload peer = null;
        try {
            ours = workload(ourServer, ourClient, "10.0.0.1", sz);
            peer = workload(peerServer, peerClient, "127.0.0.1", sz);
            List<Thread> ourLoops = loops(ourServer, ourClient);
            List<Thread> peerLoops = loops(peerServer, peerClient);
            // Warm-up, not counted: both sides twice, alternating, since the two transports share Vert.x's and
            // Netty's code in this JVM and each side's first turn after the other's recompiles the call sites both use.
            for (int i = 0; i < 2; i++) {
                ours.run(warmupSeconds);
                peer.run(warmupSeconds);
            }
            List<Result> o = new ArrayList<>();
            List<Result> p = new ArrayList<>();
            PerfReport r = report != null ? PerfReport.open(report, name) : null;
            if (r != null) {
                r.rates(kind == Kind.HTTP ? "requests/s" : kind == Kind.GRPC ? "calls/s" : kind == Kind.ECHO ? "Gbit/s echoed"
                        : "datagrams/s", "ours", peerServer.isNativeTransportEnabled() ? "epoll" : "nio");
            }
            for (int i = 0; i < turns; i++) {
                o.add(measured(ours, ourLoops));
                p.add(measured(peer, peerLoops));
                if (r != null) {
                    r.rate(0, o.getLast().rate());
                    r.rate(1, p.getLast().rate());
                }
            }
            if (r != null) {
                r.write(false);
            }
            report(sz, peerName, o, p);
        } finally {
            for (Workload w : new Workload[] {ours, peer}) {
                if (w != null) {
                    w.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                }
            }
            CompletableFuture.allOf(ourClient.close().toCompletionStage().toCompletableFuture(),
                    peerClient.close().toCompletionStage().toCompletableFuture()).get(10, TimeUnit.SECONDS);
            CompletableFuture.allOf(ourServer.close().toCompletionStage().toCompletableFuture(),
                    peerServer.close().toCompletionStage().toCompletableFuture()).get(10, TimeUnit.SECONDS);
            Files.deleteIfExists(f);
        }
        return 0;
    }

    /** A turn, with the bytes the event loops allocated during it per message moved. */
    private Result measured(Workload w, List<Thread> loops) throws Exception {
        long before = allocated(loops);
        Result r = w.run(seconds);
        long after = allocated(loops);
        return new Result(r.rate(), r.p50Ns(), r.p99Ns(), r.messages(),
                r.messages() > 0 ? (double) (after - before) / r.messages() : Double.NaN);
    }

    /** The event-loop threads of the instances (each runs one task to say which thread it is). */
    private static List<Thread> loops(Vertx... instances) throws Exception {
        List<Thread> threads = new ArrayList<>();
        for (Vertx v : instances) {
            for (io.netty.util.concurrent.EventExecutor e : ((io.vertx.core.internal.VertxInternal) v).nettyEventLoopGroup()) {
                threads.add(e.submit(Thread::currentThread).get(10, TimeUnit.SECONDS));
            }
        }
        return threads;
    }

    private static long allocated(List<Thread> threads) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : threads) {
            sum += mx.getThreadAllocatedBytes(t.threadId());
        }
        return sum;
    }

    private Datapath.Idle idle() {
        if (idleSpec == null) {
            return StackConfig.defaults(Path.of("unused"), 0).idle();
        }
        String[] p = idleSpec.split(",");
        if (p.length != 2) {
            throw new IllegalArgumentException("--idle takes SPIN_US,YIELD_US (e.g. 50,1000), not " + idleSpec);
        }
        long spin = Long.parseLong(p[0].trim()) * 1000;
        long yield = Long.parseLong(p[1].trim()) * 1000;
        return new Datapath.Idle(spin, yield, 10_000_000L);
    }

    private void report(int sz, String peerName, List<Result> ours, List<Result> peer) {
        double[] ratios = new double[ours.size()];
        double[] latencyRatios = new double[ours.size()];
        for (int i = 0; i < ratios.length; i++) {
            ratios[i] = ours.get(i).rate() / peer.get(i).rate();
            latencyRatios[i] = peer.get(i).p50Ns() > 0 ? (double) ours.get(i).p50Ns() / peer.get(i).p50Ns() : Double.NaN;
        }
        Result o = median(ours);
        Result p = median(peer);
        double ratio = Turns.median(ratios);
        double latencyRatio = Turns.median(latencyRatios);
        String unit = kind == Kind.HTTP ? "requests/s" : kind == Kind.GRPC ? "calls/s" : kind == Kind.ECHO ? "Gbit/s echoed" : "datagrams/s";
        System.out.printf(Locale.ROOT, "%s: %d B, %s, %d turns of %.1f s each; peer: %s%n", name, sz,
                kind == Kind.HTTP ? connections + " connection(s)" + (loops > 1 ? " over " + loops + " event loops a side" : ""): kind == Kind.GRPC ? connections + " call(s) outstanding"
                        : kind == Kind.UDP ? "window " + window : "1 connection",
                turns, seconds, peerName);
        for (int i = 0; i < ours.size(); i++) {
            System.out.printf(Locale.ROOT, "  turn %d: ours %s, peer %s, ratio %.2f%n", i + 1, show(ours.get(i)),
                    show(peer.get(i)), ratios[i]);
        }
        System.out.printf(Locale.ROOT, "  median: ours %s, peer %s (%s); ratio %.2f (median of the turns' ratios)%s%n",
                show(o), show(p), unit, ratio, kind == Kind.ECHO ? "" : String.format(Locale.ROOT, ", p50 ratio %.2f", latencyRatio));
        if (json) {
            String rateKey = kind == Kind.ECHO ? "gbit_s" : "msgs_s";
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"size\":%d,\"connections\":%d,\"loops\":%d,\"turns\":%d,"
                            + "\"ours\":{\"%s\":%.3f,\"p50_ns\":%d,\"p99_ns\":%d,\"alloc_b\":%.0f},"
                            + "\"peer\":{\"%s\":%.3f,\"p50_ns\":%d,\"p99_ns\":%d,\"alloc_b\":%.0f},"
                            + "\"ratio\":%.4f,\"latency_ratio\":%s}%n",
                    name, sz, kind == Kind.HTTP || kind == Kind.GRPC ? connections : 1, loops, turns, rateKey, o.rate(), o.p50Ns(), o.p99Ns(), o.allocPerMessage(),
                    rateKey, p.rate(), p.p50Ns(), p.p99Ns(), p.allocPerMessage(), ratio, Double.isNaN(latencyRatio) ? "null" : String.format(Locale.ROOT, "%.4f", latencyRatio));
        }
    }

    private String show(Result r) {
        String rate = kind == Kind.ECHO ? String.format(Locale.ROOT, "%.2f Gbit/s", r.rate())
                : String.format(Locale.ROOT, "%,.0f/s", r.rate());
        String lat = r.p50Ns() > 0 ? String.format(Locale.ROOT, " p50 %.1f us p99 %.1f us", r.p50Ns() / 1e3, r.p99Ns() / 1e3) : "";
        return String.format(Locale.ROOT, "%s%s, %.0f B allocated per %s", rate, lat, r.allocPerMessage(),
                kind == Kind.HTTP ? "request" : kind == Kind.GRPC ? "call" : kind == Kind.ECHO ? "buffer" : "datagram");
    }

    private static Result median(List<Result> rs) {
        double[] rate = new double[rs.size()];
        double[] p50 = new double[rs.size()];
        double[] p99 = new double[rs.size()];
        for (int i = 0; i < rs.size(); i++) {
            rate[i] = rs.get(i).rate();
            p50[i] = rs.get(i).p50Ns();
            p99[i] = rs.get(i).p99Ns();
        }
        double[] alloc = new double[rs.size()];
        for (int i = 0; i < rs.size(); i++) {
            alloc[i] = rs.get(i).allocPerMessage();
        }
        return new Result(Turns.median(rate), (long) Turns.median(p50), (long) Turns.median(p99), 0, Turns.median(alloc));
    }

    /** The application: set up once on a server and a client instance, then run for a given time, turn after turn. */
    interface Workload {
        Result run(double seconds) throws Exception;

        /** Closes the client's connections and sockets (Vert.x waits out a grace period for any left open). */
        Future<?> close();
    }

    private Workload workload(Vertx server, Vertx client, String host, int sz) throws Exception {
        return switch (kind) {
            case HTTP -> http(server, client, host, sz);
            case ECHO -> echo(server, client, host, sz);
            case UDP -> udp(server, client, host, sz);
            case GRPC -> grpc(server, client, host, sz);
        };
    }

    private static final int PORT = 7070;

    private Workload http(Vertx server, Vertx client, String host, int sz) throws Exception {
        Buffer body = Buffer.buffer(new byte[sz]);
        // One server verticle instance per event loop (Vert.x spreads the connections over them).
        server.deployVerticle(() -> new io.vertx.core.AbstractVerticle() {
            @Override
            public void start(io.vertx.core.Promise<Void> started) {
                vertx.createHttpServer().requestHandler(req -> req.response().end(body)).listen(PORT, "0.0.0.0")
                        .<Void>mapEmpty().onComplete(started);
            }
        }, new io.vertx.core.DeploymentOptions().setInstances(loops)).await(10, TimeUnit.SECONDS);
        // A client per loop, used from its own context only, so its connections live on that loop.
        List<Context> lanes = lanes(client);
        List<HttpClient> clients = new ArrayList<>();
        List<Supplier<Future<?>>> calls = new ArrayList<>();
        for (int k = 0; k < lanes.size(); k++) {
            HttpClient hc = client.createHttpClient(new PoolOptions().setHttp1MaxSize(share(k)));
            clients.add(hc);
            calls.add(() -> hc.request(HttpMethod.GET, PORT, host, "/").compose(req -> req.send().compose(HttpClientResponse::body)));
        }
        return closedLoop(lanes, () -> Future.all(clients.stream().map(HttpClient::close).toList()), calls);
    }

    /** One event-loop context of {@code client} per loop ({@code --loops}). */
    private List<Context> lanes(Vertx client) {
        List<Context> lanes = new ArrayList<>();
        for (int k = 0; k < loops; k++) {
            lanes.add(((io.vertx.core.internal.VertxInternal) client).createEventLoopContext());
        }
        return lanes;
    }

    /** The connections (callers) of lane {@code k}: {@code -c} dealt over the lanes. */
    private int share(int k) {
        return connections / loops + (k < connections % loops ? 1 : 0);
    }

    private Workload grpc(Vertx server, Vertx client, String host, int sz) throws Exception {
        HelloServer.startGreeter(server, PORT + 3).await(10, TimeUnit.SECONDS);
        GrpcClient grpc = GrpcClient.client(client);
        GreeterGrpcClient greeter = GreeterGrpcClient.create(grpc, SocketAddress.inetSocketAddress(PORT + 3, host));
        HelloRequest request = HelloRequest.newBuilder().setName("perf").setPayload(ByteString.copyFrom(new byte[sz])).build();
        return closedLoop(lanes(client), grpc::close, List.of(() -> greeter.sayHello(request)));
    }

    /**
     * Request/response in a closed loop: {@code -c} callers dealt over the client's {@code lanes} (event-loop
     * contexts), each making the next call of its lane when its last one answered, until the turn ends; each
     * call's time is recorded in its lane's histogram, and the lanes' are added up at the end.
     */
    private Workload closedLoop(List<Context> lanes, Supplier<Future<?>> close, List<Supplier<Future<?>>> calls) {
        return new Workload() {
            @Override
            public Future<?> close() {
                return close.get();
            }

            @Override
            public Result run(double secs) throws Exception {
                CompletableFuture<Void> done = new CompletableFuture<>();
                long end = System.nanoTime() + (long) (secs * 1e9);
                java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger(connections);
                Histogram[] hs = new Histogram[lanes.size()];
                long[][] counts = new long[lanes.size()][1];
                for (int k = 0; k < lanes.size(); k++) {
                    Histogram h = hs[k] = LatencyStats.newHistogram();
                    long[] count = counts[k];
                    Supplier<Future<?>> call = calls.get(Math.min(k, calls.size() - 1));
                    int callers = share(k);
                    lanes.get(k).runOnContext(v -> {
                        for (int i = 0; i < callers; i++) {
                            next(call, h, count, end, running, done);
                        }
                    });
                }
                long started = System.nanoTime();
                done.get((long) (secs * 1000) + 30_000, TimeUnit.MILLISECONDS);
                double elapsed = (System.nanoTime() - started) / 1e9;
                Histogram h = hs[0];
                long count = counts[0][0];
                for (int k = 1; k < hs.length; k++) {
                    h.add(hs[k]);
                    count += counts[k][0];
                }
                return new Result(count / elapsed, h.getValueAtPercentile(50), h.getValueAtPercentile(99), count);
            }
        };
    }

    private static void next(Supplier<Future<?>> call, Histogram h, long[] count, long end,
                             java.util.concurrent.atomic.AtomicInteger running, CompletableFuture<Void> done) {
        long t0 = System.nanoTime();
        call.get().onComplete(ar -> {
            long now = System.nanoTime();
            if (ar.failed()) {
                done.completeExceptionally(ar.cause());
                return;
            }
            h.recordValue(now - t0);
            count[0]++;
            if (now < end) {
                next(call, h, count, end, running, done);
            } else if (running.decrementAndGet() == 0) {
                done.complete(null);
            }
        });
    }

    private Workload echo(Vertx server, Vertx client, String host, int sz) throws Exception {
        server.createNetServer().connectHandler(s -> s.pipeTo(s)).listen(PORT + 1, "0.0.0.0").await(10, TimeUnit.SECONDS);
        NetClient nc = client.createNetClient();
        NetSocket socket = nc.connect(PORT + 1, host).await(10, TimeUnit.SECONDS);
        Buffer chunk = Buffer.buffer(new byte[sz]);
        return new Workload() {
            @Override
            public Future<?> close() {
                return socket.close().eventually(() -> nc.close());
            }

            @Override
            public Result run(double secs) throws Exception {
            CompletableFuture<Double> done = new CompletableFuture<>();
            client.runOnContext(v -> {
                long[] received = {0};
                long[] sent = {0};
                long start = System.nanoTime();
                long end = start + (long) (secs * 1e9);
                boolean[] stopping = {false};
                Runnable[] pump = new Runnable[1];
                socket.handler(b -> {
                    received[0] += b.length();
                    if (stopping[0] && received[0] == sent[0]) {
                        done.complete(received[0] * 8 / ((System.nanoTime() - start) / 1e9) / 1e9);
                    }
                });
                pump[0] = () -> {
                    while (!socket.writeQueueFull()) {
                        if (System.nanoTime() >= end) {
                            stopping[0] = true; // everything sent comes back before the turn ends
                            if (received[0] == sent[0]) {
                                done.complete(received[0] * 8 / ((System.nanoTime() - start) / 1e9) / 1e9);
                            }
                            return;
                        }
                        socket.write(chunk);
                        sent[0] += sz;
                    }
                    socket.drainHandler(x -> pump[0].run());
                };
                pump[0].run();
            });
            double gbit = done.get((long) (secs * 1000) + 30_000, TimeUnit.MILLISECONDS);
            return new Result(gbit, 0, 0, (long) (gbit * 1e9 / 8 * secs / sz));
            }
        };
    }

    private Workload udp(Vertx server, Vertx client, String host, int sz) throws Exception {
        DatagramSocket echo = server.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(PORT + 2, "0.0.0.0").await(10, TimeUnit.SECONDS);
        DatagramSocket socket = client.createDatagramSocket();
        Buffer datagram = Buffer.buffer(new byte[sz]);
        long[] count = {0};
        long[] lastEcho = {0};
        boolean[] active = {false};
        socket.handler(p -> {
            count[0]++;
            lastEcho[0] = System.nanoTime();
            if (active[0]) {
                socket.send(datagram, PORT + 2, host); // one back, one out: the window stays full
            }
        });
        socket.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        return new Workload() {
            @Override
            public Future<?> close() {
                return socket.close().eventually(() -> echo.close());
            }

            @Override
            public Result run(double secs) throws Exception {
            CompletableFuture<Double> done = new CompletableFuture<>();
            client.runOnContext(v -> {
                long c0 = count[0];
                long start = System.nanoTime();
                active[0] = true;
                for (int i = 0; i < window; i++) {
                    socket.send(datagram, PORT + 2, host);
                }
                // A datagram lost (UDP may drop) shrinks the window: refill it when the echoes stop.
                long timer = client.setPeriodic(100, id -> {
                    if (System.nanoTime() - lastEcho[0] > 50_000_000L) {
                        for (int i = 0; i < window; i++) {
                            socket.send(datagram, PORT + 2, host);
                        }
                    }
                });
                client.setTimer((long) (secs * 1000), id -> {
                    active[0] = false; // the window drains: nothing is sent into the next turn
                    client.cancelTimer(timer);
                    done.complete((count[0] - c0) / ((System.nanoTime() - start) / 1e9));
                });
            });
            double rate = done.get((long) (secs * 1000) + 30_000, TimeUnit.MILLISECONDS);
            Thread.sleep(100); // the window in flight drains before the next turn
            return new Result(rate, 0, 0, (long) (rate * secs));
            }
        };
    }
}
