package dev.nupa.roce.transport;

import dev.nupa.device.FabricWindow;
import java.lang.foreign.MemorySegment;

/**
 * A registered memory region as the transport checks and copies through it, behind its verbs handle
 * ({@code dev.nupa.roce.MemoryRegion}), as Soft-RoCE's rxe_mr is behind ib_mr: its key, protection domain, access and
 * bytes. {@code addr + i} is byte {@code i} of {@link #memory}. A bound memory window is one too, in a slot of its own
 * ({@link Mw}): its key is the window's rkey, its bytes the bound range of {@link #parent}'s, its window the parent's.
 */
public final class Region {
    public final int pdId;
    public final int index;
    public final int key;
    public final int access;
    public final MemorySegment memory;
    public final long addr;
    /** The fabric window the region lives in (direct placement reaches it), or null. */
    public final FabricWindow window;
    /** A bound memory window's region; null for a memory region. */
    final Region parent;
    /** Where {@link #memory} starts in {@link #window}: 0 for a region, the bound range's offset for a window. */
    final long windowOffset;
    /** Memory windows bound to this region now (deregistration is refused while any is, as rxe refuses it). */
    int boundWindows;
    boolean closed;
    /** The registration's stamp in the directory's guard window ({@link VerbsDirectory}). */
    int stamp;

    Region(int pdId, int index, int key, int access, MemorySegment memory, FabricWindow window) {
        this.pdId = pdId;
        this.index = index;
        this.key = key;
        this.access = access;
        this.memory = memory;
        this.addr = memory.address();
        this.window = window;
        this.parent = null;
        this.windowOffset = 0;
    }

    /** Memory window {@code index}, bound with {@code key} and {@code access} to {@code [addr, addr + length)} of {@code mr}. */
    Region(Region mr, int index, int key, int access, long addr, long length) {
        this.pdId = mr.pdId;
        this.index = index;
        this.key = key;
        this.access = access;
        this.memory = mr.memory.asSlice(addr - mr.addr, length);
        this.addr = addr;
        this.window = mr.window;
        this.parent = mr;
        this.windowOffset = mr.windowOffset + (addr - mr.addr);
    }

    /** Whether this is a bound memory window (its key is no L_Key: local lists refuse it, IBA 10.6.7). */
    public boolean isWindow() {
        return parent != null;
    }

    /** The memory windows bound to this region now. */
    public int boundWindows() {
        return boundWindows;
    }

    /** Whether it was deregistered. */
    public boolean closed() {
        return closed;
    }

    /** Whether {@code [va, va + length)} lies inside the region. */
    public boolean covers(long va, long length) {
        return va >= addr && length >= 0 && va - addr <= memory.byteSize() - length;
    }
}
