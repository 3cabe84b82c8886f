package dev.nupa.perf;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.HdrHistogram.Histogram;

import dev.nupa.cluster.ClusterConfig;
import dev.nupa.cluster.NupaCluster;
import dev.nupa.l2.Datapath;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBus;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf vertx-eventbus`: a clustered Vert.x (Hazelcast, or Infinispan with {@code --cluster-manager infinispan};
 * membership on loopback) of a client and {@code --subscribers}
 * members, one event loop each, with the event bus over the fabric (ours: each member a fabric node of a fresh fabric
 * file) and the same cluster with the event bus over TCP loopback on each Linux peer ({@code --peers}: epoll, io_uring),
 * in turns within one process. Each turn measures request-reply ({@code -c} requests outstanding to a consumer on the first
 * subscriber, which replies with the body: requests/s, p50, p99) and then publish fan-out (every message to every
 * subscriber, at most {@code -w} messages ahead of the slowest subscriber's acknowledgements: messages/s delivered to
 * all). Each ratio is the median over the turns of each turn's ours/peer.
 */
@Command(name = "vertx-eventbus", mixinStandardHelpOptions = true,
        description = "Vert.x clustered event bus: request-reply and publish fan-out with the event bus over the fabric beside"
                + " the same cluster with the event bus on epoll and io_uring over loopback.")
final class EventBusPerf implements Callable<Integer> {
    /** Subscribers acknowledge every ACK messages (cumulatively); the publisher stops at a multiple of it. */
    private static final int ACK = 64;
    /**
     * The cluster managers' INFO lines (joins, partitions, views, rebalances) would bury the report; their errors still
     * show. Held here: java.util.logging keeps only weak references to its loggers.
     */
    private static final List<Logger> MANAGER_LOGS = List.of(Logger.getLogger("com.hazelcast"),
            Logger.getLogger("org.infinispan"), Logger.getLogger("org.jgroups"));

    @Option(names = {"-t", "--time"}, paramLabel = "SECONDS", defaultValue = "2", description = "Seconds per workload and turn (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "3", description = "Turns of each transport (default: ${DEFAULT-VALUE}).")
    int turns;

    @Option(names = "--warmup-time", paramLabel = "SECONDS", defaultValue = "1",
            description = "Seconds of each of the two warm-up turns per transport and workload, not counted (default: ${DEFAULT-VALUE}).")
    double warmupSeconds;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", defaultValue = "16", description = "Message body size (default: ${DEFAULT-VALUE}).")
    int size;

    @Option(names = {"-c", "--outstanding"}, paramLabel = "N", defaultValue = "1", description = "Requests outstanding (default: ${DEFAULT-VALUE}).")
    int outstanding;

    @Option(names = "--subscribers", paramLabel = "N", defaultValue = "4", description = "Subscribing members (default: ${DEFAULT-VALUE}).")
    int subscribers;

    @Option(names = {"-w", "--window"}, paramLabel = "N", defaultValue = "1024",
            description = "Publish: messages ahead of the slowest subscriber's acknowledgements, a multiple of " + ACK + " (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--idle", paramLabel = "SPIN_US,YIELD_US",
            description = "How our event loops idle: spin, then yield, then sleep on the fabric's interrupt (default: the transport's).")
    String idleSpec;

    @Option(names = "--cluster-manager", paramLabel = "NAME", defaultValue = "hazelcast",
            description = "The cluster manager of every side: hazelcast or infinispan (default: ${DEFAULT-VALUE}).")
    String clusterManager;

    @Option(names = "--json", description = "Print one JSON object on the last line.")
    boolean json;

    @Option(names = "--fabric", paramLabel = "PATH", description = "Fabric file to create and remove (default: a fresh one in /dev/shm).")
    Path fabric;

    @Option(names = "--peers", paramLabel = "LIST", split = ",", defaultValue = "epoll,io_uring", converter = VertxPeer.Name.class,
            description = "The Linux peers, in turns after ours: epoll, io_uring (the event bus over TCP loopback) (default: ${DEFAULT-VALUE}).")
    List<VertxPeer> peerKinds;

    /** One turn of a side: request-reply rate and latency, and the publish rate. */
    record Result(double rate, long p50Ns, long p99Ns, double publishRate) {
    }

    /** One cluster: a client and its subscribers, all on one transport. */
    private static final class Side {
        final String key;
        final String label;
        final List<Vertx> members = new ArrayList<>();
        Vertx client;
        Context context;
        long[] acked;
        /** Which subscribers have answered a probe on "news" (their answer on "acks" reached the client). */
        boolean[] probed;
        /** Whether a probe request to "svc" has been answered; whether one is out. */
        boolean svcAnswered;
        boolean svcProbeOut;
        long published;
        Promise<Void> acksWanted;
        long acksTarget;
        final List<Result> results = new ArrayList<>();

        Side(String key, String label) {
            this.key = key;
            this.label = label;
        }

        long slowest() {
            long min = Long.MAX_VALUE;
            for (long a : acked) {
                min = Math.min(min, a);
            }
            return min;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (seconds <= 0 || warmupSeconds < 0 || turns < 1 || size < 1 || outstanding < 1 || subscribers < 1 || subscribers > 16
                || window < ACK || window % ACK != 0) {
            throw new IllegalArgumentException("need -t > 0, --turns >= 1, -s >= 1, -c >= 1, --subscribers 1..16 and -w a multiple of "
                    + ACK + " (at least " + ACK + ")");
        }
        for (VertxPeer p : peerKinds) {
            if (p.domainSocket) {
                throw new IllegalArgumentException("--peers takes epoll and io_uring here: the clustered event bus connects members over TCP, not " + p.key);
            }
        }
        ClusterConfig.Manager manager = ClusterConfig.Manager.parse(clusterManager);
        MANAGER_LOGS.forEach(l -> l.setLevel(Level.SEVERE));
        Path f = fabric != null ? fabric : PerfRunner.freshFabricPath("perf-eventbus");
        if (Files.exists(f)) {
            throw new IllegalArgumentException("fabric file " + f + " exists; give a fresh path with --fabric");
        }
        List<Side> sides = new ArrayList<>();
        Buffer body = Buffer.buffer(new byte[size]);
        try {
            sides.add(cluster(new Side("ours", "ours"), null, f, body, manager));
            for (VertxPeer peer : new LinkedHashSet<>(peerKinds)) {
                if (!peer.transport.available()) {
                    System.out.printf("peer %s skipped: %s%n", peer.key, peer.transport.unavailabilityCause());
                    continue;
                }
                sides.add(cluster(new Side(peer.key, "Vert.x " + peer.key + " over loopback"), peer, f, body, manager));
            }
            if (sides.size() == 1) {
                throw new IllegalArgumentException("no Linux peer can run here (--peers " + peerKinds + "); see the lines above");
            }
            // Warm-up, not counted: every side twice, in turns (the sides share Vert.x's code in this JVM).
            for (int i = 0; i < 2; i++) {
                for (Side side : sides) {
                    requestReply(side, body, warmupSeconds);
                    publish(side, body, warmupSeconds);
                }
            }
            for (int i = 0; i < turns; i++) {
                for (Side side : sides) {
                    Result rr = requestReply(side, body, seconds);
                    double pub = publish(side, body, seconds);
                    side.results.add(new Result(rr.rate(), rr.p50Ns(), rr.p99Ns(), pub));
                }
            }
            report(sides);
        } finally {
            for (Side side : sides) {
                List<Future<Void>> closing = new ArrayList<>();
                for (Vertx v : side.members) {
                    if (manager == ClusterConfig.Manager.INFINISPAN) {
                        // One at a time: Infinispan members that leave together lose the segments they alone held
                        // and log it as an error, although nothing is needed any more.
                        v.close().await(60, TimeUnit.SECONDS);
                    } else {
                        closing.add(v.close());
                    }
                }
                Future.join(closing).await(60, TimeUnit.SECONDS);
            }
            Files.deleteIfExists(f);
        }
        return 0;
    }

    /**
     * Starts the side's cluster (the client and the subscribers, each a clustered Vert.x with one event loop), registers
     * the consumers, and checks that every subscriber receives what the client publishes.
     */
    private Side cluster(Side side, VertxPeer peer, Path f, Buffer body, ClusterConfig.Manager manager) throws Exception {
        int members = subscribers + 1;
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            addresses.add("127.0.0.1:" + freePort());
        }
        String name = "perf-" + side.key + "-" + UUID.randomUUID();
        for (int i = 0; i < members; i++) {
            int port = Integer.parseInt(addresses.get(i).substring(addresses.get(i).lastIndexOf(':') + 1));
            ClusterConfig cluster = ClusterConfig.loopback(port, addresses).withManager(manager).withName(name)
                    .withFailureDetection(Duration.ofSeconds(10));
            VertxOptions options = new VertxOptions().setEventLoopPoolSize(1);
            Vertx v;
            if (peer == null) {
                v = NupaCluster.create(StackConfig.defaults(f, i).withIdle(idle()), cluster, options).await(60, TimeUnit.SECONDS);
            } else {
                options.getEventBusOptions().setHost("127.0.0.1").setClusterPublicHost("127.0.0.1");
                v = Vertx.builder().with(options).withTransport(peer.transport).withClusterManager(NupaCluster.manager(cluster))
                        .buildClustered().await(60, TimeUnit.SECONDS);
            }
            side.members.add(v);
        }
        side.client = side.members.getFirst();
        side.context = side.client.getOrCreateContext();
        side.acked = new long[subscribers];
        side.probed = new boolean[subscribers];
        List<Future<Void>> registered = new ArrayList<>();
        for (int k = 0; k < subscribers; k++) {
            EventBus bus = side.members.get(k + 1).eventBus();
            int who = k;
            long[] received = {0};
            if (k == 0) {
                registered.add(bus.<Buffer>consumer("svc", m -> m.reply(m.body())).completion());
            }
            registered.add(bus.<Buffer>consumer("news", m -> {
                if (m.body().length() == 0) { // a probe (every measured body has -s >= 1 bytes): answered, not counted
                    bus.send("acks", who + " probe");
                } else if (++received[0] % ACK == 0) {
                    bus.send("acks", who + " " + received[0]);
                }
            }).completion());
        }
        Promise<Void> ackConsumer = Promise.promise();
        side.context.runOnContext(v -> side.client.eventBus().<String>consumer("acks", m -> {
            String s = m.body();
            int space = s.indexOf(' ');
            int who = Integer.parseInt(s, 0, space, 10);
            if (s.endsWith(" probe")) {
                side.probed[who] = true;
                return;
            }
            side.acked[who] = Long.parseLong(s, space + 1, s.length(), 10);
            if (side.acksWanted != null && side.slowest() >= side.acksTarget) {
                Promise<Void> p = side.acksWanted;
                side.acksWanted = null;
                p.complete();
            }
        }).completion().onComplete(ackConsumer));
        registered.add(ackConsumer.future());
        within(Future.all(registered), 60, side, "the consumers' registration");
        probe(side);
        // One batch to every subscriber, so the counts of what each has acknowledged start equal.
        Promise<Void> first = Promise.promise();
        side.context.runOnContext(v -> {
            for (int i = 0; i < ACK; i++) {
                side.client.eventBus().publish("news", body);
            }
            side.published += ACK;
            awaitAcks(side, side.published).onComplete(first);
        });
        within(first.future(), 30, side, "every subscriber's acknowledgement of the first batch");
        return side;
    }

    /**
     * Probes until the client reaches every subscriber on "news", each reaches the client on "acks", and "svc" answers.
     * A consumer's registration completes once its own member has given it to the cluster manager, which spreads it to
     * the others in its own time; a publish or request before the sender knows of a consumer goes to the members it
     * knows of, or nowhere. So a probe goes out every 20 ms until every path has carried one (in the process's first
     * cluster that takes about a second here, most of it the event bus's first use; later ones 50-250 ms).
     */
    private void probe(Side side) throws Exception {
        Promise<Void> reached = Promise.promise();
        EventBus bus = side.client.eventBus();
        side.context.runOnContext(v -> side.client.setPeriodic(0, 20, timer -> {
            boolean all = side.svcAnswered;
            for (boolean p : side.probed) {
                all &= p;
            }
            if (all || reached.future().isComplete()) {
                side.client.cancelTimer(timer);
                reached.tryComplete();
                return;
            }
            bus.publish("news", Buffer.buffer());
            if (!side.svcAnswered && !side.svcProbeOut) {
                side.svcProbeOut = true;
                bus.<Buffer>request("svc", Buffer.buffer()).onComplete((m, err) -> {
                    side.svcProbeOut = false;
                    side.svcAnswered |= err == null;
                });
            }
        }));
        try {
            within(reached.future(), 60, side, "a probe's way to every subscriber and back");
        } finally {
            reached.tryFail("given up"); // the timer's next tick cancels it
        }
    }

    /** {@code f}'s result, or an exception that says which step of which side did not finish in {@code seconds}. */
    private static <T> T within(Future<T> f, double seconds, Side side, String what) throws Exception {
        try {
            return f.await((long) (seconds * 1000), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException(side.label + ": " + what + " did not come within " + Math.round(seconds)
                    + " s (a cluster member stalled or lost a message)");
        }
    }

    /** Completes (on the client's loop) once every subscriber has acknowledged {@code target} messages. */
    private static Future<Void> awaitAcks(Side side, long target) {
        if (side.slowest() >= target) {
            return Future.succeededFuture();
        }
        side.acksTarget = target;
        side.acksWanted = Promise.promise();
        return side.acksWanted.future();
    }

    /** Request-reply for {@code secs}, {@code -c} requests outstanding, each timed from its send to its reply. */
    private Result requestReply(Side side, Buffer body, double secs) throws Exception {
        Histogram h = LatencyStats.newHistogram();
        Promise<Long> done = Promise.promise();
        long[] count = {0};
        int[] open = {outstanding};
        long start = System.nanoTime();
        long end = start + (long) (secs * 1e9);
        EventBus bus = side.client.eventBus();
        Runnable[] fire = new Runnable[1];
        fire[0] = () -> {
            long t0 = System.nanoTime();
            bus.<Buffer>request("svc", body).onComplete((m, err) -> {
                if (err != null) {
                    done.tryFail(err);
                    return;
                }
                long t1 = System.nanoTime();
                h.recordValue(t1 - t0);
                count[0]++;
                if (t1 < end) {
                    fire[0].run();
                } else if (--open[0] == 0) {
                    done.tryComplete(t1);
                }
            });
        };
        side.context.runOnContext(v -> {
            for (int i = 0; i < outstanding; i++) {
                fire[0].run();
            }
        });
        long finished = within(done.future(), secs + 30, side, "the last reply of request-reply");
        return new Result(count[0] / ((finished - start) / 1e9), h.getValueAtPercentile(50), h.getValueAtPercentile(99), Double.NaN);
    }

    /**
     * Publishes for {@code secs} in batches of {@link #ACK}, at most {@code -w} messages ahead of the slowest subscriber;
     * the rate is the messages every subscriber acknowledged in that time. Waits for the last batch's acknowledgements
     * after, so the next workload starts with nothing in flight.
     */
    private double publish(Side side, Buffer body, double secs) throws Exception {
        Promise<double[]> done = Promise.promise();
        EventBus bus = side.client.eventBus();
        side.context.runOnContext(v -> {
            long start = System.nanoTime();
            long from = side.slowest();
            long end = start + (long) (secs * 1e9);
            Runnable[] pump = new Runnable[1];
            pump[0] = () -> {
                while (side.published - side.slowest() < window) {
                    if (System.nanoTime() >= end) {
                        double rate = (side.slowest() - from) / ((System.nanoTime() - start) / 1e9);
                        awaitAcks(side, side.published).onComplete((x, err) -> {
                            if (err != null) {
                                done.tryFail(err);
                            } else {
                                done.tryComplete(new double[] {rate});
                            }
                        });
                        return;
                    }
                    for (int i = 0; i < ACK; i++) {
                        bus.publish("news", body);
                    }
                    side.published += ACK;
                }
                // The window is full: go on once the slowest subscriber has acknowledged one more batch.
                awaitAcks(side, side.published - window + ACK).onComplete((x, err) -> pump[0].run());
            };
            pump[0].run();
        });
        return within(done.future(), secs + 30, side, "the acknowledgement of every message published")[0];
    }

    private Datapath.Idle idle() {
        if (idleSpec == null) {
            return StackConfig.defaults(Path.of("unused"), 0).idle();
        }
        String[] p = idleSpec.split(",");
        if (p.length != 2) {
            throw new IllegalArgumentException("--idle takes SPIN_US,YIELD_US (e.g. 50,1000), not " + idleSpec);
        }
        return new Datapath.Idle(Long.parseLong(p[0].trim()) * 1000, Long.parseLong(p[1].trim()) * 1000, 10_000_000L);
    }

    private void report(List<Side> sides) {
        Side us = sides.getFirst();
        Result o = median(us.results);
        System.out.printf(Locale.ROOT, "vertx-eventbus: %d B, %d request(s) outstanding, publish to %d subscribers (window %d),"
                        + " %d turns of %.1f s each; peers: %s%n", size, outstanding, subscribers, window, turns, seconds,
                String.join("; ", sides.subList(1, sides.size()).stream().map(s -> s.label).toList()));
        for (int i = 0; i < turns; i++) {
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  turn %d:", i + 1));
            for (Side s : sides) {
                line.append(String.format(Locale.ROOT, " %s %s;", s.key, show(s.results.get(i))));
            }
            System.out.println(line.substring(0, line.length() - 1));
        }
        System.out.printf(Locale.ROOT, "  median: ours %s%n", show(o));
        StringBuilder peers = new StringBuilder();
        Side best = null;
        Side bestLatency = null;
        Side bestPublish = null;
        double bestRatio = Double.NaN;
        double bestLatencyRatio = Double.NaN;
        double bestPublishRatio = Double.NaN;
        for (Side s : sides.subList(1, sides.size())) {
            Result p = median(s.results);
            double ratio = ratio(us, s, 0);
            double latency = ratio(us, s, 1);
            double p99 = ratio(us, s, 2);
            double pub = ratio(us, s, 3);
            System.out.printf(Locale.ROOT, "  against %s: %s; request-reply ratio %s, p50 ratio %s, p99 ratio %s, publish ratio %s%n",
                    s.label, show(p), JsonNumber.orNa(ratio, 2), JsonNumber.orNa(latency, 2), JsonNumber.orNa(p99, 2),
                    JsonNumber.orNa(pub, 2));
            if (best == null || p.rate() > median(best.results).rate()) {
                best = s;
                bestRatio = ratio;
            }
            if (bestLatency == null || p.p50Ns() < median(bestLatency.results).p50Ns()) {
                bestLatency = s;
                bestLatencyRatio = latency;
            }
            if (bestPublish == null || p.publishRate() > median(bestPublish.results).publishRate()) {
                bestPublish = s;
                bestPublishRatio = pub;
            }
            peers.append(peers.isEmpty() ? "" : ",").append(String.format(Locale.ROOT,
                    "\"%s\":{\"msgs_s\":%s,\"p50_ns\":%d,\"p99_ns\":%d,\"publish_msgs_s\":%s,\"ratio\":%s,"
                            + "\"latency_ratio\":%s,\"p99_ratio\":%s,\"publish_ratio\":%s}",
                    s.key, JsonNumber.of(p.rate(), 3), p.p50Ns(), p.p99Ns(), JsonNumber.of(p.publishRate(), 3), JsonNumber.of(ratio, 4),
                    JsonNumber.of(latency, 4), JsonNumber.of(p99, 4), JsonNumber.of(pub, 4)));
        }
        System.out.printf(Locale.ROOT, "  best peer %s: request-reply ratio %s; lowest p50 %s: p50 ratio %s; best publish %s:"
                + " publish ratio %s (medians of the turns' ratios)%n", best.key, JsonNumber.orNa(bestRatio, 2), bestLatency.key,
                JsonNumber.orNa(bestLatencyRatio, 2), bestPublish.key, JsonNumber.orNa(bestPublishRatio, 2));
        if (json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"vertx-eventbus\",\"size\":%d,\"outstanding\":%d,\"subscribers\":%d,\"turns\":%d,"
                            + "\"ours\":{\"msgs_s\":%s,\"p50_ns\":%d,\"p99_ns\":%d,\"publish_msgs_s\":%s},\"peers\":{%s},"
                            + "\"best_peer\":\"%s\",\"best_ratio\":%s,\"best_latency_peer\":\"%s\",\"best_latency_ratio\":%s,"
                            + "\"best_publish_peer\":\"%s\",\"best_publish_ratio\":%s}%n",
                    size, outstanding, subscribers, turns, JsonNumber.of(o.rate(), 3), o.p50Ns(), o.p99Ns(),
                    JsonNumber.of(o.publishRate(), 3), peers, best.key, JsonNumber.of(bestRatio, 4), bestLatency.key,
                    JsonNumber.of(bestLatencyRatio, 4), bestPublish.key, JsonNumber.of(bestPublishRatio, 4));
        }
    }

    /** The median over the turns of ours/peer: 0 request rate, 1 p50, 2 p99, 3 publish rate. */
    private static double ratio(Side us, Side peer, int what) {
        double[] r = new double[us.results.size()];
        int n = 0;
        for (int i = 0; i < r.length; i++) {
            double p = value(peer.results.get(i), what);
            if (p > 0) { // a turn in which the peer measured nothing (a short turn on a loaded machine) has no ratio
                r[n++] = value(us.results.get(i), what) / p;
            }
        }
        return n == 0 ? Double.NaN : Turns.median(java.util.Arrays.copyOf(r, n));
    }

    private static double value(Result r, int what) {
        return switch (what) {
            case 0 -> r.rate();
            case 1 -> r.p50Ns();
            case 2 -> r.p99Ns();
            default -> r.publishRate();
        };
    }

    private static Result median(List<Result> rs) {
        double[][] v = new double[4][rs.size()];
        for (int i = 0; i < rs.size(); i++) {
            for (int w = 0; w < 4; w++) {
                v[w][i] = value(rs.get(i), w);
            }
        }
        return new Result(Turns.median(v[0]), (long) Turns.median(v[1]), (long) Turns.median(v[2]), Turns.median(v[3]));
    }

    private static String show(Result r) {
        return String.format(Locale.ROOT, "request-reply %,.0f/s p50 %.1f us p99 %.1f us, publish %,.0f/s to all",
                r.rate(), r.p50Ns() / 1e3, r.p99Ns() / 1e3, r.publishRate());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
