package dev.nupa.tests;

import dev.nupa.ip.Ipv4Stack;
import dev.nupa.l2.Link;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.WorkCompletion;
import java.util.function.BooleanSupplier;

/**
 * Drives a node's link, IP layer and verbs context in the calling thread (the context's owner) until a completion
 * comes or a condition holds, and throws once the deadline passes: the one-thread loop of the RoCEv2 peers the
 * system tests start ({@link RoceV2PeerMain}, {@link MwPeerMain}).
 */
record RdmaPoller(Link link, Ipv4Stack ip, RdmaContext ctx, long deadline) {
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
}
