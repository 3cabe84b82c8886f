package dev.nupa.perf;

import java.io.BufferedReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.nupa.device.ShmFabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
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
 *
 * <p>Two more yardsticks tell what a fresh process costs from what any request costs: the steady figure (the median
 * of the last ten requests, the n-th being one sample), and the warm first: after the n requests the client idles
 * {@code --pause-ms} (the server idled at least as long before the first request, while the client started) and sends
 * one request more from a fresh socket, or a fresh HTTP client and so a fresh connection: the first request as a warm
 * process makes it. The client's own lambdas are made before its first request is timed, so the timing holds the
 * transport's first use, not the linking of the measuring code's call sites.
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

    @Option(names = "--pause-ms", paramLabel = "MS", defaultValue = "3000",
            description = "Idle time before the warm first request, from a fresh socket or connection (default: ${DEFAULT-VALUE}).")
    int pauseMs;

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
                + " %d requests each, %d ms apart, then after %d ms one from a fresh socket or connection; round trips from the"
                + " client's event loop; %s%n", runs, requests, gapMs, pauseMs,
                warmup == 0 ? "no warm-up" : "each process warmed up with " + warmup + " rounds of NupaVertx.warmUp at start");
        String u = summary("UDP echo", udp);
        String h = summary("HTTP GET", http);
        if (json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"first-request\",\"runs\":%d,\"requests\":%d,\"warmup\":%d,\"udp\":%s,\"http\":%s}%n",
                    runs, requests, warmup, u, h);
        }
        return 0;
    }

    /** Per run, each with fresh processes: the figures its client prints ({@link #request}), indexed as below. */
    private double[][] measure(String kind) throws Exception {
        double[][] r = new double[runs][];
        for (int i = 0; i < runs; i++) {
            r[i] = run(kind);
            System.out.printf(Locale.ROOT, "  %s run %d: first %.1f us (the client loaded %.0f classes meanwhile), 2nd %.1f us, 10th %.1f us,"
                    + " %dth %.1f us, steady %.1f us, warm first %.1f us: first / %dth %.1f, / steady %.1f, / warm first %.1f%n", kind, i + 1,
                    r[i][FIRST] / 1e3, r[i][CLASSES], r[i][SECOND] / 1e3, r[i][TENTH] / 1e3, requests, r[i][LAST] / 1e3, r[i][STEADY] / 1e3,
                    r[i][AGAIN] / 1e3, requests, r[i][FIRST] / r[i][LAST], r[i][FIRST] / r[i][STEADY], r[i][FIRST] / r[i][AGAIN]);
        }
        return r;
    }

    /** The figures of one run, by index: times in nanoseconds, and the classes the client loaded during its first request. */
    private static final int FIRST = 0, SECOND = 1, TENTH = 2, LAST = 3, STEADY = 4, AGAIN = 5, CLASSES = 6;

    private String summary(String what, double[][] r) {
        double[] first = column(r, FIRST);
        double[] last = column(r, LAST);
        double[] steady = column(r, STEADY);
        double[] again = column(r, AGAIN);
        Ratio toLast = Ratio.of(first, last);
        Ratio toSteady = Ratio.of(first, steady);
        Ratio toAgain = Ratio.of(first, again);
        System.out.printf(Locale.ROOT, "  %s: first %.1f us, %dth %.1f us, steady %.1f us, warm first %.1f us (medians);"
                        + " first / %dth %s, / steady %s, / warm first %s%n", what, Turns.median(first) / 1e3, requests,
                Turns.median(last) / 1e3, Turns.median(steady) / 1e3, Turns.median(again) / 1e3, requests, toLast, toSteady, toAgain);
        return String.format(Locale.ROOT, "{\"first_ns\":%s,\"last_ns\":%s,\"ratio\":%s,\"ratio_min\":%s,\"ratio_max\":%s,"
                        + "\"steady_ns\":%s,\"ratio_steady\":%s,\"again_ns\":%s,\"ratio_again\":%s}",
                JsonNumber.of(Turns.median(first), 0), JsonNumber.of(Turns.median(last), 0), JsonNumber.of(toLast.median, 3),
                JsonNumber.of(toLast.min, 3), JsonNumber.of(toLast.max, 3), JsonNumber.of(Turns.median(steady), 0),
                JsonNumber.of(toSteady.median, 3), JsonNumber.of(Turns.median(again), 0), JsonNumber.of(toAgain.median, 3));
    }

    private static double[] column(double[][] r, int k) {
        double[] c = new double[r.length];
        for (int i = 0; i < r.length; i++) {
            c[i] = r[i][k];
        }
        return c;
    }

    /** The run-by-run ratios of two figures: median and range. */
    private record Ratio(double median, double min, double max) {
        static Ratio of(double[] a, double[] b) {
            double[] q = new double[a.length];
            for (int i = 0; i < a.length; i++) {
                q[i] = a[i] / b[i];
            }
            return new Ratio(Turns.median(q), Arrays.stream(q).min().orElse(Double.NaN), Arrays.stream(q).max().orElse(Double.NaN));
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%.1f (%.1f-%.1f)", median, min, max);
        }
    }

    private static final Pattern RESULT = Pattern.compile("^first-request-result((?: \\d+){7})$");

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
                    result = Arrays.stream(m.group(1).strip().split(" ")).mapToDouble(Long::parseLong).toArray();
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

    /**
     * The client process: {@code requests} requests of {@code kind} from node 1's event loop, one after another, then
     * after the pause one more from a fresh socket or HTTP client; prints the figures {@link #run} reads.
     */
    private int request(String kind) throws Exception {
        if (!kind.equals("udp") && !kind.equals("http")) {
            throw new IllegalArgumentException("--client takes udp or http, not " + kind);
        }
        Vertx v = NupaVertx.create(StackConfig.defaults(fabric, 1));
        warmUp(v);
        java.lang.management.ClassLoadingMXBean classes = java.lang.management.ManagementFactory.getClassLoadingMXBean();
        long[] loaded = {0, 0}; // classes loaded before the first request is sent, and once it is answered
        long[] times = sequence(v, kind, requests, () -> loaded[0] = classes.getTotalLoadedClassCount(),
                () -> loaded[1] = classes.getTotalLoadedClassCount());
        Thread.sleep(pauseMs);
        long again = sequence(v, kind, 1, () -> { }, () -> { })[0];
        long[] tail = Arrays.copyOfRange(times, Math.max(0, requests - 10), requests);
        Arrays.sort(tail);
        System.out.printf("first-request-result %d %d %d %d %d %d %d%n", times[0], times[1], times[Math.min(9, requests - 1)],
                times[requests - 1], tail[(tail.length - 1) / 2], again, loaded[1] - loaded[0]);
        System.out.flush();
        v.close().await(10, TimeUnit.SECONDS);
        return 0;
    }

    /**
     * {@code n} round trips of {@code kind} one after another from a fresh socket (UDP) or a fresh HTTP client (so a
     * fresh connection), each {@code --gap-ms} after the last answer; their times. Every lambda of the loop is made
     * before the first is sent: a lambda's call site is linked (a class made) where it is first evaluated, and that
     * is the measuring code's cost, not the transport's. {@code beforeFirst} and {@code afterFirst} run on the event
     * loop right before the first send and right after its answer.
     */
    private long[] sequence(Vertx v, String kind, int n, Runnable beforeFirst, Runnable afterFirst) throws Exception {
        long[] times = new long[n];
        int[] i = {0};
        CompletableFuture<Void> done = new CompletableFuture<>();
        Handler<Throwable> fail = done::completeExceptionally;
        Runnable[] send = new Runnable[1];
        Handler<Void> go = x -> send[0].run();
        Handler<Long> fire = id -> send[0].run();
        Runnable next = gapMs == 0 ? () -> v.runOnContext(go) : () -> v.setTimer(gapMs, fire);
        long[] sentAt = {0};
        LongConsumer answered = t -> {
            times[i[0]++] = t;
            if (i[0] == 1) {
                afterFirst.run();
            }
            if (i[0] == n) {
                done.complete(null);
            } else {
                next.run();
            }
        };
        Runnable close;
        if (kind.equals("udp")) {
            DatagramSocket s = v.createDatagramSocket();
            Buffer datagram = Buffer.buffer(new byte[64]);
            s.handler(p -> answered.accept(System.nanoTime() - sentAt[0]));
            send[0] = () -> {
                sentAt[0] = System.nanoTime();
                s.send(datagram, UDP_PORT, SERVER_IP).onFailure(fail);
            };
            s.listen(0, "0.0.0.0").await(30, TimeUnit.SECONDS);
            close = s::close;
        } else {
            HttpClient hc = v.createHttpClient();
            Function<HttpClientResponse, Future<Buffer>> body = HttpClientResponse::body;
            Function<HttpClientRequest, Future<Buffer>> exchange = req -> req.send().compose(body);
            Handler<AsyncResult<Buffer>> outcome = ar -> {
                if (ar.failed()) {
                    fail.handle(ar.cause());
                } else {
                    answered.accept(System.nanoTime() - sentAt[0]);
                }
            };
            send[0] = () -> {
                sentAt[0] = System.nanoTime();
                hc.request(HttpMethod.GET, HTTP_PORT, SERVER_IP, "/").compose(exchange).onComplete(outcome);
            };
            close = hc::close;
        }
        v.runOnContext(x -> {
            beforeFirst.run();
            send[0].run();
        });
        try {
            done.get(60, TimeUnit.SECONDS);
        } finally {
            close.run();
        }
        return times;
    }

    /** With --warmup: the warm-up as a service would run it at start, its time on stderr. */
    private void warmUp(Vertx v) throws Exception {
        if (warmup > 0) {
            long t0 = System.nanoTime();
            NupaVertx.warmUp(v, warmup).await(120, TimeUnit.SECONDS);
            System.err.printf(Locale.ROOT, "warm-up of %d rounds: %.0f ms%n", warmup, (System.nanoTime() - t0) / 1e6);
        }
    }
}
