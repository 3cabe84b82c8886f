package dev.nupa.transport;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;

/**
 * Runs a node's UDP and HTTP paths over its own loopback (127.0.0.1) as it starts: a fresh JVM loads the
 * classes of a path and interprets its code the first times it runs, so without this a service's first
 * requests pay hundreds of milliseconds that later ones do not. Sequential round trips, on one event loop;
 * everything it opens is closed before it completes.
 */
final class Warmup {
    private static final long UDP_TIMEOUT_MS = 60_000;

    private Warmup() {
    }

    /** {@code rounds} UDP echoes and then {@code rounds} HTTP GETs over one connection, one after another. */
    static Future<Void> run(Vertx vertx, int rounds) {
        return udp(vertx, rounds).compose(x -> http(vertx, rounds));
    }

    private static Future<Void> udp(Vertx vertx, int rounds) {
        DatagramSocket server = vertx.createDatagramSocket();
        DatagramSocket client = vertx.createDatagramSocket();
        server.handler(p -> server.send(p.data(), p.sender().port(), p.sender().host()));
        Buffer datagram = Buffer.buffer(new byte[64]);
        Promise<Void> done = Promise.promise();
        int[] left = {rounds};
        Future<Void> run = server.listen(0, "127.0.0.1").compose(s -> client.listen(0, "127.0.0.1")).compose(c -> {
            int port = server.localAddress().port();
            client.handler(p -> {
                if (--left[0] == 0) {
                    done.tryComplete();
                } else {
                    client.send(datagram, port, "127.0.0.1").onFailure(done::tryFail);
                }
            });
            client.send(datagram, port, "127.0.0.1").onFailure(done::tryFail);
            // UDP may lose a datagram (a full queue): the warm-up then ends with the reason rather than never.
            long timer = vertx.setTimer(UDP_TIMEOUT_MS, id -> done.tryFail(new IllegalStateException("warm-up: the UDP echoes"
                    + " over 127.0.0.1 stalled with " + left[0] + " of " + rounds + " left after " + UDP_TIMEOUT_MS / 1000
                    + " s (a datagram lost: Ipv4Stack.loopback() counts drops); start the node without the warm-up")));
            return done.future().onComplete(x -> vertx.cancelTimer(timer));
        });
        return run.eventually(() -> client.close().eventually(server::close));
    }

    private static Future<Void> http(Vertx vertx, int rounds) {
        Buffer body = Buffer.buffer("ok");
        HttpServer server = vertx.createHttpServer().requestHandler(req -> req.response().end(body));
        HttpClient client = vertx.createHttpClient();
        Promise<Void> done = Promise.promise();
        int[] left = {rounds};
        Future<Void> run = server.listen(0, "127.0.0.1").compose(s -> {
            Runnable[] get = new Runnable[1];
            get[0] = () -> client.request(HttpMethod.GET, s.actualPort(), "127.0.0.1", "/")
                    .compose(req -> req.send().compose(HttpClientResponse::body))
                    .onSuccess(b -> {
                        if (--left[0] == 0) {
                            done.tryComplete();
                        } else {
                            get[0].run();
                        }
                    })
                    .onFailure(done::tryFail);
            get[0].run();
            return done.future();
        });
        return run.eventually(() -> client.close().eventually(server::close));
    }
}
