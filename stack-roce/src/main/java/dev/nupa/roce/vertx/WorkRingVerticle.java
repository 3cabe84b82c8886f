package dev.nupa.roce.vertx;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.l2.Datapath;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.ring.RemoteRegion;
import dev.nupa.roce.ring.WorkRingLayout;
import dev.nupa.roce.ring.WorkRingProxy;
import dev.nupa.roce.verbs.TransferMode;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import java.util.ArrayList;
import java.util.List;

/**
 * A proxy (docs/work-rings.md): connects one RC queue pair per ring to a target through the RDMA CM, exports each
 * ring as a fabric window ({@link FabricWindow#WORK_RING}) and serves it on the node's datapath, so that any process
 * that maps the fabric (C, CUDA kernels, Java) posts RDMA work by writing memory. Each ring's proxy is a
 * {@link Datapath.Source} of the loop; a timer of its own only bounds the loop's sleep for posters that cannot ring.
 * Deploy it on a node with RDMA ({@link NodeRdma}).
 */
public final class WorkRingVerticle extends VerticleBase {
    /**
     * @param targetIp the target's IPv4 address (its CM listens on {@code targetPort})
     * @param rings how many rings (one QP each)
     * @param sqEntries WQEs a submission ring holds; @param cqEntries completions a completion ring holds (at least sqEntries)
     * @param dataBytes each ring's data area
     * @param pollNs how often an idle proxy looks for WQEs; @param spinNs how long after its last work it looks on every round
     * @param connectWaitNs how long to keep asking a target that does not answer yet
     */
    public record Options(int targetIp, int targetPort, int rings, int sqEntries, int cqEntries, long dataBytes, long pollNs,
            long spinNs, long connectWaitNs) {
        public Options {
            if (rings < 1 || rings > 256) {
                throw new IllegalArgumentException("a proxy serves 1..256 rings, not " + rings);
            }
            WorkRingLayout.checkEntries("a submission ring", sqEntries);
            WorkRingLayout.checkEntries("a completion ring", cqEntries);
            if (cqEntries < sqEntries) {
                throw new IllegalArgumentException("completion ring entries (" + cqEntries + ") must be at least the submission ring's ("
                        + sqEntries + ")");
            }
            if (dataBytes < 0 || pollNs <= 0 || spinNs < 0) {
                throw new IllegalArgumentException("data bytes, poll and spin times must not be negative (poll above 0)");
            }
        }
    }

    /** What one served ring holds; touched on the datapath thread only. */
    private record Served(WorkRingProxy proxy, QueuePair qp, CompletionQueue cq, FabricWindow window, Datapath.Timer looks) {
    }

    /** The most WQEs a ring has on its QP at once (the rest wait in the ring). */
    static final int MAX_IN_FLIGHT = 256;

    private final NodeRdma roce;
    private final Options options;
    private final List<Served> served = new ArrayList<>();
    private ProtectionDomain pd;

    public WorkRingVerticle(NodeRdma roce, Options options) {
        this.roce = roce;
        this.options = options;
    }

    @Override
    public Future<?> start() {
        Promise<Void> done = Promise.promise();
        roce.execute(ctx -> {
            try {
                pd = ctx.allocPd();
                connect(ctx, 0, done);
            } catch (RuntimeException e) {
                done.tryFail(e);
            }
        });
        return done.future();
    }

    /**
     * Connects and serves ring {@code i}, then the next; on the datapath thread. A failure releases what this start
     * set up, the rings served already included, and fails the start.
     */
    private void connect(RdmaContext ctx, int i, Promise<Void> done) {
        if (i == options.rings()) {
            done.tryComplete();
            return;
        }
        int inFlight = Math.min(MAX_IN_FLIGHT, options.sqEntries());
        CompletionQueue cq;
        QueuePair qp;
        try {
            cq = ctx.createCq(inFlight);
            try {
                qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT).withCapacity(inFlight, 1));
            } catch (RuntimeException e) {
                cq.close();
                throw e;
            }
        } catch (RuntimeException e) {
            failStart(ctx, done, e);
            return;
        }
        roce.cm().connect(options.targetIp(), options.targetPort(), qp, new byte[0], options.connectWaitNs()).onComplete(ar -> {
            FabricWindow w = null;
            try {
                if (ar.failed()) {
                    throw new IllegalStateException("work ring " + i + ": " + ar.cause().getMessage(), ar.cause());
                }
                RdmaCm.Connection c = ar.result();
                RemoteRegion r = RemoteRegion.parse(c.privateData());
                FabricDevice device = ctx.link().device();
                w = device.exportWindow(WorkRingLayout.windowBytes(options.sqEntries(), options.cqEntries(), options.dataBytes()),
                        FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE | FabricWindow.WORK_RING);
                WorkRingProxy.format(w, i, options.sqEntries(), options.cqEntries(), options.dataBytes(), r.addr(), r.length(), r.rkey(),
                        qp.qpNum(), c.peerNode(), c.peerQpn());
                WorkRingProxy proxy = new WorkRingProxy(w, device, pd, qp, cq, inFlight, options.pollNs(), options.spinNs());
                Datapath.Timer looks = proxy::nextLook;
                served.add(new Served(proxy, qp, cq, w, looks));
                ctx.link().datapath().addSource(proxy); // polled every round; a poster's doorbell finds it awake or looking
                ctx.link().datapath().addTimer(looks); // time only: looks for posters that cannot ring (a GPU's)
            } catch (RuntimeException e) {
                if (w != null) {
                    w.close();
                }
                roce.cm().release(qp);
                qp.close();
                cq.close();
                failStart(ctx, done, e);
                return;
            }
            connect(ctx, i + 1, done);
        });
    }

    private void failStart(RdmaContext ctx, Promise<Void> done, RuntimeException e) {
        release(ctx);
        done.tryFail(e);
    }

    /** Stops serving every ring and gives back what they held; on the datapath thread. */
    private void release(RdmaContext ctx) {
        for (Served s : served) {
            ctx.link().datapath().removeSource(s.proxy());
            ctx.link().datapath().removeTimer(s.looks());
            s.proxy().close();
            roce.cm().release(s.qp());
            s.qp().close();
            s.cq().close();
            s.window().close();
        }
        served.clear();
        if (pd != null) {
            pd.close();
            pd = null;
        }
    }

    /** The rings served so far: window id, key and QP of each (read on the datapath thread, or after start). */
    public List<String> describe() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < served.size(); i++) {
            Served s = served.get(i);
            out.add("work ring " + i + ": window " + s.window().id() + " key 0x" + Integer.toHexString(s.window().key()) + ", QP "
                    + s.qp().qpNum() + ", " + options.sqEntries() + " WQEs, " + options.cqEntries() + " completions, "
                    + (s.window().length() - WorkRingLayout.dataOffset(options.sqEntries(), options.cqEntries())) + " data bytes");
        }
        return out;
    }

    /** WQEs executed and failed over all rings. */
    public long[] totals() {
        long ok = 0;
        long bad = 0;
        for (Served s : served) {
            ok += s.proxy().executed();
            bad += s.proxy().failed();
        }
        return new long[] {ok, bad};
    }

    @Override
    public Future<?> stop() {
        Promise<Void> done = Promise.promise();
        roce.execute(ctx -> {
            try {
                release(ctx);
            } finally {
                done.tryComplete();
            }
        });
        return done.future();
    }
}
