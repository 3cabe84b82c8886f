package dev.nupa.node.grpc;

import dev.nupa.node.NupaNode;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.node.admin.AdminGrpcService;
import dev.nupa.node.sockets.SocketsGrpcService;
import dev.nupa.node.verbs.VerbsGrpcService;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.Handler;
import io.vertx.core.http.ClientAuth;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.grpc.health.HealthService;
import io.vertx.grpc.reflection.ReflectionService;
import io.vertx.grpc.server.GrpcServer;

/**
 * The node's gRPC endpoint: the Admin service ({@code admin.proto}), the Sockets service ({@code sockets.proto}:
 * the node's TCP and UDP for other processes), the Verbs service ({@code verbs.proto}: its RDMA), the standard gRPC health service and server reflection (so grpcurl-style tools list and call it), served over Linux TCP by a small Vert.x
 * instance of its own, so tools that know nothing of the fabric reach it.
 *
 * <p>It listens on loopback unless given a bearer token or mutual TLS; with a token, a call without the header
 * {@code authorization: Bearer TOKEN} is refused with UNAUTHENTICATED (and counted), wherever it comes from; with
 * mutual TLS ({@link MutualTls}), the endpoint speaks TLS only, and a call from a client that showed no certificate
 * signed by the client authority is refused the same way (one that shows another fails its handshake).
 */
public final class GrpcEndpoint {
    /** The name the Admin service answers to in the health service. */
    static final String ADMIN_SERVICE = "nupa.admin.v1.Admin";

    private final Vertx vertx;
    private final HttpServer server;
    private final AtomicLong refused;
    private final NodeSockets sockets;
    private final NodeVerbs verbs;
    private final NodeAdmin admin;
    private final NupaNode node;
    private final HttpServerOptions options;
    private final Handler<HttpServerRequest> handler;
    /** The endpoint's server on the node's fabric address, if asked for ({@link #listenOnFabric}). */
    private HttpServer onFabric;

    private GrpcEndpoint(Vertx vertx, HttpServer server, AtomicLong refused, NodeSockets sockets, NodeVerbs verbs, NodeAdmin admin,
                         NupaNode node, HttpServerOptions options, Handler<HttpServerRequest> handler) {
        this.vertx = vertx;
        this.server = server;
        this.refused = refused;
        this.sockets = sockets;
        this.verbs = verbs;
        this.admin = admin;
        this.node = node;
        this.options = options;
        this.handler = handler;
    }

    /**
     * Serves the same services, with the same credentials, on the node's own address over the fabric as well (the
     * node's Vert.x, through the transport), on {@code port} (0: a free one); completes with the port. Once.
     */
    public Future<Integer> listenOnFabric(int port) {
        if (port < 0 || port > 65535) {
            return Future.failedFuture(new IllegalArgumentException("gRPC port " + port + " is outside 0..65535"));
        }
        if (onFabric != null) {
            return Future.failedFuture(new IllegalStateException("the endpoint already listens on the fabric, on port "
                    + onFabric.actualPort()));
        }
        HttpServer s = node.vertx().createHttpServer(new HttpServerOptions(options)).requestHandler(handler);
        onFabric = s;
        String at = dev.nupa.ip.wire.Ipv4Address.toString(node.ip().address());
        return s.listen(port, at).map(HttpServer::actualPort).recover(e -> Future.failedFuture(new IllegalStateException(
                "the gRPC endpoint cannot listen on the fabric at " + at + ":" + port + ": " + e.getMessage(), e)));
    }

    /**
     * Mutual TLS for the endpoint, in PEM files: its own certificate chain and private key, and the certificates of
     * the authorities whose clients it accepts (or the clients' own certificates, self-signed).
     */
    public record MutualTls(java.nio.file.Path certificate, java.nio.file.Path key, java.nio.file.Path clientAuthorities) {
        public MutualTls {
            for (java.nio.file.Path f : new java.nio.file.Path[] {certificate, key, clientAuthorities}) {
                if (f == null || !java.nio.file.Files.isReadable(f)) {
                    throw new IllegalArgumentException("mutual TLS needs readable PEM files for the certificate, the key and the"
                            + " client authorities; cannot read " + f);
                }
            }
        }
    }

    /**
     * Serves {@code node} on {@code host}:{@code port} (0: a free port). {@code token} may be null on a loopback
     * address only. Fails with the reason (a host that is not an address here, a port in use, no token).
     */
    public static Future<GrpcEndpoint> start(NupaNode node, String fabric, String host, int port, String token) {
        return start(node, fabric, host, port, token, null);
    }

