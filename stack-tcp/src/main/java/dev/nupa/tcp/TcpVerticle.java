package dev.nupa.tcp;

import dev.nupa.ip.IpVerticle;
import dev.nupa.ip.Ipv4Header;
import dev.nupa.l2.LinkVerticle;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;

/**
 * TCP as a verticle over deployed link and IP verticles: on deploy it builds the {@link TcpLayer}
 * (registered with IP for protocol 6) and hands its timers to the datapath loop; on undeploy it takes
 * both back (its connections hear nothing more), so another TCP verticle can be deployed on the same IP.
 */
public final class TcpVerticle extends VerticleBase {
    private final LinkVerticle link;
    private final IpVerticle ip;
    private final TcpConfig defaults;
    private final long bufferMemoryLimit;
    private volatile TcpLayer layer;

    /** With the default bound on the connections' buffer memory (see {@link TcpLayer#TcpLayer(dev.nupa.ip.Ipv4Stack, TcpConfig)}). */
    public TcpVerticle(LinkVerticle link, IpVerticle ip, TcpConfig defaults) {
        this(link, ip, defaults, BufferBudget.jvmDefault());
    }

    /** With the connections' buffers bounded to {@code bufferMemoryLimit} bytes together (0 or more). */
    public TcpVerticle(LinkVerticle link, IpVerticle ip, TcpConfig defaults, long bufferMemoryLimit) {
        this.link = link;
        this.ip = ip;
        this.defaults = defaults;
        this.bufferMemoryLimit = BufferBudget.checkLimit(bufferMemoryLimit); // refused here, not when the verticle starts
    }

    @Override
    public Future<?> start() {
        TcpLayer l = new TcpLayer(ip.stack(), defaults, bufferMemoryLimit);
        l.setTimerWakeup(link.datapath()::timersChanged);
        link.datapath().addTimer(l);
        layer = l;
        return Future.succeededFuture();
    }

    @Override
    public Future<?> stop() {
        TcpLayer l = layer;
        if (l == null) {
            return Future.succeededFuture();
        }
        layer = null;
        link.datapath().removeTimer(l);
        Promise<Void> done = Promise.promise();
        l.execute(() -> { // IP's protocol table is its owner's
            try {
                l.ip().unregister(Ipv4Header.PROTOCOL_TCP);
            } finally {
                done.complete();
            }
        });
        return done.future();
    }

    public TcpLayer layer() {
        TcpLayer l = layer;
        if (l == null) {
            throw new IllegalStateException("the TCP verticle is not deployed: deploy it and wait for its Future first");
        }
        return l;
    }
}
