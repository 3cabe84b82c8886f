package dev.nupa.node;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.nupa.ip.Ipv4Address;
import dev.nupa.roce.RdmaCounter;
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
 * exchanges them ({@link PerftestWire}); sizes and iterations are not exchanged, so both sides are given the same.
 */
@Command(name = "perftest", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Run perftest's tests (write-lat, send-lat, read-lat, atomic-lat, write-bw) against stock perftest on a "
                + "Linux RDMA device over RoCEv2: its server without HOST, its client with one.")
final class PerftestCommand implements Callable<Integer> {
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

    @Option(names = {"-Q", "--cq-mod"}, paramLabel = "N", defaultValue = "100", description = "write-bw: a completion every N WRITEs (default: ${DEFAULT-VALUE}).")
    int cqMod;

    @Option(names = "--psn", paramLabel = "PSN", description = "The first PSN this side sends, 0..0xFFFFFF (decimal or 0x hex; default: random, as perftest).")
    String psn;

    @Option(names = "--path-mtu", paramLabel = "BYTES", defaultValue = "1024",
            description = "Path MTU offered, 256..4096; the smaller of both sides' is used (default: ${DEFAULT-VALUE}).")
    int pathMtu;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "120", description = "Seconds allowed for each test, connecting included (default: ${DEFAULT-VALUE}).")
    int timeout;

    @Mixin
    NodeOptions options;

    private int firstPsn;

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
        firstPsn = psn == null ? new SplittableRandom().nextInt(1 << 24) : parsePsn(psn);
        return CommandNode.run(options, (vertx, node) -> host == null ? serve(vertx, node, list) : connect(vertx, node, peer, list));
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
            new PerftestSession(node, sock, t, true, this, System.out::println).run().onComplete(ar -> {
                busy[0] = false;
                if (ar.failed()) {
                    all.completeExceptionally(ar.cause());
                } else {
                    System.out.println(t.perftest + " server: done");
                    if (next[0] == list.size()) {
                        all.complete(null);
                    }
                }
            });
        });
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
        for (PerftestRun.Test t : list) {
            CompletableFuture<Void> one = new CompletableFuture<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeout);
            vertx.runOnContext(v -> dial(vertx, Ipv4Address.toString(peer), deadline).compose(sock ->
                    new PerftestSession(node, sock, t, false, this, System.out::println).run()).onComplete(ar -> {
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

    private static void await(CompletableFuture<Void> f, long seconds, String what) throws Exception {
        try {
            f.get(seconds, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException(what + " did not end within " + seconds + " s: is the perftest peer running the same tests?");
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            throw c instanceof Exception x ? x : new IllegalStateException(c);
        }
    }

    private static void summary(NupaNode node, int n) {
        var c = node.rdma().context();
        System.out.println("perftest: " + n + " test(s) done; rocev2_sent=" + c.counter(RdmaCounter.ROCEV2_SENT) + " rocev2_received="
                + c.counter(RdmaCounter.ROCEV2_RECEIVED) + " bad_icrc=" + c.counter(RdmaCounter.BAD_ICRC));
    }
}