    /**
     * As {@link #start(NupaNode, String, String, int, String)}, over TLS with client certificates when {@code tls} is not
     * null; with it (or a token) the endpoint may listen on any address.
     */
    public static Future<GrpcEndpoint> start(NupaNode node, String fabric, String host, int port, String token, MutualTls tls) {
        try {
            check(host, port, token, tls);
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(e);
        }
        VertxOptions vertxOptions = new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1);
        Vertx vertx = node.openTelemetry() == null ? Vertx.vertx(vertxOptions)
                : Vertx.builder().with(vertxOptions.setTracingOptions(new io.vertx.core.tracing.TracingOptions()))
                        .withTracer(new io.vertx.tracing.opentelemetry.OpenTelemetryTracingFactory(node.openTelemetry())).build();
        GrpcServer grpc = GrpcServer.server(vertx);
        NodeAdmin admin = new NodeAdmin(node, fabric);
        grpc.addService(AdminGrpcService.of(admin));
        NodeSockets sockets = new NodeSockets(node);
        grpc.addService(SocketsGrpcService.of(sockets));
        NodeVerbs verbs = new NodeVerbs(node, NodeVerbs.DEFAULT_SESSION_MEMORY);
        grpc.addService(VerbsGrpcService.of(verbs));
        grpc.addService(HealthService.create(vertx).register(ADMIN_SERVICE, () -> Future.succeededFuture(true)));
        grpc.addService(ReflectionService.v1());
        byte[] expected = token == null ? null : ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
        AtomicLong refused = new AtomicLong();
        HttpServerOptions options = new HttpServerOptions().setHttp2ClearTextEnabled(tls == null);
        if (tls != null) {
            // REQUEST, not REQUIRED: a client without a certificate completes the handshake and is then answered
            // UNAUTHENTICATED, as gRPC clients expect; a certificate from another authority fails the handshake.
            options.setSsl(true).setUseAlpn(true).setClientAuth(ClientAuth.REQUEST)
                    .setKeyCertOptions(new PemKeyCertOptions().setCertPath(tls.certificate().toString())
                            .setKeyPath(tls.key().toString()))
                    .setTrustOptions(new PemTrustOptions().addCertPath(tls.clientAuthorities().toString()));
        }
        Handler<HttpServerRequest> handler = req -> {
            if (tls != null && !clientCertified(req)) {
                refused.incrementAndGet();
                refuse(req, "no client certificate: mutual TLS needs one signed by an authority the endpoint trusts");
                return;
            }
            if (expected != null && !authorized(req, expected)) {
                refused.incrementAndGet();
                refuse(req, "missing or wrong bearer token: send the header authorization: Bearer TOKEN");
                return;
            }
            grpc.handle(req);
        };
        HttpServer server = vertx.createHttpServer(options).requestHandler(handler);
        return server.listen(port, host)
                .map(s -> new GrpcEndpoint(vertx, s, refused, sockets, verbs, admin, node, options, handler))
                .recover(e -> sockets.close().eventually(vertx::close).transform(v -> Future.failedFuture(new IllegalStateException(
                        "the gRPC endpoint cannot listen on " + host + ":" + port + ": " + e.getMessage(), e))));
    }

    private static void check(String host, int port, String token, MutualTls tls) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("gRPC port " + port + " is outside 0..65535");
        }
        InetAddress a;
        try {
            a = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("gRPC host " + host + " is not an address of this machine; give one, e.g. 127.0.0.1");
        }
        if (token == null && tls == null && !a.isLoopbackAddress()) {
            throw new IllegalArgumentException("the gRPC endpoint listens on " + host + " only with a bearer token"
                    + " (--grpc-token-file) or mutual TLS (--grpc-tls-*); without either it listens on loopback, e.g. 127.0.0.1");
        }
        if (token != null && (token.isBlank() || token.chars().anyMatch(c -> c < 0x21 || c > 0x7E))) {
            throw new IllegalArgumentException("the gRPC bearer token must be printable ASCII without spaces, and not empty");
        }
    }

    /** Constant time in the header's length, so the comparison does not say where a guess went wrong. */
    private static boolean authorized(HttpServerRequest req, byte[] expected) {
        String h = req.getHeader("authorization");
        return h != null && MessageDigest.isEqual(h.getBytes(StandardCharsets.UTF_8), expected);
    }

    /** Whether the call's TLS session carries a client certificate (the handshake verified any it carries). */
    private static boolean clientCertified(HttpServerRequest req) {
        javax.net.ssl.SSLSession session = req.connection().sslSession();
        try {
            return session != null && session.getPeerCertificates().length > 0;
        } catch (javax.net.ssl.SSLPeerUnverifiedException e) {
            return false;
        }
    }

    /** A gRPC "trailers-only" answer: status UNAUTHENTICATED (16), with why. */
    private static void refuse(HttpServerRequest req, String why) {
        req.response()
                .putHeader("content-type", "application/grpc")
                .putHeader("grpc-status", "16")
                .putHeader("grpc-message", why)
                .end();
    }

    /** The port it listens on. */
    public int port() {
        return server.actualPort();
    }

    /** Calls refused for want of the bearer token or a client certificate. */
    public long refused() {
        return refused.get();
    }

    /**
     * Stops listening, ends a live capture, closes the sockets its calls still hold, releases their verbs sessions,
     * and closes its Vert.x instance.
     */
    public Future<Void> close() {
        admin.close();
        Future<Void> fabricSide = onFabric != null ? onFabric.close() : Future.succeededFuture();
        return fabricSide.eventually(verbs::close).eventually(vertx::close).eventually(sockets::close);
    }

    NodeSockets sockets() {
        return sockets;
    }

    /** Limits the memory each verbs session may register from now on (default 256 MiB). */
    public GrpcEndpoint verbsSessionMemory(long bytes) {
        verbs.sessionMemory(bytes);
        return this;
    }

    /** Limits the memory all verbs sessions together may register from now on (default 1 GiB). */
    public GrpcEndpoint verbsNodeMemory(long bytes) {
        verbs.nodeMemory(bytes);
        return this;
    }

    NodeVerbs verbs() {
        return verbs;
    }
}
