package dev.nupa.perf;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
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
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf vertx-http | vertx-echo | vertx-udp | vertx-grpc`: one Vert.x application (a server instance and a
 * client instance, one event loop each, or {@code --loops} for vertx-http and vertx-echo) run over the NUPA transport, two fabric nodes on a fresh
 * fabric file, and over each Linux peer ({@code --peers}: Vert.x on epoll and on io_uring over TCP loopback, Vert.x on
 * epoll over a Unix domain socket), in turns within one process.
 * vertx-http: HTTP/1.1 keep-alive request/response, {@code -c} connections each with one request
 * outstanding (requests/s, p50, p99); vertx-echo: {@code -c} NetSockets each streaming {@code -s}-byte buffers
 * through a pipeTo echo (Gbit/s echoed, all together); vertx-udp: {@code -s}-byte datagrams echoed by a
 * DatagramSocket with a window of {@code -w} outstanding (datagrams/s); vertx-grpc: unary calls of the
 * examples' Greeter ({@code -s}-byte payload, {@code -c} calls outstanding; calls/s, p50, p99). Each ratio is
 * the median over the turns of each turn's ours/peer; the best peer is the one of highest rate (of lowest p50 for
 * the latency ratio).
 */
abstract class VertxPerf implements Callable<Integer> {
    enum Kind { HTTP, ECHO, UDP, GRPC }

    @Command(name = "vertx-http", mixinStandardHelpOptions = true,
            description = "Vert.x HTTP/1.1 keep-alive requests over the fabric beside Vert.x on epoll and io_uring over loopback and over a Unix domain socket.")
    static final class Http extends VertxPerf {
        Http() {
            super("vertx-http", Kind.HTTP, 16);
        }
    }

    @Command(name = "vertx-echo", mixinStandardHelpOptions = true,
            description = "Vert.x NetSocket bulk echo (pipeTo) over the fabric beside Vert.x on epoll and io_uring over loopback and over a Unix domain socket.")
    static final class Echo extends VertxPerf {
        Echo() {
            super("vertx-echo", Kind.ECHO, 65_536);
        }
    }

    @Command(name = "vertx-grpc", mixinStandardHelpOptions = true,
            description = "Vert.x gRPC unary calls (the examples' Greeter.SayHello) over the fabric beside Vert.x on epoll and io_uring over loopback and over a Unix domain socket.")
    static final class Grpc extends VertxPerf {
        Grpc() {
            super("vertx-grpc", Kind.GRPC, 16);
        }
    }

    @Command(name = "vertx-udp", mixinStandardHelpOptions = true,
            description = "Vert.x DatagramSocket echo over the fabric beside Vert.x on epoll and io_uring over loopback.")
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
            description = "vertx-http: connections, one request outstanding on each; vertx-echo: connections, each streaming;"
                    + " vertx-grpc: calls outstanding on one connection (default: ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--loops", paramLabel = "N", defaultValue = "1",
            description = "vertx-http, vertx-echo: event loops of each instance, ours and the peer's; the server runs as N verticle"
                    + " instances and the -c connections are spread over the client's N loops (default: ${DEFAULT-VALUE}).")
    int loops;

    @Option(names = "--rate", paramLabel = "PER_SECOND",
            description = "vertx-http and vertx-grpc: open loop: requests arrive at this mean rate with exponential gaps"
                    + " (Poisson), whatever the answers, each timed from its arrival; -c bounds the connections (default: closed loop).")
    Double rate;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", description = "Body, buffer or datagram size (default: 16 / 65536 / 64).")
    Integer size;

    @Option(names = {"-w", "--window"}, paramLabel = "N", defaultValue = "16", description = "vertx-udp: datagrams outstanding (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--report", paramLabel = "DIR", description = "Write a report of the run into DIR (report.html with the rates"
            + " over time, timeline.csv, summary.json; docs/tracing.md).")
    Path report;

    @Option(names = "--json", description = "Print one JSON object on the last line.")
    boolean json;

    @Option(names = "--idle", paramLabel = "SPIN_US,YIELD_US", description = IdleOption.DESCRIPTION)
    String idleSpec;

    @Option(names = "--fabric", paramLabel = "PATH", description = "Fabric file to create and remove (default: a fresh one in /dev/shm).")
    Path fabric;

    @Option(names = "--peers", paramLabel = "LIST", split = ",", defaultValue = "epoll,io_uring,uds", converter = VertxPeer.Name.class,
            description = "The Linux peers, in turns after ours: epoll (TCP over loopback), io_uring (TCP over loopback),"
                    + " uds (epoll over a Unix domain socket; not for vertx-udp); ratios are given against each and against"
                    + " the best (default: ${DEFAULT-VALUE}).")
    List<VertxPeer> peerKinds;

    /** One transport under test: its two instances, its endpoint, its workload and its turns' results. */
    private static final class Side {
        final String key;
        final String label;
        final Vertx server;
        final Vertx client;
        final VertxEndpoint endpoint;
        Workload workload;
        List<Thread> loops;
        final List<Result> results = new ArrayList<>();

        Side(String key, String label, Vertx server, Vertx client, VertxEndpoint endpoint) {
            this.key = key;
            this.label = label;
            this.server = server;
            this.client = client;
            this.endpoint = endpoint;
        }
    }

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
    record Result(double rate, long p50Ns, long p99Ns, long messages, double allocPerMessage, double cpu) {
        Result(double rate, long p50Ns, long p99Ns, long messages) {
            this(rate, p50Ns, p99Ns, messages, Double.NaN, Double.NaN);
        }
    }

    @Override
    public Integer call() throws Exception {
        int sz = size != null ? size : defaultSize;
        if (seconds <= 0 || turns < 1 || connections < 1 || window < 1 || sz < 1 || (kind == Kind.UDP && sz > 65_507)) {
            throw new IllegalArgumentException("need -t > 0, --turns >= 1, -c >= 1, -w >= 1 and -s >= 1 (at most 65507 for UDP)");
        }
        if (rate != null && (!(rate > 0) || (kind != Kind.HTTP && kind != Kind.GRPC))) {
            throw new IllegalArgumentException("--rate takes requests per second above 0, for vertx-http and vertx-grpc only; got " + rate);
        }
        if (loops < 1 || loops > StackConfig.MAX_LOOPS || (loops > 1 && kind != Kind.HTTP && kind != Kind.ECHO) || connections < loops) {
            throw new IllegalArgumentException("--loops takes 1.." + StackConfig.MAX_LOOPS + ", more than 1 for vertx-http and vertx-echo only,"
                    + " and at most as many as -c connections; got " + loops);
        }
        Path f = fabric != null ? fabric : PerfRunner.freshFabricPath("perf-vertx");
        if (Files.exists(f)) {
            throw new IllegalArgumentException("fabric file " + f + " exists; give a fresh path with --fabric");
        }
        Datapath.Idle idle = IdleOption.parse(idleSpec);
        StackConfig server = StackConfig.defaults(f, 0).withIdle(idle).withLoops(loops);
        List<Side> sides = new ArrayList<>();
        sides.add(new Side("ours", "ours", NupaVertx.create(server), NupaVertx.create(StackConfig.defaults(f, 1).withIdle(idle)
                .withLoops(loops)), new VertxEndpoint("10.0.0.1", PORT, null)));
        Path sockets = null;
        try {
            VertxOptions same = new VertxOptions().setEventLoopPoolSize(loops);
            for (VertxPeer peer : new java.util.LinkedHashSet<>(peerKinds)) {
                if (!peer.transport.available()) {
                    System.out.printf("peer %s skipped: %s%n", peer.key, peer.transport.unavailabilityCause());
                    continue;
                }
                if (peer.domainSocket && kind == Kind.UDP) {
                    System.out.printf("peer %s skipped: Vert.x has no datagram sockets over Unix domain sockets%n", peer.key);
                    continue;
                }
                if (peer.domainSocket && sockets == null) {
                    sockets = Files.createTempDirectory("nupa-perf-uds-");
                }
                VertxEndpoint e = peer.domainSocket ? new VertxEndpoint(null, 0, sockets) : VertxEndpoint.freeLoopback();
                sides.add(new Side(peer.key, peer.label, Vertx.builder().with(same).withTransport(peer.transport).build(),
                        Vertx.builder().with(same).withTransport(peer.transport).build(), e));
            }
            if (sides.size() == 1) {
                throw new IllegalArgumentException("no Linux peer can run here (--peers " + peerKinds + "); see the lines above");
            }
            for (Side side : sides) {
                side.workload = workload(side.server, side.client, side.endpoint, sz);
                side.loops = loops(side.server, side.client);
            }
            // Warm-up, not counted: every side twice, in turns, since the transports share Vert.x's and Netty's code in
            // this JVM and each side's first turn after another's recompiles the call sites they share.
            for (int i = 0; i < 2; i++) {
                for (Side side : sides) {
                    side.workload.run(warmupSeconds);
                }
            }
            PerfReport r = report != null ? PerfReport.open(report, name) : null;
            if (r != null) {
                r.rates(kind == Kind.HTTP ? "requests/s" : kind == Kind.GRPC ? "calls/s" : kind == Kind.ECHO ? "Gbit/s echoed"
                        : "datagrams/s", sides.stream().map(side -> side.key).toArray(String[]::new));
            }
            for (int i = 0; i < turns; i++) {
                for (int k = 0; k < sides.size(); k++) {
                    Side side = sides.get(k);
                    side.results.add(measured(side.workload, side.loops));
                    if (r != null) {
                        r.rate(k, side.results.getLast().rate());
                    }
                }
            }
            if (r != null) {
                r.write(false);
            }
            report(sz, sides);
        } finally {
            for (Side side : sides) {
                if (side.workload != null) {
                    side.workload.close().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
                }
            }
            for (Side side : sides) {
                CompletableFuture.allOf(side.client.close().toCompletionStage().toCompletableFuture(),
                        side.server.close().toCompletionStage().toCompletableFuture()).get(10, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(f);
            if (sockets != null) {
                try (java.util.stream.Stream<Path> left = Files.list(sockets)) {
                    for (Path p : left.toList()) {
                        Files.deleteIfExists(p);
                    }
                }
                Files.deleteIfExists(sockets);
            }
        }
        return 0;
    }

    /** A turn, with the bytes the event loops allocated during it per message moved. */
    /**
     * A turn, with the bytes the event loops allocated during it per message moved, and the CPU time they used
     * (cores: CPU seconds per second of the turn).
     */
    private Result measured(Workload w, List<Thread> loops) throws Exception {
        long before = allocated(loops);
        long cpuBefore = cpuTime(loops);
        long t0 = System.nanoTime();
        Result r = w.run(seconds);
        double cores = (double) (cpuTime(loops) - cpuBefore) / (System.nanoTime() - t0);
        long after = allocated(loops);
        return new Result(r.rate(), r.p50Ns(), r.p99Ns(), r.messages(),
                r.messages() > 0 ? (double) (after - before) / r.messages() : Double.NaN, cores);
    }

    private static long cpuTime(List<Thread> threads) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : threads) {
            sum += Math.max(0, mx.getThreadCpuTime(t.threadId()));
        }
        return sum;
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

    /** The medians of one peer's turns and of ours over its turns' ratios. */
    private record Against(Side peer, Result median, double ratio, double latencyRatio, double p99Ratio, double cpuRatio) {
    }

    private void report(int sz, List<Side> sides) {
        List<Result> ours = sides.get(0).results;
        List<Against> against = new ArrayList<>();
        for (Side peer : sides.subList(1, sides.size())) {
            double[] ratios = new double[ours.size()];
            double[] latencyRatios = new double[ours.size()];
            double[] p99Ratios = new double[ours.size()];
            double[] cpuRatios = new double[ours.size()];
            for (int i = 0; i < ratios.length; i++) {
                Result p = peer.results.get(i);
                Result u = ours.get(i);
                ratios[i] = u.rate() / p.rate();
                latencyRatios[i] = p.p50Ns() > 0 ? (double) u.p50Ns() / p.p50Ns() : Double.NaN;
                p99Ratios[i] = p.p99Ns() > 0 ? (double) u.p99Ns() / p.p99Ns() : Double.NaN;
                cpuRatios[i] = u.cpu() / p.cpu();
            }
            against.add(new Against(peer, median(peer.results), Turns.median(ratios), Turns.median(latencyRatios),
                    Turns.median(p99Ratios), Turns.median(cpuRatios)));
        }
        // The best peer: the highest rate; for latency, the lowest p50 (where the tool measures it).
        Against best = against.getFirst();
        Against bestLatency = against.getFirst();
        for (Against x : against) {
            best = rate == null ? (x.median().rate() > best.median().rate() ? x : best) : x.median().p50Ns() < best.median().p50Ns() ? x : best;
            bestLatency = x.median().p50Ns() < bestLatency.median().p50Ns() ? x : bestLatency;
        }
        Result o = median(ours);
        String unit = kind == Kind.HTTP ? "requests/s" : kind == Kind.GRPC ? "calls/s" : kind == Kind.ECHO ? "Gbit/s echoed" : "datagrams/s";
        System.out.printf(Locale.ROOT, "%s: %d B, %s, %d turns of %.1f s each; peers: %s%n", name, sz,
                kind == Kind.GRPC ? connections + " call(s) outstanding" : kind == Kind.UDP ? "window " + window
                        : connections + " connection(s)" + (loops > 1 ? " over " + loops + " event loops a side" : ""),
                turns, seconds, String.join("; ", sides.subList(1, sides.size()).stream().map(side -> side.label).toList()));
        for (int i = 0; i < ours.size(); i++) {
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  turn %d: ours %s", i + 1, show(ours.get(i))));
            for (Against x : against) {
                line.append(String.format(Locale.ROOT, "; %s %s", x.peer().key, show(x.peer().results.get(i))));
            }
            System.out.println(line);
        }
        boolean latency = kind != Kind.ECHO && kind != Kind.UDP;
        System.out.printf(Locale.ROOT, "  median: ours %s (%s)%n", show(o), unit);
        for (Against x : against) {
            System.out.printf(Locale.ROOT, "  against %s: %s; ratio %s%s, CPU ratio %s%n", x.peer().label, show(x.median()),
                    JsonNumber.orNa(x.ratio(), 2), latency ? String.format(Locale.ROOT, ", p50 ratio %s, p99 ratio %s",
                            JsonNumber.orNa(x.latencyRatio(), 2), JsonNumber.orNa(x.p99Ratio(), 2)) : "",
                    JsonNumber.orNa(x.cpuRatio(), 2));
        }
        System.out.printf(Locale.ROOT, "  best peer %s: ratio %s (median of the turns' ratios)%s%n", best.peer().key,
                JsonNumber.orNa(best.ratio(), 2), latency ? String.format(Locale.ROOT, "; lowest p50 %s: p50 ratio %s",
                        bestLatency.peer().key, JsonNumber.orNa(bestLatency.latencyRatio(), 2)) : "");
        if (json) {
            String rateKey = kind == Kind.ECHO ? "gbit_s" : "msgs_s";
            StringBuilder peers = new StringBuilder();
            for (Against x : against) {
                Result p = x.median();
                peers.append(peers.isEmpty() ? "" : ",").append(String.format(Locale.ROOT,
                        "\"%s\":{\"%s\":%s,\"p50_ns\":%d,\"p99_ns\":%d,\"alloc_b\":%s,\"cpu\":%s,\"ratio\":%s,"
                                + "\"latency_ratio\":%s,\"p99_ratio\":%s,\"cpu_ratio\":%s}",
                        x.peer().key, rateKey, JsonNumber.of(p.rate(), 3), p.p50Ns(), p.p99Ns(), JsonNumber.of(p.allocPerMessage(), 0),
                        JsonNumber.of(p.cpu(), 3), JsonNumber.of(x.ratio(), 4), JsonNumber.of(x.latencyRatio(), 4),
                        JsonNumber.of(x.p99Ratio(), 4), JsonNumber.of(x.cpuRatio(), 4)));
            }
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"size\":%d,\"connections\":%d,\"loops\":%d,\"turns\":%d,"
                            + "\"ours\":{\"%s\":%s,\"p50_ns\":%d,\"p99_ns\":%d,\"alloc_b\":%s,\"cpu\":%s},\"peers\":{%s},"
                            + "\"best_peer\":\"%s\",\"best_ratio\":%s,\"best_latency_peer\":%s,\"best_latency_ratio\":%s}%n",
                    name, sz, kind != Kind.UDP ? connections : 1, loops, turns, rateKey, JsonNumber.of(o.rate(), 3),
                    o.p50Ns(), o.p99Ns(), JsonNumber.of(o.allocPerMessage(), 0), JsonNumber.of(o.cpu(), 3), peers, best.peer().key,
                    JsonNumber.of(best.ratio(), 4), latency ? "\"" + bestLatency.peer().key + "\"" : "null",
                    latency ? JsonNumber.of(bestLatency.latencyRatio(), 4) : "null");
        }
    }

    private String show(Result r) {
        String rate = kind == Kind.ECHO ? String.format(Locale.ROOT, "%.2f Gbit/s", r.rate())
                : String.format(Locale.ROOT, "%,.0f/s", r.rate());
        String lat = r.p50Ns() > 0 ? String.format(Locale.ROOT, " p50 %.1f us p99 %.1f us", r.p50Ns() / 1e3, r.p99Ns() / 1e3) : "";
        return String.format(Locale.ROOT, "%s%s, CPU %.2f cores, %.0f B allocated per %s", rate, lat, r.cpu(), r.allocPerMessage(),
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
        double[] cpu = new double[rs.size()];
        for (int i = 0; i < rs.size(); i++) {
            alloc[i] = rs.get(i).allocPerMessage();
            cpu[i] = rs.get(i).cpu();
        }
        return new Result(Turns.median(rate), (long) Turns.median(p50), (long) Turns.median(p99), 0, Turns.median(alloc),
                Turns.median(cpu));
    }

    /** The application: set up once on a server and a client instance, then run for a given time, turn after turn. */
    interface Workload {
        Result run(double seconds) throws Exception;

        /** Closes the client's connections and sockets (Vert.x waits out a grace period for any left open). */
        Future<?> close();
    }

    private Workload workload(Vertx server, Vertx client, VertxEndpoint e, int sz) throws Exception {
        return switch (kind) {
            case HTTP -> http(server, client, e, sz);
            case ECHO -> echo(server, client, e, sz);
            case UDP -> udp(server, client, e, sz);
            case GRPC -> grpc(server, client, e, sz);
        };
    }

    private static final int PORT = 7070;

    private Workload http(Vertx server, Vertx client, VertxEndpoint e, int sz) throws Exception {
        Buffer body = Buffer.buffer(new byte[sz]);
        serveOnEachLoop(server, v -> v.createHttpServer().requestHandler(req -> req.response().end(body)).listen(e.listen(0)));
        // A client per loop, used from its own context only, so its connections live on that loop.
        List<Context> lanes = lanes(client);
        List<HttpClient> clients = new ArrayList<>();
        List<Supplier<Future<?>>> calls = new ArrayList<>();
        for (int k = 0; k < lanes.size(); k++) {
            HttpClient hc = client.createHttpClient(new PoolOptions().setHttp1MaxSize(share(k)));
            clients.add(hc);
            // One set of options for every request (a new one per request would count as the request's allocation).
            io.vertx.core.http.RequestOptions get = new io.vertx.core.http.RequestOptions().setMethod(HttpMethod.GET).setServer(e.connect(0))
                    .setHost(e.host() != null ? e.host() : "localhost").setPort(e.port()).setURI("/");
            calls.add(() -> hc.request(get).compose(req -> req.send().compose(HttpClientResponse::body)));
        }
        return closedLoop(lanes, () -> Future.all(clients.stream().map(HttpClient::close).toList()), calls);
    }

    /** A server on each of {@code server}'s loops: one verticle instance per loop, each listening (Vert.x spreads the connections). */
    private void serveOnEachLoop(Vertx server, Function<Vertx, Future<?>> listen) throws Exception {
        server.deployVerticle(() -> new io.vertx.core.AbstractVerticle() {
            @Override
            public void start(io.vertx.core.Promise<Void> started) {
                listen.apply(vertx).<Void>mapEmpty().onComplete(started);
            }
        }, new io.vertx.core.DeploymentOptions().setInstances(loops)).await(10, TimeUnit.SECONDS);
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

    private Workload grpc(Vertx server, Vertx client, VertxEndpoint e, int sz) throws Exception {
        HelloServer.startGreeter(server, e.listen(3)).await(10, TimeUnit.SECONDS);
        GrpcClient grpc = GrpcClient.client(client);
        GreeterGrpcClient greeter = GreeterGrpcClient.create(grpc, e.connect(3));
        HelloRequest request = HelloRequest.newBuilder().setName("perf").setPayload(ByteString.copyFrom(new byte[sz])).build();
        return closedLoop(lanes(client), grpc::close, List.of(() -> greeter.sayHello(request)));
    }

    /**
     * Request/response in a closed loop: {@code -c} callers dealt over the client's {@code lanes} (event-loop
     * contexts), each making the next call of its lane when its last one answered, until the turn ends; each
     * call's time is recorded in its lane's histogram, and the lanes' are added up at the end.
     */
    private Workload closedLoop(List<Context> lanes, Supplier<Future<?>> close, List<Supplier<Future<?>>> calls) {
        if (rate != null) {
            return openLoop(lanes, close, calls);
        }
        return new Workload() {
            @Override
            public Future<?> close() {
                return close.get();
            }

            @Override
            public Result run(double secs) throws Exception {
                CompletableFuture<Void> done = new CompletableFuture<>();
                long end = System.nanoTime() + (long) (secs * 1e9);
                AtomicInteger running = new AtomicInteger(connections);
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

    /** Requests in an open loop ({@link OpenLoop}), dealt over the lanes in turn. */
    private Workload openLoop(List<Context> lanes, Supplier<Future<?>> close, List<Supplier<Future<?>>> calls) {
        return new Workload() {
            @Override
            public Future<?> close() {
                return close.get();
            }

            @Override
            public Result run(double secs) throws Exception {
                OpenLoop turn = new OpenLoop(rate, secs);
                long[] next = {0};
                turn.run(arrival -> {
                    int k = (int) (next[0]++ % lanes.size());
                    Supplier<Future<?>> call = calls.get(Math.min(k, calls.size() - 1));
                    lanes.get(k).runOnContext(v -> call.get().onComplete(ar -> {
                        if (ar.failed()) {
                            turn.failed(ar.cause());
                        } else {
                            turn.answered(arrival);
                        }
                    }));
                });
                return new Result(turn.offered(), turn.p50(), turn.p99(), turn.sent());
            }
        };
    }

    private static void next(Supplier<Future<?>> call, Histogram h, long[] count, long end,
                             AtomicInteger running, CompletableFuture<Void> done) {
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

    private Workload echo(Vertx server, Vertx client, VertxEndpoint e, int sz) throws Exception {
        serveOnEachLoop(server, v -> v.createNetServer().connectHandler(s -> s.pipeTo(s)).listen(e.listen(1)));
        // -c connections dealt over the client's loops: each connected from its lane's context, so it lives on that loop
        NetClient nc = client.createNetClient();
        List<Context> lanes = lanes(client);
        List<List<NetSocket>> sockets = new ArrayList<>();
        for (int k = 0; k < lanes.size(); k++) {
            List<NetSocket> mine = new ArrayList<>();
            for (int i = 0; i < share(k); i++) {
                CompletableFuture<NetSocket> connected = new CompletableFuture<>();
                lanes.get(k).runOnContext(v -> nc.connect(e.connect(1)).onComplete(ar -> {
                    if (ar.succeeded()) {
                        connected.complete(ar.result());
                    } else {
                        connected.completeExceptionally(ar.cause());
                    }
                }));
                mine.add(connected.get(10, TimeUnit.SECONDS));
            }
            sockets.add(mine);
        }
        Buffer chunk = Buffer.buffer(new byte[sz]);
        return new Workload() {
            @Override
            public Future<?> close() {
                return Future.all(sockets.stream().flatMap(List::stream).map(NetSocket::close).toList()).eventually(() -> nc.close());
            }

            @Override
            public Result run(double secs) throws Exception {
                CompletableFuture<Void> done = new CompletableFuture<>();
                long start = System.nanoTime();
                long end = start + (long) (secs * 1e9);
                AtomicInteger running = new AtomicInteger(connections);
                AtomicLong echoed = new AtomicLong();
                for (int k = 0; k < lanes.size(); k++) {
                    for (NetSocket socket : sockets.get(k)) {
                        lanes.get(k).runOnContext(v -> stream(socket, chunk, end, echoed, running, done));
                    }
                }
                done.get((long) (secs * 1000) + 30_000, TimeUnit.MILLISECONDS);
                double gbit = echoed.get() * 8 / ((System.nanoTime() - start) / 1e9) / 1e9;
                return new Result(gbit, 0, 0, echoed.get() / sz);
            }
        };
    }

    /**
     * One connection's part of a vertx-echo turn, on its loop: writes {@code chunk} while the write queue has room
     * until {@code end}, then waits for every byte sent to come back (nothing is left in flight for the next turn),
     * adds the bytes echoed to {@code echoed}, and completes {@code done} when it is the last connection to finish.
     */
    private static void stream(NetSocket socket, Buffer chunk, long end, AtomicLong echoed,
                               AtomicInteger running, CompletableFuture<Void> done) {
        long[] received = {0};
        long[] sent = {0};
        boolean[] stopping = {false};
        boolean[] finished = {false};
        Runnable finish = () -> {
            if (!finished[0]) {
                finished[0] = true;
                echoed.addAndGet(received[0]);
                if (running.decrementAndGet() == 0) {
                    done.complete(null);
                }
            }
        };
        socket.handler(b -> {
            received[0] += b.length();
            if (stopping[0] && received[0] == sent[0]) {
                finish.run();
            }
        });
        Runnable[] pump = new Runnable[1];
        pump[0] = () -> {
            while (!socket.writeQueueFull()) {
                if (System.nanoTime() >= end) {
                    stopping[0] = true;
                    if (received[0] == sent[0]) {
                        finish.run();
                    }
                    return;
                }
                socket.write(chunk);
                sent[0] += chunk.length();
            }
            socket.drainHandler(x -> pump[0].run());
        };
        pump[0].run();
    }

    private Workload udp(Vertx server, Vertx client, VertxEndpoint e, int sz) throws Exception {
        String host = e.host();
        int port = e.port() + 2;
        DatagramSocket echo = server.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(port, "0.0.0.0").await(10, TimeUnit.SECONDS);
        DatagramSocket socket = client.createDatagramSocket();
        Buffer datagram = Buffer.buffer(new byte[sz]);
        long[] count = {0};
        long[] lastEcho = {0};
        boolean[] active = {false};
        socket.handler(p -> {
            count[0]++;
            lastEcho[0] = System.nanoTime();
            if (active[0]) {
                socket.send(datagram, port, host); // one back, one out: the window stays full
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
                    socket.send(datagram, port, host);
                }
                // A datagram lost (UDP may drop) shrinks the window: refill it when the echoes stop.
                long timer = client.setPeriodic(100, id -> {
                    if (System.nanoTime() - lastEcho[0] > 50_000_000L) {
                        for (int i = 0; i < window; i++) {
                            socket.send(datagram, port, host);
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
