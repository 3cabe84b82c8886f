package dev.nupa.examples;

import java.nio.file.Path;

import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.reactivex.rxjava3.core.Single;
import io.vertx.rxjava3.core.Vertx;
import io.vertx.rxjava3.core.http.HttpServer;
import io.vertx.rxjava3.core.http.HttpServerRequest;
import io.vertx.rxjava3.core.parsetools.RecordParser;

/**
 * A small service written against the Rxified Vert.x API (vertx-rx-java3) on a fabric node (default 0, 10.0.0.1).
 * {@link #start} is plain RxJava 3 Vert.x code; the only line that knows about the fabric makes the Vert.x instance
 * ({@code Vertx.newInstance(NupaVertx.create(...))}). Serves until Ctrl-C, then leaves the fabric. {@link RxClient}
 * calls it.
 */
public final class RxService {
    /** The port the example listens on. */
    public static final int PORT = 8091;

    private RxService() {
    }

    /**
     * The service: {@code GET /square?n=N} answers N*N, {@code POST /sum} the sum of the numbers in the body (one per
     * line, streamed through a {@code Flowable}), {@code GET /peer} the client's IP address as the server sees it.
     */
    public static Single<HttpServer> start(Vertx vertx, int port) {
        return vertx.createHttpServer()
                .requestHandler(RxService::handle)
                .rxListen(port);
    }

    private static void handle(HttpServerRequest req) {
        switch (req.path()) {
            case "/square" -> Single.fromCallable(() -> Long.parseLong(req.getParam("n")))
                    .map(n -> n * n)
                    .flatMapCompletable(sq -> req.response().rxEnd(Long.toString(sq)))
                    .subscribe(() -> { }, e -> req.response().setStatusCode(400).end(e.toString()));
            case "/sum" -> RecordParser.newDelimited("\n", req.toFlowable()).toFlowable()
                    .map(line -> Long.parseLong(line.toString().strip()))
                    .reduce(0L, Long::sum)
                    .flatMapCompletable(sum -> req.response().rxEnd(Long.toString(sum)))
                    .subscribe(() -> { }, e -> req.response().setStatusCode(400).end(e.toString()));
            case "/peer" -> req.response().rxEnd(req.remoteAddress().hostAddress()).subscribe();
            default -> req.response().setStatusCode(404).rxEnd("no " + req.path() + "\n").subscribe();
        }
    }

    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: RxService FABRIC_FILE [NODE_ADDRESS]   (e.g. /dev/shm/f1 0)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        Vertx vertx = Vertx.newInstance(NupaVertx.create(StackConfig.defaults(Path.of(args[0]), node)));
        HttpServer server = start(vertx, PORT).blockingGet();
        System.out.printf("Rx service on %s port %d (GET /square?n=N, POST /sum, GET /peer); Ctrl-C stops%n",
                NupaVertx.stack(vertx.getDelegate()), server.actualPort());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> vertx.rxClose().blockingAwait()));
    }
}
