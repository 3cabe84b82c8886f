package dev.nupa.transport;

import dev.nupa.device.ShmFabric;
import dev.nupa.ip.wire.Ipv4Address;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.internal.VertxInternal;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Runs a node's UDP and HTTP paths as it starts: a fresh JVM loads the classes of a path and interprets its code the
 * first times it runs, so without this a service's first requests pay hundreds of milliseconds that later ones do not.
 * First over the node's own loopback (127.0.0.1: its sockets and event loops), then between two throwaway nodes on a
 * private fabric file (what the loopback does not run: the rings to another node, the neighbor, the doorbell that
 * wakes a sleeping loop); HTTP both over one connection and a connection per request. Then it waits for the JIT
 * compilers to settle. Sequential round trips; everything it opens is closed, and the file deleted, before it
 * completes (docs/vertx-transport.md, "A fresh process's first requests").
 */
final class Warmup {
    private static final long UDP_TIMEOUT_MS = 60_000;
    /** The last round trips between the throwaway nodes, each this long after the one before: the loops sleep between. */
    private static final int SPACED_ROUNDS = 20;
    private static final long SPACE_MS = 1;
    /** The most each step between the two nodes may take (each a second or so for 500 rounds on 2 vCPUs). */
    private static final long PAIR_TIMEOUT_S = 120;
    private static final long COMPILER_QUIET_MS = 200;
    private static final long COMPILER_WAIT_MS = 5_000;

    private Warmup() {
    }

    /** {@code rounds} UDP echoes and HTTP GETs over the loopback, then as many between two nodes of a private fabric. */
    static Future<Void> run(Vertx vertx, int rounds) {
        return udp(vertx, vertx, "127.0.0.1", rounds, 0)
                .compose(x -> http(vertx, vertx, "127.0.0.1", rounds, 0, true))
                .compose(x -> http(vertx, vertx, "127.0.0.1", rounds, 0, false))
                .compose(x -> betweenNodes(vertx, rounds));
    }

