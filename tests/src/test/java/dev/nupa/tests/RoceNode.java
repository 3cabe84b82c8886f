package dev.nupa.tests;

import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.Route;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.ip.Ipv4RoceIp;
import dev.nupa.roce.verbs.WorkCompletion;
import java.nio.file.Path;
import java.util.function.BooleanSupplier;

/**
 * A fabric node with an IP layer (one route beyond its subnet) and a verbs context that speaks RoCEv2 through it, all
 * driven by the calling thread (the context's owner) until a completion comes or a condition holds; the waits throw
 * once the deadline passes. The RoCEv2 peers the system tests start ({@link RoceV2PeerMain}, {@link MwPeerMain}).
 */
final class RoceNode implements AutoCloseable {
    final FabricNode dev;
    final Link link;
    final NeighborDirectory neighbors;
    final RdmaContext ctx;
    final Ipv4Stack ip;
    private final long deadline;

    RoceNode(Path fabric, int address, IpConfig ipConfig, Route route, long deadline) {
        dev = ShmFabric.attach(fabric, address, null);
        link = new Link(dev);
        neighbors = new NeighborDirectory(dev);
        ctx = RdmaContext.open(link, 16, 16, System::nanoTime);
        ip = new Ipv4Stack(link, neighbors, ipConfig);
        ip.addRoute(route);
        ctx.attachIp(new Ipv4RoceIp(ip));
        this.deadline = deadline;
    }

    void poll() {
        long now = System.nanoTime();
        if (now - deadline > 0) {
            throw new IllegalStateException("timed out; rdma " + ctx.counters() + " ip " + ip.counters());
        }
        link.poll(64, now);
        ip.poll(now);
        ctx.poll(now);
    }

    WorkCompletion await(CompletionQueue cq) {
        WorkCompletion wc = new WorkCompletion();
        while (!cq.poll(wc)) {
            poll();
        }
        return wc;
    }

    void until(BooleanSupplier done) {
        long next = 0;
        while (true) {
            poll();
            long now = System.nanoTime();
            if (now - next > 0) { // a check a millisecond (it may read a file), not every round
                if (done.getAsBoolean()) {
                    return;
                }
                next = now + 1_000_000;
            }
        }
    }

    @Override
    public void close() {
        try (FabricNode d = dev; Link l = link; NeighborDirectory n = neighbors; RdmaContext c = ctx) {
            // closed in the reverse order of their opening
        }
    }
}
