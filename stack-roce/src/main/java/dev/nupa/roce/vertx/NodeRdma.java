package dev.nupa.roce.vertx;

import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.verbs.RoceIp;
import io.vertx.core.Handler;

/**
 * A node's RDMA over its open link, driven by its datapath loop (the node's event loop under the Vert.x transport):
 * {@link #open} opens the node's {@link RdmaContext} and {@link RdmaCm}, attaches the node's IP layer for RoCEv2
 * when given one, and hands the context's timers to the datapath loop; {@link #close} takes them down.
 *
 * <p>The context belongs to the datapath thread, so an application reaches it through {@link #execute}: the
 * handler runs on that thread (at once from it, else on the loop's next round), where it may create QPs, post and
 * poll. Completions, CM Futures and CQ events arrive there too; hand results back to a Vert.x context with
 * {@code context.runOnContext}.
 */
public final class NodeRdma {
    private final Link link;
    private final RdmaContext ctx;
    private final RdmaCm cm;
    private final Datapath.Timer timer;

    private NodeRdma(Link link, RdmaContext ctx, RdmaCm cm) {
        this.link = link;
        this.ctx = ctx;
        this.cm = cm;
        this.timer = ctx::poll;
    }

    /**
     * RDMA on {@code link}, whose datapath will drive it, speaking RoCEv2 to IP peers through {@code ip}, the node's
     * IP layer on that link ({@code new dev.nupa.roce.ip.Ipv4RoceIp(stack)}; null: to fabric nodes only). Call it before the loop starts or on the loop's thread;
     * throws with the reason, leaving nothing open.
     */
    public static NodeRdma open(Link link, NeighborDirectory neighbors, RoceIp ip) {
        Datapath d = link.datapath();
        if (d == null) {
            throw new IllegalStateException("node " + link.address() + " has no datapath loop to run RDMA on; "
                    + "open RDMA on a node built by NupaStack or NupaNode");
        }
        RdmaContext c = RdmaContext.open(link);
        RdmaCm cm;
        try {
            if (ip != null) {
                c.attachIp(ip);
            }
            cm = RdmaCm.create(c, neighbors::lookup, RdmaCm.Options.defaults());
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        NodeRdma r = new NodeRdma(link, c, cm);
        d.addTimer(r.timer);
        return r;
    }

    /** Runs {@code handler} with the context on the datapath thread (at once when called from it). */
    public void execute(Handler<RdmaContext> handler) {
        link.execute(() -> handler.handle(ctx));
    }

    /** The context; use it on the datapath thread only (see {@link #execute}). */
    public RdmaContext context() {
        return ctx;
    }

    /** The node's connection manager; like the context, used on the datapath thread. */
    public RdmaCm cm() {
        return cm;
    }

    /** Takes the CM and the context down; on the datapath thread as its loop ends (or anywhere if it never ran). */
    public void close() {
        link.datapath().removeTimer(timer);
        try {
            cm.close();
        } finally {
            ctx.close();
        }
    }
}
