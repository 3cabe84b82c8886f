package dev.nupa.roce.vertx;

import dev.nupa.l2.Datapath;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.SharedReceiveQueue;
import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.ring.RemoteRegion;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * A target for RDMA work (docs/work-rings.md): one memory region in a fabric window that peers may WRITE and READ,
 * offered to every QP that connects on its CM port (the region's address, length and rkey ride in the reply's
 * private data), and receives for SENDs, counted and reposted. What proxies write lands here; {@link #checksum}
 * tells what arrived.
 */
public final class RdmaTargetVerticle extends VerticleBase {
    /** @param port the CM port; @param bytes the region; @param receives receives posted for SENDs, {@code receiveBytes} each */
    public record Options(int port, long bytes, int receives, int receiveBytes) {
        public Options {
            if (port < 0 || port > 0xFFFF || bytes <= 0 || receives < 1 || receiveBytes < 1) {
                throw new IllegalArgumentException("a target needs a port 0..65535, a positive size, and at least one receive of a byte or more");
            }
        }
    }

    private final NodeRdma roce;
    private final Options options;
    private final List<QueuePair> qps = new ArrayList<>();
    private final WorkCompletion wc = new WorkCompletion();
    private final RecvWorkRequest recv = new RecvWorkRequest(1);
    private ProtectionDomain pd;
    private MemoryRegion region;
    private MemoryRegion receiveArea;
    private SharedReceiveQueue srq;
    private CompletionQueue cq;
    /** The CQ's completions, taken on the loop: SENDs arrive as frames, so the round that took one polls it. */
    private Datapath.Source completions;
    private volatile long sends;
    private volatile long sendBytes;
    private volatile long receiveErrors;

    public RdmaTargetVerticle(NodeRdma roce, Options options) {
        this.roce = roce;
        this.options = options;
    }

    @Override
    public Future<?> start() {
        Promise<Void> done = Promise.promise();
        roce.execute(ctx -> {
            try {
                pd = ctx.allocPd();
                region = pd.allocMr(options.bytes(), Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
                receiveArea = pd.allocMr((long) options.receives() * options.receiveBytes(), Access.LOCAL_WRITE);
                srq = ctx.createSrq(pd, options.receives(), 1);
                cq = ctx.createCq(options.receives() + 64);
                for (int i = 0; i < options.receives(); i++) {
                    repost(i);
                }
                RdmaCm cm = roce.cm();
                cm.listen(options.port(), req -> {
                    sweep(cm);
                    QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withSrq(srq).withMode(TransferMode.DIRECT).withCapacity(16, 1));
                    qps.add(qp);
                    req.accept(qp, new RemoteRegion(region.addr(), region.length(), region.rkey()).toBytes());
                });
                completions = new Datapath.Source() {
                    @Override
                    public int poll(int limit, long now) {
                        return take(limit);
                    }

                    @Override
                    public boolean ready() {
                        return cq.size() > 0;
                    }
                };
                ctx.link().datapath().addSource(completions);
                done.complete();
            } catch (RuntimeException e) {
                done.tryFail(e);
            }
        });
        return done.future();
    }

    /** Destroys the QPs whose peers disconnected (in ERR), so that proxies that come and go leave nothing behind. */
    private void sweep(RdmaCm cm) {
        qps.removeIf(qp -> {
            if (qp.state() != QpState.ERR) {
                return false;
            }
            cm.release(qp);
            qp.close();
            return true;
        });
    }

    private void repost(int i) {
        recv.wrId(i).local(receiveArea, (long) i * options.receiveBytes(), options.receiveBytes());
        srq.postRecv(recv);
    }

    /** Counts up to {@code limit} SENDs that arrived and gives their receives back; returns how many. */
    private int take(int limit) {
        int n = 0;
        while (n < limit && cq.poll(wc)) {
            n++;
            if (wc.status == WcStatus.SUCCESS) {
                sends++;
                sendBytes += wc.byteLen;
            } else if (wc.status != WcStatus.WR_FLUSH_ERR) {
                receiveErrors++;
            }
            if (wc.status == WcStatus.SUCCESS || wc.status == WcStatus.WR_FLUSH_ERR) {
                repost((int) wc.wrId);
            }
        }
        return n;
    }

    /** The region's bytes (any thread may read them; what arrived by WRITE lands here). */
    public MemorySegment memory() {
        return region.memory();
    }

    public long sends() {
        return sends;
    }

    public long sendBytes() {
        return sendBytes;
    }

    public long receiveErrors() {
        return receiveErrors;
    }

    /** FNV-1a, 64 bits, over {@code length} bytes of the region from {@code offset}: a check a poster can compute too. */
    public long checksum(long offset, long length) {
        return fnv1a64(region.memory(), offset, length);
    }

    /** FNV-1a, 64 bits (docs/work-rings.md names it as the check of what a target received). */
    public static long fnv1a64(MemorySegment m, long offset, long length) {
        long h = 0xcbf29ce484222325L;
        for (long i = offset; i < offset + length; i++) {
            h = (h ^ (m.get(ValueLayout.JAVA_BYTE, i) & 0xFF)) * 0x100000001b3L;
        }
        return h;
    }

    @Override
    public Future<?> stop() {
        Promise<Void> done = Promise.promise();
        roce.execute(ctx -> {
            try {
                if (completions != null) {
                    ctx.link().datapath().removeSource(completions);
                }
                roce.cm().unlisten(options.port());
                for (QueuePair qp : qps) {
                    roce.cm().release(qp);
                    qp.close();
                }
                qps.clear();
                for (AutoCloseable c : new AutoCloseable[] {srq, cq, receiveArea, region, pd}) {
                    if (c != null) {
                        c.close();
                    }
                }
            } catch (Exception e) {
                done.tryFail(e);
            } finally {
                done.tryComplete();
            }
        });
        return done.future();
    }
}
