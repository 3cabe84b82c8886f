package dev.nupa.node.perftest;

import dev.nupa.node.NupaNode;
import dev.nupa.node.options.CommandNode;
import dev.nupa.node.options.NodeOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.cm.ConnectionRejected;
import dev.nupa.roce.cm.RdmaCm;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `nupa perf perftest TESTS [HOST]`: this node's RDMA transport against stock perftest (ib_write_lat, ib_send_lat,
 * ib_read_lat, ib_atomic_lat, ib_write_bw) on a Linux RDMA device, over RoCEv2 through the node's IP layer (a
 * gateway to the peer's Ethernet). Without HOST it is perftest's server: it listens on the side-channel port and
 * serves the tests in the order given, one connection each; with HOST it is the client and runs them in order,
 * retrying each connection until the peer's server is up. The QP details go over the node's TCP as perftest 6.x
 * exchanges them ({@link PerftestWire}); with {@code -R}, over an RC connection made through the CM, and the test's QP
 * is connected through the CM too ({@link PerftestCmChannel}). Sizes and iterations are not exchanged, so both sides
 * are given the same.
 */
@Command(name = "perftest", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Run perftest's tests (write-lat, send-lat, read-lat, atomic-lat, write-bw) against stock perftest on a "
                + "Linux RDMA device over RoCEv2: its server without HOST, its client with one.")
