package dev.nupa.tests;

import io.vertx.core.Vertx;

/**
 * An ordinary Vert.x program that knows nothing of the fabric (no NUPA import): {@code Vertx.vertx()} and an HTTP
 * server on 8080. {@code GET /} answers a greeting; {@code GET /exit/N} answers, closes Vert.x and exits with status N.
 * It prints {@code LISTENING transport=CLASS} once it listens, naming the transport its Vert.x took (Vert.x's
 * internal API, for the test to check; a program would not need it).
 */
public final class PlainVertxMain {
    private PlainVertxMain() {
    }

    public static void main(String[] args) {
        Vertx vertx = Vertx.vertx();
        vertx.createHttpServer().requestHandler(req -> {
            if (req.path().startsWith("/exit/")) {
                int status = Integer.parseInt(req.path().substring(6));
                req.response().end("bye").onComplete(r -> vertx.close().onComplete(c -> System.exit(status)));
            } else {
                req.response().end("hello from a plain Vert.x program");
            }
        }).listen(8080).onSuccess(s -> System.out.println("LISTENING transport="
                + ((io.vertx.core.internal.VertxInternal) vertx).transport().getClass().getName()))
                .onFailure(e -> {
                    System.out.println("FAILED " + e);
                    System.exit(1);
                });
    }
}
