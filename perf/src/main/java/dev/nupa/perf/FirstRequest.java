package dev.nupa.perf;

import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.nupa.device.ShmFabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf first-request`: how much slower the first request of a fresh process is than its hundredth. Each run
 * starts, on a fresh fabric file, a fresh server process (a Vert.x application over the NUPA transport: a UDP echo
 * and an HTTP server) and then a fresh client process (a Vert.x application on another node), which sends {@code -n}
 * requests one after another, each {@code --gap-ms} after the last answer, all from its event loop, and times each
 * from its send to its answer. UDP and HTTP each get their own fresh pair of processes. Reported: the first, the
 * second, the tenth and the n-th request, and first / n-th, per run and as the median (range) over {@code --runs}.
 * The first HTTP request includes the TCP handshake (the connection is opened for it), as a fresh client's does.
 * With {@code --warmup R} each process runs {@link NupaVertx#warmUp} of R rounds as it starts, before the server says
 * it is ready and before the client's first request.
 */
@Command(name = "first-request", mixinStandardHelpOptions = true,
        description = "The first UDP echo and HTTP request of fresh node processes against their n-th (default 100th).")
final class FirstRequest implements Callable<Integer> {
    private static final int UDP_PORT = 7;
    private static final int HTTP_PORT = 8080;
    private static final String SERVER_IP = "10.0.0.1";

    @Option(names = "--runs", paramLabel = "N", defaultValue = "3", description = "Fresh pairs of processes per kind (default: ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = {"-n", "--requests"}, paramLabel = "N", defaultValue = "100", description = "Requests per client process (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--gap-ms", paramLabel = "MS", defaultValue = "2", description = "Pause after each answer, as a client at light load (default: ${DEFAULT-VALUE}).")
    int gapMs;

    @Option(names = "--warmup", paramLabel = "ROUNDS", defaultValue = "0",
            description = "Each process warms up with NupaVertx.warmUp of ROUNDS rounds as it starts (default: ${DEFAULT-VALUE}, none).")
    int warmup;

    @Option(names = "--json", description = "Print one JSON object on the last line.")
    boolean json;

    @Option(names = "--server", hidden = true, description = "Run the server side on --fabric (started by the tool).")
    boolean server;

    @Option(names = "--client", paramLabel = "KIND", hidden = true, description = "Run a client of KIND (udp or http) on --fabric (started by the tool).")
    String client;

    @Option(names = "--fabric", paramLabel = "PATH", hidden = true, description = "The fabric file of a --server or --client.")
    Path fabric;

    @Override
    public Integer call() throws Exception {
        if (runs < 1 || requests < 2 || gapMs < 0) {
            throw new IllegalArgumentException("need --runs >= 1, -n >= 2 and --gap-ms >= 0");
        }
        if (server || client != null) {
            if (fabric == null) {
                throw new IllegalArgumentException("--server and --client need --fabric");
            }
            return server ? serve() : request(client);
        }
        double[][] udp = measure("udp");
        double[][] http = measure("http");
        System.out.printf(Locale.ROOT, "first-request: fresh server and client processes (Vert.x over the NUPA transport), %d runs of"
                + " %d requests each, %d ms apart; round trips from the client's event loop; %s%n", runs, requests, gapMs,
                warmup == 0 ? "no warm-up" : "each process warmed up with " + warmup + " rounds of NupaVertx.warmUp at start");
        String u = summary("UDP echo", udp);
        String h = summary("HTTP GET", http);
        if (json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"first-request\",\"runs\":%d,\"requests\":%d,\"warmup\":%d,\"udp\":%s,\"http\":%s}%n",
                    runs, requests, warmup, u, h);
        }
        return 0;
    }

    /**
     * Per run: first, second, tenth and n-th round trip (ns) of {@code kind}, each run with fresh processes, and the
     * classes the client loaded during its first.
     */
    private double[][] measure(String kind) throws Exception {
        double[][] r = new double[runs][];
        for (int i = 0; i < runs; i++) {
            r[i] = run(kind);
            System.out.printf(Locale.ROOT, "  %s run %d: first %.1f us (the client loaded %.0f classes meanwhile), 2nd %.1f us, 10th %.1f us,"
                    + " %dth %.1f us: first / %dth %.1f%n", kind, i + 1, r[i][0] / 1e3, r[i][4], r[i][1] / 1e3, r[i][2] / 1e3, requests,
                    r[i][3] / 1e3, requests, r[i][0] / r[i][3]);
        }
        return r;
    }

    private String summary(String what, double[][] r) {
        double[] first = new double[r.length];
        double[] last = new double[r.length];
        double[] ratio = new double[r.length];
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (int i = 0; i < r.length; i++) {
            first[i] = r[i][0];
            last[i] = r[i][3];
            ratio[i] = r[i][0] / r[i][3];
            lo = Math.min(lo, ratio[i]);
            hi = Math.max(hi, ratio[i]);
        }
        System.out.printf(Locale.ROOT, "  %s: first %.1f us, %dth %.1f us (medians); first / %dth %.1f (%.1f-%.1f)%n", what,
                Turns.median(first) / 1e3, requests, Turns.median(last) / 1e3, requests, Turns.median(ratio), lo, hi);
        return String.format(Locale.ROOT, "{\"first_ns\":%s,\"last_ns\":%s,\"ratio\":%s,\"ratio_min\":%s,\"ratio_max\":%s}",
                JsonNumber.of(Turns.median(first), 0), JsonNumber.of(Turns.median(last), 0), JsonNumber.of(Turns.median(ratio), 3),
                JsonNumber.of(lo, 3), JsonNumber.of(hi, 3));
    }

    private static final Pattern RESULT = Pattern.compile("^first-request-result (\\d+) (\\d+) (\\d+) (\\d+) (\\d+)$");

    /** One run: a fresh fabric, server and client; the client's four figures. */
    private double[] run(String kind) throws Exception {
        Path f = PerfRunner.freshFabricPath("perf-first");
        ShmFabric.create(f, FabricGeometry.defaults()).close();
        Process[] children = new Process[2];
        try {
            children[0] = Children.start(List.of("perf", "first-request", "--server", "--fabric", f.toString(),
                    "--warmup", Integer.toString(warmup)));
            BufferedReader serverOut = Children.stdout(children[0]);
            Children.awaitLine(children[0], serverOut, PerfRunner.READY);
            children[1] = Children.start(List.of("perf", "first-request", "--client", kind, "--fabric", f.toString(),
                    "-n", Integer.toString(requests), "--gap-ms", Integer.toString(gapMs), "--warmup", Integer.toString(warmup)));
            BufferedReader out = Children.stdout(children[1]);
            double[] result = null;
            for (String line; (line = out.readLine()) != null; ) {
                Matcher m = RESULT.matcher(line);
                if (m.matches()) {
                    result = new double[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)),
                            Long.parseLong(m.group(4)), Long.parseLong(m.group(5))};
                } else {
                    System.out.println(line);
                }
            }
            int status = Children.waitFor(children[1], 60);
            if (status != 0 || result == null) {
                throw new IllegalStateException("the " + kind + " client process ended with status " + status + " and no result");
            }
            return result;
        } finally {
            Children.stop(children[0], 10);
            Children.kill(children[1]);
            PerfRunner.deleteQuietly(f);
        }
    }

    /** The server process: a UDP echo and an HTTP server on node 0 until it is stopped. */
    private int serve() throws Exception {
        Vertx v = NupaVertx.create(StackConfig.defaults(fabric, 0));
        warmUp(v);
        DatagramSocket echo = v.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(UDP_PORT, "0.0.0.0").await(30, TimeUnit.SECONDS);
        Buffer body = Buffer.buffer("ok");
        v.createHttpServer().requestHandler(req -> req.response().end(body)).listen(HTTP_PORT, "0.0.0.0").await(30, TimeUnit.SECONDS);
        System.out.println(PerfRunner.READY);
        System.out.flush();
        new CountDownLatch(1).await(); // until stopped (SIGTERM)
        return 0;
    }

    /** The client process: {@code requests} requests of {@code kind} from node 1's event loop, one after another. */
    private int request(String kind) throws Exception {
        if (!kind.equals("udp") && !kind.equals("http")) {
            throw new IllegalArgumentException("--client takes udp or http, not " + kind);
        }
        Vertx v = NupaVertx.create(StackConfig.defaults(fabric, 1));
        warmUp(v);
        long[] times = new long[requests];
        java.lang.management.ClassLoadingMXBean classes = java.lang.management.ManagementFactory.getClassLoadingMXBean();
        long[] loaded = {0, 0}; // classes loaded before the first request is sent, and once it is answered
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (kind.equals("udp")) {
            DatagramSocket s = v.createDatagramSocket();
            Buffer datagram = Buffer.buffer(new byte[64]);
            int[] i = {0};
            long[] sentAt = {0};
            Runnable[] send = new Runnable[1];
            s.handler(p -> {
                times[i[0]++] = System.nanoTime() - sentAt[0];
                if (i[0] == 1) {
                    loaded[1] = classes.getTotalLoadedClassCount();
                }
                if (i[0] == requests) {
                    done.complete(null);
                } else {
                    after(v, send[0]);
                }
            });
            send[0] = () -> {
                sentAt[0] = System.nanoTime();
                s.send(datagram, UDP_PORT, SERVER_IP).onFailure(done::completeExceptionally);
            };
            s.listen(0, "0.0.0.0").await(30, TimeUnit.SECONDS);
            v.runOnContext(x -> {
                loaded[0] = classes.getTotalLoadedClassCount();
                send[0].run();
            });
        } else {
            HttpClient hc = v.createHttpClient();
            int[] i = {0};
            Runnable[] send = new Runnable[1];
            send[0] = () -> {
                long t0 = System.nanoTime();
                hc.request(HttpMethod.GET, HTTP_PORT, SERVER_IP, "/").compose(req -> req.send().compose(HttpClientResponse::body))
                        .onComplete(ar -> {
                            if (ar.failed()) {
                                done.completeExceptionally(ar.cause());
                                return;
                            }
                            times[i[0]++] = System.nanoTime() - t0;
                            if (i[0] == 1) {
                                loaded[1] = classes.getTotalLoadedClassCount();
                            }
                            if (i[0] == requests) {
                                done.complete(null);
                            } else {
                                after(v, send[0]);
                            }
                        });
            };
            v.runOnContext(x -> {
                loaded[0] = classes.getTotalLoadedClassCount();
                send[0].run();
            });
        }
        done.get(60, TimeUnit.SECONDS);
        System.out.printf("first-request-result %d %d %d %d %d%n", times[0], times[1], times[Math.min(9, requests - 1)], times[requests - 1],
                loaded[1] - loaded[0]);
        System.out.flush();
        v.close().await(10, TimeUnit.SECONDS);
        return 0;
    }

    /** With --warmup: the warm-up as a service would run it at start, its time on stderr. */
    private void warmUp(Vertx v) throws Exception {
        if (warmup > 0) {
            long t0 = System.nanoTime();
            NupaVertx.warmUp(v, warmup).await(120, TimeUnit.SECONDS);
            System.err.printf(Locale.ROOT, "warm-up of %d rounds: %.0f ms%n", warmup, (System.nanoTime() - t0) / 1e6);
        }
    }

    /** Runs {@code next} on the event loop after the gap (at once for 0). */
    private void after(Vertx v, Runnable next) {
        if (gapMs == 0) {
            v.runOnContext(x -> next.run());
        } else {
            v.setTimer(gapMs, id -> next.run());
        }
    }
}