public final class PerftestCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "TESTS",
            description = "Tests in order, comma-separated: write-lat, send-lat, read-lat, atomic-lat, write-bw (or perftest's names, ib_write_lat...).")
    String tests;

    @Parameters(index = "1", arity = "0..1", paramLabel = "HOST", description = "The perftest server's IPv4 address; none: be the server.")
    String host;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "18515", description = "perftest's side-channel TCP port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES",
            description = "Message size, as the peer's -s (default: perftest's, 2 for latency, 65536 for write-bw; atomic-lat moves 8).")
    Integer size;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", description = "Iterations, as the peer's -n (default: perftest's, 1000 for latency, 5000 for write-bw).")
    Long iters;

    @Option(names = {"-t", "--tx-depth"}, paramLabel = "N", defaultValue = "128", description = "write-bw: WRITEs in flight (default: ${DEFAULT-VALUE}).")
    int txDepth;

    @Option(names = {"-Q", "--cq-mod"}, paramLabel = "N", defaultValue = "100", description = "write-bw: a completion every N WRITEs, at most -t (default: ${DEFAULT-VALUE}).")
    int cqMod;

    @Option(names = "--psn", paramLabel = "PSN", description = "The first PSN this side sends, 0..0xFFFFFF (decimal or 0x hex; default: random, as perftest).")
    String psn;

    @Option(names = "--path-mtu", paramLabel = "BYTES", defaultValue = "1024",
            description = "Path MTU offered, 256..4096; the smaller of both sides' is used (default: ${DEFAULT-VALUE}).")
    int pathMtu;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "120", description = "Seconds allowed for each test, connecting included (default: ${DEFAULT-VALUE}).")
    int timeout;

    @Option(names = {"-R", "--rdma_cm"}, description = "As perftest's -R: the side channel and the test's QP connected through the CM "
            + "(the InfiniBand CM, as rdma_cm), on the same port, instead of TCP.")
    boolean rdmaCm;

    @Mixin
    NodeOptions options;

    private int firstPsn;
    /** Where the test under way stands, for the message when it does not end in time (the tests run one at a time). */
    private volatile String stage = "starting the node";
    private volatile String lastTry = "";

    @Override
    public Integer call() throws Exception {
        List<PerftestRun.Test> list = new ArrayList<>();
        for (String t : tests.split(",")) {
            list.add(PerftestRun.Test.of(t.trim()));
        }
        int peer = host == null ? 0 : Ipv4Address.parse(host);
        if (size != null && (size < 1 || size > (1 << 23))) {
            throw new IllegalArgumentException("-s must be 1..8388608 bytes, not " + size);
        }
        if (iters != null && iters < 1) {
            throw new IllegalArgumentException("-n must be at least 1");
        }
        if (txDepth < 1 || txDepth > 4096 || cqMod < 1) {
            throw new IllegalArgumentException("-t must be 1..4096 and -Q at least 1");
        }
        if (pathMtu < 256 || pathMtu > 4096 || Integer.bitCount(pathMtu) != 1) {
            throw new IllegalArgumentException("--path-mtu is 256, 512, 1024, 2048 or 4096, not " + pathMtu);
        }
        if (port < 1 || port > 65535 || timeout < 1) {
            throw new IllegalArgumentException("--port must be 1..65535 and --timeout at least 1 s");
        }
        if (rdmaCm && psn != null) {
            throw new IllegalArgumentException("with -R the connection manager chooses the PSNs; --psn is for perftest's TCP exchange");
        }
        firstPsn = psn == null ? new SplittableRandom().nextInt(1 << 24) : parsePsn(psn);
        return CommandNode.run(options, (vertx, node) -> rdmaCm ? (host == null ? serveCm(vertx, node, list) : connectCm(vertx, node, peer, list))
                : host == null ? serve(vertx, node, list) : connect(vertx, node, peer, list));
    }

    private static int parsePsn(String s) {
        try {
            int v = s.startsWith("0x") || s.startsWith("0X") ? Integer.parseInt(s.substring(2), 16) : Integer.parseInt(s);
            if (v >= 0 && v < (1 << 24)) {
                return v;
            }
        } catch (NumberFormatException e) {
            // the message below
        }
        throw new IllegalArgumentException("--psn must be 0..0xFFFFFF (24 bits), not " + s);
    }

    int size(PerftestRun.Test t) {
        return size != null ? size : t.latency() ? 2 : 65_536;
    }

    long iterations(PerftestRun.Test t) {
        return iters != null ? iters : t.latency() ? 1_000 : 5_000;
    }

    int firstPsn() {
        return firstPsn;
    }

    void stage(String s) {
        stage = s;
        lastTry = "";
    }

    private int serve(Vertx vertx, NupaNode node, List<PerftestRun.Test> list) throws Exception {
        CompletableFuture<Void> all = new CompletableFuture<>();
        int[] next = {0};
        boolean[] busy = {false};
        NetServer server = vertx.createNetServer().connectHandler(sock -> {
            if (busy[0] || next[0] >= list.size()) {
                sock.close(); // perftest serves one connection at a time
                return;
            }
            busy[0] = true;
            PerftestRun.Test t = list.get(next[0]++);
            new PerftestSession(node, new PerftestChannel(sock, true), null, t, true, this, System.out::println).run().onComplete(ar -> {
                busy[0] = false;
                served(t, ar, next[0] == list.size(), all);
            });
        });
        stage("waiting for perftest's client");
        server.listen(port, "0.0.0.0").await(10, TimeUnit.SECONDS);
        System.out.println("perftest: serving " + tests + " on " + Ipv4Address.toString(node.ip().address()) + " port " + port);
        System.out.flush();
        try {
            await(all, (long) timeout * list.size(), "the tests");
        } finally {
            server.close();
        }
        summary(node, list.size());
        return 0;
    }

    private int connect(Vertx vertx, NupaNode node, int peer, List<PerftestRun.Test> list) throws Exception {
        return runClient(node, vertx.getOrCreateContext(), list, (t, deadline) -> {
            stage(t.perftest + ": connecting to " + Ipv4Address.toString(peer) + " port " + port + " over TCP");
            return dial(vertx, Ipv4Address.toString(peer), deadline)
                    .compose(sock -> new PerftestSession(node, new PerftestChannel(sock, false), null, t, false, this, System.out::println).run());
        });
    }

    /** A server's test has ended: the run fails with it, or goes on, or (the last) is over. */
    private void served(PerftestRun.Test t, io.vertx.core.AsyncResult<Void> ar, boolean last, CompletableFuture<Void> all) {
        if (ar.failed()) {
            all.completeExceptionally(ar.cause());
            return;
        }
        System.out.println(t.perftest + " server: done");
        stage("waiting for the next test's client");
        if (last) {
            all.complete(null);
        }
    }

    /** The client's run: each test in turn on {@code context}, within the timeout from its start. */
    private int runClient(NupaNode node, Context context, List<PerftestRun.Test> list,
                          java.util.function.BiFunction<PerftestRun.Test, Long, Future<Void>> test) throws Exception {
        for (PerftestRun.Test t : list) {
            CompletableFuture<Void> one = new CompletableFuture<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeout);
            context.runOnContext(v -> test.apply(t, deadline).onComplete(ar -> {
                if (ar.failed()) {
                    one.completeExceptionally(ar.cause());
                } else {
                    one.complete(null);
                }
            }));
            await(one, timeout, t.perftest);
            System.out.println(t.perftest + " client: done");
        }
        summary(node, list.size());
        return 0;
    }

    /**
     * perftest -R's server: one CM listener on the port for the whole run. A REQ while no test runs opens the next
     * test's side channel; the REQ that follows is its data connection, accepted onto the QP the test armed.
     */
    private int serveCm(Vertx vertx, NupaNode node, List<PerftestRun.Test> list) throws Exception {
        CompletableFuture<Void> all = new CompletableFuture<>();
        Context context = vertx.getOrCreateContext();
        int[] next = {0};
        // The QP a test armed for its data connection, and the promise that connection fulfils: a REQ while one is
        // armed is that connection; any other is the next test's side channel (the last test may still be closing).
        QueuePair[] armed = new QueuePair[1];
        Promise<Void>[] dataUp = new Promise[1];
        CompletableFuture<Void> listening = new CompletableFuture<>();
        stage("waiting for perftest's client");
        node.rdma().execute(ctx -> {
            RdmaCm cm = node.rdma().cm();
            cm.listen(port, req -> {
                if (armed[0] != null) { // the running test's data connection
                    QueuePair qp = armed[0];
                    armed[0] = null;
                    Promise<Void> up = dataUp[0];
                    req.accept(qp, new byte[0]).onComplete(ar -> context.runOnContext(v -> {
                        if (ar.failed()) {
                            up.tryFail(ar.cause());
                        } else {
                            up.tryComplete();
                        }
                    }));
                } else if (next[0] < list.size()) { // the next test's side channel
                    int index = next[0]++;
                    PerftestRun.Test t = list.get(index);
                    PerftestCmChannel ch = new PerftestCmChannel(ctx, cm, node.link().datapath(), true, context);
                    Promise<Void> up = Promise.promise();
                    QueuePair[] ours = new QueuePair[1];
                    PerftestSession.DataConnector data = new PerftestSession.DataConnector() {
                        @Override
                        public void arm(QueuePair qp) {
                            dataUp[0] = up;
                            ours[0] = qp;
                            armed[0] = qp; // on the datapath, where the listener reads it
                        }

                        @Override
                        public Future<Void> connect(QueuePair qp) {
                            return up.future();
                        }
                    };
                    req.accept(ch.qp, new byte[0]); // the peer's first SEND may come before our RTU: the receive is posted
                    context.runOnContext(v -> new PerftestSession(node, ch, data, t, true, this, System.out::println).run()
                            .onComplete(ar -> {
                                node.rdma().execute(c -> {
                                    if (armed[0] == ours[0]) {
                                        armed[0] = null; // a test that ended before its data connection came
                                    }
                                });
                                served(t, ar, index == list.size() - 1, all);
                            }));
                } else {
                    req.reject(new byte[0]); // every test was served
                }
            });
            listening.complete(null);
        });
        listening.get(10, TimeUnit.SECONDS);
        System.out.println("perftest: serving " + tests + " on " + Ipv4Address.toString(node.ip().address()) + " port " + port
                + " through rdma_cm");
        System.out.flush();
        try {
            await(all, (long) timeout * list.size(), "the tests");
        } finally {
            node.rdma().execute(ctx -> node.rdma().cm().unlisten(port));
        }
        summary(node, list.size());
        return 0;
    }

    /** perftest -R's client: each test's side channel, then its data connection, both through the CM. */
    private int connectCm(Vertx vertx, NupaNode node, int peer, List<PerftestRun.Test> list) throws Exception {
        Context context = vertx.getOrCreateContext();
        return runClient(node, context, list, (t, deadline) -> {
            PerftestSession.DataConnector data = new PerftestSession.DataConnector() {
                @Override
                public void arm(QueuePair qp) {
                }

                @Override
                public Future<Void> connect(QueuePair qp) {
                    // perftest's server listens for the data connection only once its answer has left: give it a moment,
                    // and try again while it refuses.
                    Promise<Void> p = Promise.promise();
                    stage(t.perftest + ": connecting the test's QP through the CM");
                    vertx.setTimer(100, id -> cmConnect(node, context, peer, qp, deadline).onComplete(p));
                    return p.future();
                }
            };
            stage(t.perftest + ": connecting the side channel to " + Ipv4Address.toString(peer) + " port " + port + " through the CM");
            return openCmChannel(node, context, peer, deadline)
                    .compose(ch -> new PerftestSession(node, ch, data, t, false, this, System.out::println).run());
        });
    }

    /**
     * A side channel to the peer's port through the CM; after a rejection other than a refusal, again with a fresh QP
     * every 200 ms (the peer may still hold the last one), until the deadline.
     */
    private Future<PerftestSideChannel> openCmChannel(NupaNode node, Context context, int peer, long deadline) {
        Promise<PerftestCmChannel> made = Promise.promise();
        node.rdma().execute(ctx -> made.complete(new PerftestCmChannel(ctx, node.rdma().cm(), node.link().datapath(), false, context)));
        return made.future().compose(ch -> cmConnect(node, context, peer, ch.qp, deadline).<PerftestSideChannel>map(ch).recover(e -> {
            ch.close();
            if (System.nanoTime() > deadline) {
                return Future.failedFuture(e);
            }
            lastTry = "; the last try: " + e.getMessage();
            Promise<PerftestSideChannel> p = Promise.promise();
            node.vertx().setTimer(200, id -> openCmChannel(node, context, peer, deadline).onComplete(p));
            return p.future();
        }));
    }

    /** Connects {@code qp} to the peer's port through the CM, its REQ resent while unanswered and again every 100 ms while refused, until the deadline. */
    private Future<Void> cmConnect(NupaNode node, Context context, int peer, QueuePair qp, long deadline) {
        Promise<Void> p = Promise.promise();
        node.rdma().execute(ctx -> node.rdma().cm().connect(peer, port, qp, new byte[0], deadline - System.nanoTime()).onComplete(ar -> context.runOnContext(v -> {
            if (ar.succeeded()) {
                p.complete();
            } else if (ar.cause() instanceof ConnectionRejected r && r.refused() && System.nanoTime() < deadline) {
                lastTry = "; the last try: " + ar.cause().getMessage();
                node.vertx().setTimer(100, id -> cmConnect(node, context, peer, qp, deadline).onComplete(p));
            } else {
                p.fail(ar.cause());
            }
        })));
        return p.future();
    }

    /** Connects, again every 200 ms while the peer refuses (its server may not be up yet), until the deadline. */
    private Future<NetSocket> dial(Vertx vertx, String peer, long deadline) {
        // A short connect timeout: while the peer's address does not answer ARP yet, a fresh SYN beats a backed-off one.
        return vertx.createNetClient(new NetClientOptions().setConnectTimeout(2_000)).connect(port, peer).recover(e -> {
            if (System.nanoTime() > deadline) {
                return Future.failedFuture(new IllegalStateException("no perftest server at " + peer + " port " + port
                        + " within " + timeout + " s: " + e.getMessage()));
            }
            Promise<NetSocket> p = Promise.promise();
            vertx.setTimer(200, id -> dial(vertx, peer, deadline).onComplete(p));
            return p.future();
        });
    }

    private void await(CompletableFuture<Void> f, long seconds, String what) throws Exception {
        try {
            f.get(seconds, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException(what + " did not end within " + seconds + " s (it was " + stage + lastTry
                    + "): is the perftest peer up and running the same tests?");
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            throw c instanceof Exception x ? x : new IllegalStateException(c);
        }
    }

    private void summary(NupaNode node, int n) throws InterruptedException {
        if (rdmaCm) {
            Thread.sleep(200); // the DREPs of our last DREQs, before the node leaves
        }
        printSummary(node, n);
    }

    private static void printSummary(NupaNode node, int n) {
        var c = node.rdma().context();
        System.out.println("perftest: " + n + " test(s) done; rocev2_sent=" + c.counter(RdmaCounter.ROCEV2_SENT) + " rocev2_received="
                + c.counter(RdmaCounter.ROCEV2_RECEIVED) + " bad_icrc=" + c.counter(RdmaCounter.BAD_ICRC));
    }
}
