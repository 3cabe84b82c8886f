package dev.nupa.roce;

import dev.nupa.roce.transport.RdmaDevice;
import dev.nupa.roce.verbs.GsiAgent;
import dev.nupa.roce.verbs.RdmaCounter;
import java.lang.foreign.MemorySegment;

/**
 * A context's QP 1 as its {@link GsiAgent} sees it ({@link RdmaContext#attachGsi}): sending a datagram to a peer's
 * QP 1, the context's clock and IPv4 address, and the malformed-packet counter.
 */
public final class Gsi {
    /** Writes one datagram (BTH onwards) at {@code at} in {@code m}. */
    @FunctionalInterface
    public interface Writer {
        void write(MemorySegment m, long at);
    }

    private final RdmaContext ctx;

    Gsi(RdmaContext ctx) {
        this.ctx = ctx;
    }

    /** The context's clock, in nanoseconds. */
    public long now() {
        return ctx.device.clock.getAsLong();
    }

    /** This node's IPv4 address, or 0 when the context has no IP layer (no RoCEv2 peers). */
    public int localIp() {
        return ctx.ip() != null ? ctx.ip().address() : 0;
    }

    public boolean hasIp() {
        return ctx.ip() != null;
    }

    public int node() {
        return ctx.node();
    }

    /** A message the agent could not take: counted as {@link RdmaCounter#MALFORMED}. */
    public void malformed() {
        ctx.device.counters.add(RdmaCounter.MALFORMED, 1);
    }

    /**
     * Sends {@code length} bytes that {@code writer} writes, from QP 1 to fabric node {@code node}, or (node -1) as
     * RoCEv2 to IP peer {@code ip}; false when the ring is full (nothing was sent: the agent's timer resends).
     */
    public boolean send(int node, int ip, int length, Writer writer) {
        ctx.checkThread();
        RdmaDevice d = ctx.device;
        long o = d.claim(node, node >= 0 ? 0 : ip, RdmaContext.GSI_QPN, length);
        if (o < 0) {
            return false;
        }
        writer.write(d.txMemory(), o);
        d.publish();
        return true;
    }

    /** Detaches the agent: QP 1's messages are counted as for an unknown QP again. */
    public void detach() {
        ctx.checkThread();
        ctx.detach(this);
    }
}
