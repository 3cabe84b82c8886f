package dev.nupa.ip;

import java.util.List;

import dev.nupa.l2.EtherType;
import dev.nupa.l2.LinkVerticle;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;

/**
 * IPv4, ICMP and UDP as a verticle over a deployed {@link LinkVerticle}: on deploy it builds the
 * {@link Ipv4Stack} (which registers with the link and publishes its address), adds the routes, and
 * hands the stack's timers to the datapath loop; on undeploy it takes all of that back, so another IP
 * verticle can be deployed on the same link.
 */
public final class IpVerticle extends VerticleBase {
    private final LinkVerticle link;
    private final IpConfig config;
    private final List<Route> routes;
    private volatile Ipv4Stack stack;

    public IpVerticle(LinkVerticle link, IpConfig config, List<Route> routes) {
        this.link = link;
        this.config = config;
        this.routes = List.copyOf(routes);
    }

    @Override
    public Future<?> start() {
        Ipv4Stack s = new Ipv4Stack(link.link(), link.neighbors(), config);
        for (Route r : routes) {
            s.addRoute(r);
        }
        link.datapath().addTimer(s);
        stack = s;
        return Future.succeededFuture();
    }

    @Override
    public Future<?> stop() {
        Ipv4Stack s = stack;
        if (s == null) {
            return Future.succeededFuture();
        }
        stack = null;
        link.datapath().removeTimer(s);
        Promise<Void> done = Promise.promise();
        s.link().execute(() -> { // the link's tables are its owner's
            try {
                s.link().unregister(EtherType.IPV4);
                s.neighbors().publish(List.of());
            } finally {
                done.complete();
            }
        });
        return done.future();
    }

    public Ipv4Stack stack() {
        Ipv4Stack s = stack;
        if (s == null) {
            throw new IllegalStateException("the IP verticle is not deployed: deploy it and wait for its Future first");
        }
        return s;
    }
}
