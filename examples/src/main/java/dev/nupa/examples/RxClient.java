package dev.nupa.examples;

import java.nio.file.Path;

import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.reactivex.rxjava3.core.Flowable;
import io.reactivex.rxjava3.core.Single;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.rxjava3.core.Vertx;
import io.vertx.rxjava3.core.http.HttpClient;
import io.vertx.rxjava3.core.http.HttpClientRequest;
import io.vertx.rxjava3.core.http.HttpClientResponse;

/**
 * Calls {@link RxService} from another fabric node (default 1, 10.0.0.2) through the Rxified Vert.x HTTP client:
 * the squares of 1..N one request each and summed, the numbers 1..N streamed as one request body from a
 * {@code Flowable}, and the address the service sees; checked and printed, then it leaves the fabric.
 */
public final class RxClient {
    private RxClient() {
    }

    /** The sum of the squares of 1..n, each squared by the service in its own request. */
    public static Single<Long> sumOfSquares(HttpClient client, String host, int port, int n) {
        return Flowable.rangeLong(1, n)
                .concatMapSingle(i -> client.rxRequest(HttpMethod.GET, port, host, "/square?n=" + i)
                        .flatMap(HttpClientRequest::rxSend)
                        .flatMap(RxClient::body)
                        .map(Long::parseLong))
                .reduce(0L, Long::sum);
    }

    /** The numbers 1..n, a line each, streamed to the service as one chunked body; its answer is their sum. */
    public static Single<Long> streamedSum(HttpClient client, String host, int port, int n) {
        Flowable<Buffer> body = Flowable.rangeLong(1, n)
                .map(i -> i + "\n")
                .buffer(500)
                .map(lines -> Buffer.buffer(String.join("", lines)));
        return client.rxRequest(HttpMethod.POST, port, host, "/sum")
                .flatMap(req -> req.setChunked(true).rxSend(body))
                .flatMap(RxClient::body)
                .map(Long::parseLong);
    }

    /** The client's own address, as the service saw it. */
    public static Single<String> peer(HttpClient client, String host, int port) {
        return client.rxRequest(HttpMethod.GET, port, host, "/peer")
                .flatMap(HttpClientRequest::rxSend)
                .flatMap(RxClient::body);
    }

    private static Single<String> body(HttpClientResponse resp) {
        return resp.rxBody().map(b -> {
            if (resp.statusCode() != 200) {
                throw new IllegalStateException("HTTP " + resp.statusCode() + ": " + b);
            }
            return b.toString();
        });
    }

    public static void main(String[] args) {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: RxClient FABRIC_FILE [NODE_ADDRESS [SERVER_IP]]   (e.g. /dev/shm/f1 1 10.0.0.1)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        String server = args.length > 2 ? args[2] : "10.0.0.1";
        int n = 100;
        Vertx vertx = Vertx.newInstance(NupaVertx.create(StackConfig.defaults(Path.of(args[0]), node)));
        boolean ok;
        try {
            HttpClient client = vertx.createHttpClient();
            long squares = sumOfSquares(client, server, RxService.PORT, n).blockingGet();
            // 20,000 numbers (109 KB): Vert.x 5.0.7's rxSend(Flowable) stalls under long back-pressure, which the
            // fabric's TCP send buffer brings from about 640 KB (docs/vertx-transport.md, "RxJava 3").
            long sum = streamedSum(client, server, RxService.PORT, 20_000).blockingGet();
            String me = peer(client, server, RxService.PORT).blockingGet();
            long wantSquares = (long) n * (n + 1) * (2L * n + 1) / 6;
            long wantSum = 20_000L * 20_001 / 2;
            System.out.printf("sum of squares 1..%d, %d requests: %d (%s)%n", n, n, squares, squares == wantSquares ? "right" : "WRONG");
            System.out.printf("sum of 1..20000 streamed as one body: %d (%s)%n", sum, sum == wantSum ? "right" : "WRONG");
            System.out.printf("the service sees this node as %s%n", me);
            ok = squares == wantSquares && sum == wantSum;
        } finally {
            vertx.rxClose().blockingAwait();
        }
        System.exit(ok ? 0 : 1);
    }
}
