package dev.nupa.roce;

import dev.nupa.device.FabricWindow;
import java.lang.foreign.MemorySegment;

/**
 * A registered memory region, in the manner of libibverbs' {@code struct ibv_mr}: {@link #memory()} is
 * addressed through {@link #addr()} ({@code addr() + i} is byte {@code i}) under the keys {@link #lkey()}
 * and {@link #rkey()}. A region from {@link ProtectionDomain#allocMr} lives in a fabric window, so a
 * {@link TransferMode#DIRECT} peer can place data straight into it; one from {@link ProtectionDomain#regMr}
 * is reached by peers through packets only. {@link #close()} deregisters it ({@code ibv_dereg_mr}).
 */
public final class MemoryRegion implements AutoCloseable {
    final ProtectionDomain pd;
    final int index;
    final int key;
    final int access;
    final MemorySegment memory;
    final long addr;
    final FabricWindow window;
    boolean closed;

    MemoryRegion(ProtectionDomain pd, int index, int key, int access, MemorySegment memory, FabricWindow window) {
        this.pd = pd;
        this.index = index;
        this.key = key;
        this.access = access;
        this.memory = memory;
        this.addr = memory.address();
        this.window = window;
    }

    public int lkey() {
        return key;
    }

    public int rkey() {
        return key;
    }

    /** The region's first address: what a peer puts in {@code remoteAddr}, and local scatter/gather entries use. */
    public long addr() {
        return addr;
    }

    public long length() {
        return memory.byteSize();
    }

    public int access() {
        return access;
    }

    public MemorySegment memory() {
        return memory;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** Whether the region lives in a fabric window (direct placement reaches it). */
    public boolean inWindow() {
        return window != null;
    }

    /** Whether {@code [va, va + length)} lies inside the region. */
    boolean covers(long va, long length) {
        return va >= addr && length >= 0 && va - addr <= memory.byteSize() - length;
    }

    @Override
    public void close() {
        pd.context.deregister(this);
    }

    @Override
    public String toString() {
        return "mr{lkey=0x" + Integer.toHexString(key) + ", addr=0x" + Long.toHexString(addr) + ", length=" + length()
                + ", access=" + Access.describe(access) + (window != null ? ", window=" + window.id() : "") + "}";
    }
}
