package dev.nupa.tcp;

import dev.nupa.ip.Ipv4Address;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.internal.ContextInternal;

/**
 * A TCP server over the fabric in the manner of Vert.x's {@code NetServer}: a connect handler, then
 * {@link #listen}. Each accepted connection reaches the handler as a {@link TcpSocket}, on the
 * context that created the server.
 */
public final class TcpServer {
    /** Default bound on half-open connections; beyond it SYN cookies answer (RFC 4987). */
    public static final int DEFAULT_BACKLOG = 1024;

    private final TcpLayer layer;
    private final TcpConfig config;
    private final ContextInternal context;
    private Handler<TcpSocket> connectHandler;
    private volatile int port = -1;
    private int backlog = DEFAULT_BACKLOG;

    private TcpServer(Vertx vertx, TcpLayer layer, TcpConfig config) {
        this.layer = layer;
        this.config = config;
        this.context = (ContextInternal) vertx.getOrCreateContext();
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
        Handler<TcpSocket> handler = connectHandler;
        Promise<TcpServer> p = context.promise();
        layer.execute(() -> { // the layer's tables are the loop's
            try {
                layer.listen(port, backlog, config, c -> {
                    TcpSocket s = TcpSocket.accepted(context, layer, c);
                    context.runOnContext(v -> handler.handle(s));
                });
                this.port = port;
                p.complete(this);
            } catch (RuntimeException e) {
                p.fail(e);
            }
        });
        return p.future();
    }

    public int actualPort() {
        return port;
    }

    public String host() {
        return Ipv4Address.toString(layer.ip().address());
    }

    /** Stops listening; connections already accepted go on. */
    public Future<Void> close() {
        int p = port;
        if (p > 0) {
            port = -1;
            Promise<Void> done = context.promise();
            layer.execute(() -> {
                layer.unlisten(p);
                done.complete();
            });
            return done.future();
        }
        return Future.succeededFuture();
    }
}
