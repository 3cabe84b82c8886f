package dev.nupa.tcp;

import dev.nupa.ip.IpVerticle;
import dev.nupa.l2.LinkVerticle;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/**
 * TCP as a verticle over deployed link and IP verticles: on deploy it builds the {@link TcpLayer}
 * (registered with IP for protocol 6) and hands its timers to the datapath loop.
 */
public final class TcpVerticle extends VerticleBase {
    private final LinkVerticle link;
    private final IpVerticle ip;
    private final TcpConfig defaults;
    private volatile TcpLayer layer;

    public TcpVerticle(LinkVerticle link, IpVerticle ip, TcpConfig defaults) {
        this.link = link;
        this.ip = ip;
        this.defaults = defaults;
    }

    @Override
    public Future<?> start() {
        TcpLayer l = new TcpLayer(ip.stack(), defaults);
        l.setTimerWakeup(link.datapath()::timersChanged);
        link.datapath().addTimer(l);
        layer = l;
        return Future.succeededFuture();
    }

    public TcpLayer layer() {
        TcpLayer l = layer;
        if (l == null) {
            throw new IllegalStateException("the TCP verticle is not deployed: deploy it and wait for its Future first");
        }
        return l;
    }
}
