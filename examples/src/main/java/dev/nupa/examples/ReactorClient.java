package dev.nupa.examples;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;

import dev.nupa.transport.StackConfig;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufMono;
import reactor.netty.http.client.HttpClient;

/**
 * A plain Reactor Netty HTTP client on a fabric node (default 1, 10.0.0.2) calling {@link ReactorServer} on
 * another: a GET and a POST whose SHA-256 it checks, printed; then it leaves the fabric. As in the server, only
 * the {@link NupaLoopResources} knows about the fabric.
 */
public final class ReactorClient {
    private ReactorClient() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: ReactorClient FABRIC_FILE [NODE_ADDRESS [SERVER_IP]]   (e.g. /dev/shm/f1 1 10.0.0.1)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        String server = args.length > 2 ? args[2] : "10.0.0.1";
        NupaLoopResources loops = new NupaLoopResources(StackConfig.defaults(Path.of(args[0]), node));
        try {
            HttpClient client = HttpClient.create().runOn(loops).baseUrl("http://" + server + ":" + ReactorServer.PORT);
            String hello = client.get().uri("/hello").responseContent().aggregate().asString().block();
            System.out.printf("GET http://%s:%d/hello -> %s%n", server, ReactorServer.PORT, hello.strip());
            byte[] body = "a body that goes over the fabric\n".repeat(1000).getBytes(StandardCharsets.UTF_8);
            String sha = client.post().uri("/sha256").send(ByteBufMono.fromString(Mono.just(new String(body, StandardCharsets.UTF_8))))
                    .responseContent().aggregate().asString().block();
            String expected = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
            System.out.printf("POST http://%s:%d/sha256 (%d bytes) -> %s (%s)%n", server, ReactorServer.PORT, body.length, sha,
                    expected.equals(sha) ? "matches" : "DIFFERS from " + expected);
            if (!expected.equals(sha)) {
                System.exit(1);
            }
        } finally {
            loops.disposeLater(java.time.Duration.ZERO, java.time.Duration.ofSeconds(5)).block();
        }
    }
}
