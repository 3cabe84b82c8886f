package dev.nupa.tcp;

import dev.nupa.ip.Ipv4Address;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;

/**
 * A TCP server over the fabric in the manner of Vert.x's {@code NetServer}: a connect handler, then
 * {@link #listen}. Each accepted connection reaches the handler as a {@link TcpSocket}, on the
 * context that created the server.
 */
public final class TcpServer {
    /** Default bound on half-open connections; beyond it SYN cookies answer (RFC 4987). */
    public static final int DEFAULT_BACKLOG = 1024;

    private final Vertx vertx;
    private final TcpLayer layer;
    private final TcpConfig config;
    private final io.vertx.core.Context context;
    private Handler<TcpSocket> connectHandler;
    private int port = -1;
    private int backlog = DEFAULT_BACKLOG;

    private TcpServer(Vertx vertx, TcpLayer layer, TcpConfig config) {
        this.vertx = vertx;
        this.layer = layer;
        this.config = config;
        this.context = vertx.getOrCreateContext();
    }

    public static TcpServer create(Vertx vertx, TcpLayer layer, TcpConfig config) {
        return new TcpServer(vertx, layer, config);
    }

    public TcpServer connectHandler(Handler<TcpSocket> handler) {
        this.connectHandler = handler;
        return this;
    }

    public TcpServer backlog(int backlog) {
        if (backlog < 1) {
            throw new IllegalArgumentException("backlog must be at least 1, got " + backlog);
        }
        this.backlog = backlog;
        return this;
    }

    /** Listens on {@code port} of this node; fails with the reason if the port is taken. */
    public Future<TcpServer> listen(int port) {
        if (connectHandler == null) {
            return Future.failedFuture(new IllegalStateException("set a connect handler before listen()"));
        }
        try {
            layer.listen(port, backlog, config, c -> {
                TcpSocket s = TcpSocket.accepted(vertx, layer, c);
                context.runOnContext(v -> connectHandler.handle(s));
            });
            this.port = port;
            return Future.succeededFuture(this);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    public int actualPort() {
        return port;
    }

    public String host() {
        return Ipv4Address.toString(layer.ip().address());
    }

    /** Stops listening; connections already accepted go on. */
    public Future<Void> close() {
        if (port > 0) {
            layer.unlisten(port);
            port = -1;
        }
        return Future.succeededFuture();
    }
}
