package dev.nupa.roce;

import dev.nupa.roce.transport.Region;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.LocalRegion;
import dev.nupa.roce.verbs.TransferMode;
import java.lang.foreign.MemorySegment;

/**
 * A registered memory region, in the manner of libibverbs' {@code struct ibv_mr}: {@link #memory()} is
 * addressed through {@link #addr()} ({@code addr() + i} is byte {@code i}) under the keys {@link #lkey()}
 * and {@link #rkey()}. A region from {@link ProtectionDomain#allocMr} lives in a fabric window, so a
 * {@link TransferMode#DIRECT} peer can place data straight into it; one from {@link ProtectionDomain#regMr}
 * is reached by peers through packets only. {@link #close()} deregisters it ({@code ibv_dereg_mr}).
 */
public final class MemoryRegion implements LocalRegion, AutoCloseable {
    final ProtectionDomain pd;
    /** What the transport checks and copies through. */
    final Region region;

    MemoryRegion(ProtectionDomain pd, Region region) {
        this.pd = pd;
        this.region = region;
    }

    @Override
    public int lkey() {
        return region.key;
    }

    public int rkey() {
        return region.key;
    }

    /** The region's first address: what a peer puts in {@code remoteAddr}, and local scatter/gather entries use. */
    @Override
    public long addr() {
        return region.addr;
    }

    public long length() {
        return region.memory.byteSize();
    }

    public int access() {
        return region.access;
    }

    public MemorySegment memory() {
        return region.memory;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** Whether the region lives in a fabric window (direct placement reaches it). */
    public boolean inWindow() {
        return region.window != null;
    }

    @Override
    public void close() {
        pd.context.checkThread();
        pd.context.deregister(this);
    }

    @Override
    public String toString() {
        return "mr{lkey=0x" + Integer.toHexString(region.key) + ", addr=0x" + Long.toHexString(region.addr) + ", length=" + length()
                + ", access=" + Access.describe(region.access) + (region.window != null ? ", window=" + region.window.id() : "") + "}";
    }
}
