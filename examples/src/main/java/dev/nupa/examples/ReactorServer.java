package dev.nupa.examples;

import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import dev.nupa.transport.NupaNetty;
import dev.nupa.transport.StackConfig;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.LoopResources;

/**
 * A plain Reactor Netty HTTP server on a fabric node (default 0, 10.0.0.1): {@link #start} is unmodified Reactor
 * Netty code, and the only thing that knows about the fabric is the {@link LoopResources} it runs on
 * ({@link NupaLoopResources}). Serves until Ctrl-C, then leaves the fabric.
 */
public final class ReactorServer {
    /** The port the example listens on. */
    public static final int PORT = 8090;

    private ReactorServer() {
    }

    /**
     * The application: {@code GET /hello}, {@code GET /peer} (the client's IP address as the server sees it) and
     * {@code POST /sha256} (the SHA-256 of the request body, in hex).
     */
    public static DisposableServer start(LoopResources loops, int port) {
        return HttpServer.create()
                .runOn(loops)
                .port(port)
                .route(routes -> routes
                        .get("/hello", (req, res) -> res.sendString(Mono.just("hello from Reactor Netty\n")))
                        .get("/peer", (req, res) -> res.sendString(Mono.just(req.remoteAddress().getAddress().getHostAddress())))
                        .post("/sha256", (req, res) -> res.sendString(req.receive().asByteArray()
                                .reduce(sha256(), (md, bytes) -> {
                                    md.update(bytes);
                                    return md;
                                })
                                .map(md -> HexFormat.of().formatHex(md.digest())))))
                .bindNow();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JDK has no SHA-256", e); // every JDK must have it (MessageDigest's docs)
        }
    }

    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: ReactorServer FABRIC_FILE [NODE_ADDRESS]   (e.g. /dev/shm/f1 0)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        NupaLoopResources loops = new NupaLoopResources(StackConfig.defaults(Path.of(args[0]), node));
        DisposableServer server = start(loops, PORT);
        System.out.printf("Reactor Netty HTTP on %s port %d (GET /hello, GET /peer, POST /sha256); Ctrl-C stops%n",
                NupaNetty.stack(loops.group()), server.port());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.disposeNow();
            loops.disposeLater(java.time.Duration.ZERO, java.time.Duration.ofSeconds(5)).block();
        }));
        server.onDispose().block();
    }
}