    /**
     * Waits until the JIT compilers have finished nothing for COMPILER_QUIET_MS (at most COMPILER_WAIT_MS): what the
     * warm-up made hot is compiled before the first requests, not beside them (on a few cores the compiler threads
     * take the CPU from the event loops for a while after a warm-up, and the first requests wait for them).
     */
    private static void awaitCompilers() throws InterruptedException {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return;
        }
        long start = System.nanoTime();
        long quietSince = start;
        long seen = jit.getTotalCompilationTime();
        while (System.nanoTime() - start < COMPILER_WAIT_MS * 1_000_000) {
            Thread.sleep(10);
            long t = jit.getTotalCompilationTime();
            if (t != seen) {
                seen = t;
                quietSince = System.nanoTime();
            } else if (System.nanoTime() - quietSince >= COMPILER_QUIET_MS * 1_000_000) {
                return;
            }
        }
    }

    /**
     * On a thread of its own (not a Vert.x context's: the two nodes' Vert.x instances are created and closed there, and
     * their closing must not complete anything on their own event loops); the caller's context gets the outcome.
     */
    private static Future<Void> betweenNodes(Vertx vertx, int rounds) {
        Promise<Void> done = ((VertxInternal) vertx).getOrCreateContext().promise();
        Thread.ofPlatform().daemon().name("nupa-warmup").start(() -> {
            try {
                betweenNodes(rounds);
                done.complete();
            } catch (Throwable e) {
                done.fail(e);
            }
        });
        return done.future();
    }

    private static void betweenNodes(int rounds) throws Exception {
        Pair p = Pair.open();
        try {
            String server = Ipv4Address.toString(NupaVertx.stack(p.server).ip().address());
            int spaced = Math.min(SPACED_ROUNDS, rounds);
            udp(p.server, p.client, server, rounds, spaced).await(PAIR_TIMEOUT_S, TimeUnit.SECONDS);
            http(p.server, p.client, server, rounds, 0, true).await(PAIR_TIMEOUT_S, TimeUnit.SECONDS);
            http(p.server, p.client, server, rounds, spaced, false).await(PAIR_TIMEOUT_S, TimeUnit.SECONDS);
        } finally {
            p.close();
        }
        awaitCompilers();
    }

    /** Two nodes of their own on a fabric file of their own, in this process. */
    private record Pair(Path fabric, Vertx server, Vertx client) {
        static Pair open() {
            Path fabric = ShmFabric.freshPath("warmup");
            Vertx server = null;
            try {
                server = NupaVertx.create(StackConfig.defaults(fabric, 0));
                return new Pair(fabric, server, NupaVertx.create(StackConfig.defaults(fabric, 1)));
            } catch (RuntimeException e) {
                if (server != null) {
                    server.close();
                }
                delete(fabric);
                throw e;
            }
        }

        void close() throws Exception {
            try {
                client.close().await(PAIR_TIMEOUT_S, TimeUnit.SECONDS);
            } finally {
                try {
                    server.close().await(PAIR_TIMEOUT_S, TimeUnit.SECONDS);
                } finally {
                    delete(fabric);
                }
            }
        }

        private static void delete(Path fabric) {
            try {
                Files.deleteIfExists(fabric);
            } catch (IOException e) {
                fabric.toFile().deleteOnExit(); // at worst as the process ends
            }
        }
    }

    /** Echoes of a 64-byte datagram, one after another; the last {@code spaced} each SPACE_MS after the one before. */
    private static Future<Void> udp(Vertx sv, Vertx cv, String host, int rounds, int spaced) {
        DatagramSocket server = sv.createDatagramSocket();
        DatagramSocket client = cv.createDatagramSocket();
        server.handler(p -> server.send(p.data(), p.sender().port(), p.sender().host()));
        Buffer datagram = Buffer.buffer(new byte[64]);
        Promise<Void> done = Promise.promise();
        int[] left = {rounds};
        Future<Void> run = server.listen(0, bind(sv, cv, host)).compose(s -> client.listen(0, bind(sv, cv, host))).compose(c -> {
            int port = server.localAddress().port();
            Runnable send = () -> client.send(datagram, port, host).onFailure(done::tryFail);
            client.handler(p -> {
                if (--left[0] == 0) {
                    done.tryComplete();
                } else {
                    after(cv, left[0] <= spaced, send);
                }
            });
            send.run();
            // UDP may lose a datagram (a full queue): the warm-up then ends with the reason rather than never.
            long timer = cv.setTimer(UDP_TIMEOUT_MS, id -> done.tryFail(new IllegalStateException("warm-up: the UDP echoes"
                    + " to " + host + " stalled with " + left[0] + " of " + rounds + " left after " + UDP_TIMEOUT_MS / 1000
                    + " s (a datagram lost: the node's counters say where); start the node without the warm-up")));
            return done.future().onComplete(x -> cv.cancelTimer(timer));
        });
        return run.eventually(() -> client.close().eventually(server::close));
    }

    /**
     * GETs one after another, the last {@code spaced} each SPACE_MS after the one before; over one connection, or each
     * from a client and over a connection of its own ({@code fresh}: what runs once a client or a connection, its
     * opening and closing on both sides, runs as often as a request).
     */
    private static Future<Void> http(Vertx sv, Vertx cv, String host, int rounds, int spaced, boolean fresh) {
        Buffer body = Buffer.buffer("ok");
        HttpServer server = sv.createHttpServer().requestHandler(req -> req.response().end(body));
        HttpClient shared = fresh ? null : cv.createHttpClient();
        Promise<Void> done = Promise.promise();
        int[] left = {rounds};
        Future<Void> run = server.listen(0, bind(sv, cv, host)).compose(s -> {
            Runnable[] get = new Runnable[1];
            get[0] = () -> {
                HttpClient client = fresh ? cv.createHttpClient(new HttpClientOptions().setKeepAlive(false)) : shared;
                client.request(HttpMethod.GET, s.actualPort(), host, "/")
                        .compose(req -> req.send().compose(HttpClientResponse::body))
                        .eventually(() -> fresh ? client.close() : Future.succeededFuture())
                        .onSuccess(b -> {
                            if (--left[0] == 0) {
                                done.tryComplete();
                            } else {
                                after(cv, left[0] <= spaced, get[0]);
                            }
                        })
                        .onFailure(done::tryFail);
            };
            get[0].run();
            return done.future();
        });
        return run.eventually(() -> (shared != null ? shared.close() : Future.<Void>succeededFuture()).eventually(server::close));
    }

    /**
     * Where the warm-up's sockets listen: on the loopback its address, between the two nodes any address (0.0.0.0, as
     * most services listen), so that the code of both kinds of binding has run (a branch the JIT never saw taken costs
     * the first request that takes it a return to the interpreter).
     */
    private static String bind(Vertx sv, Vertx cv, String host) {
        return sv == cv ? host : "0.0.0.0";
    }

    private static void after(Vertx v, boolean spaced, Runnable next) {
        if (spaced) {
            v.setTimer(SPACE_MS, id -> next.run());
        } else {
            next.run();
        }
    }
}
