package dev.nupa.tests;

import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import dev.nupa.ip.Route;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;

/**
 * Vert.x's HTTP client on fabric node ADDRESS (with ROUTE) fetching URL_HOST:PORT/PATH, for a Linux server on
 * the far side of a gateway. Prints "FETCHED status length sha256" and exits. Args: FABRIC ADDRESS ROUTE HOST PORT PATH.
 */
public final class FabricFetchMain {
    private FabricFetchMain() {
    }

    public static void main(String[] args) throws Exception {
        Vertx vertx = NupaVertx.create(StackConfig.defaults(Path.of(args[0]), Integer.parseInt(args[1]))
                .withRoutes(List.of(Route.parse(args[2]))));
        try {
            // The body handler is set in the response's own callback, on the event loop, before any of it arrives.
            int[] status = {0};
            Buffer body = vertx.createHttpClient()
                    .request(HttpMethod.GET, Integer.parseInt(args[4]), args[3], args[5])
                    .compose(req -> req.send())
                    .compose(r -> {
                        status[0] = r.statusCode();
                        return r.body();
                    }).await(60, TimeUnit.SECONDS);
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body.getBytes()));
            System.out.println("FETCHED " + status[0] + " " + body.length() + " " + sha);
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
        }
        System.exit(0);
    }
}
