package dev.nupa.roce.vertx;

import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.verbs.RoceIp;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;

/**
 * RDMA as a verticle over a node's open link, driven by its datapath loop (the node's event loop under
 * the Vert.x transport): on deploy it opens the node's {@link RdmaContext}
 * and {@link RdmaCm}, attaches the node's IP layer for RoCEv2 when given one, and hands the context's timers
 * to the datapath loop; on undeploy it closes them.
 *
 * <p>The context belongs to the datapath thread, so an application reaches it through
 * {@link #execute}: the handler runs on that thread (at once from it, else on the loop's next round),
 * where it may create QPs, post and poll. Completions, CM Futures and CQ events arrive there too; hand
 * results back to a Vert.x context with {@code context.runOnContext}.
 */
public final class RoceVerticle extends VerticleBase {
    private final Link link;
    private final NeighborDirectory neighbors;
    private final RoceIp ip;
    private volatile RdmaContext ctx;
    private volatile RdmaCm cm;
    private Datapath.Timer timer;

    /**
     * Over a link that is already open and driven by its datapath (a node under the Vert.x transport), speaking
     * RoCEv2 to IP peers through {@code ip}, the node's IP layer on that link (over {@code Ipv4Stack}: {@code new
     * dev.nupa.roce.ip.Ipv4RoceIp(stack)}; null: to fabric nodes only).
     */
    public RoceVerticle(Link link, NeighborDirectory neighbors, RoceIp ip) {
        this.link = link;
        this.neighbors = neighbors;
        this.ip = ip;
    }

    @Override
    public Future<?> start() {
        RdmaContext c = RdmaContext.open(link);
        try {
            if (ip != null) {
                c.attachIp(ip);
            }
            cm = RdmaCm.create(c, neighbors::lookup, RdmaCm.Options.defaults());
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        ctx = c;
        timer = c::poll;
        datapath().addTimer(timer);
        return Future.succeededFuture();
    }

    private Datapath datapath() {
        Datapath d = link.datapath();
        if (d == null) {
            throw new IllegalStateException("node " + link.address() + " has no datapath loop to run RDMA on");
        }
        return d;
    }

    /** Runs {@code handler} with the context on the datapath thread (at once when called from it). */
    public void execute(Handler<RdmaContext> handler) {
        RdmaContext c = context();
        link.execute(() -> handler.handle(c));
    }

    /** The context; use it on the datapath thread only (see {@link #execute}). */
    public RdmaContext context() {
        RdmaContext c = ctx;
        if (c == null) {
            throw new IllegalStateException("the RDMA verticle is not deployed: deploy it and wait for its Future first");
        }
        return c;
    }

    /** The node's connection manager; like the context, used on the datapath thread. */
    public RdmaCm cm() {
        context();
        return cm;
    }

    @Override
    public Future<?> stop() {
        RdmaContext c = ctx;
        if (c == null) {
            return Future.succeededFuture();
        }
        Datapath d = datapath();
        d.removeTimer(timer);
        Promise<Void> done = Promise.promise();
        Runnable close = () -> {
            try {
                cm.close();
                c.close();
            } finally {
                done.tryComplete();
            }
        };
        if (d.isRunning()) {
            d.execute(close); // runs exactly once: on the loop, or here if the loop stops first
        } else {
            close.run();
        }
        return done.future();
    }
}
