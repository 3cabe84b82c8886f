package dev.nupa.roce.transport;

import dev.nupa.device.FabricWindow;
import java.lang.foreign.MemorySegment;

/**
 * A registered memory region as the transport checks and copies through it, behind its verbs handle
 * ({@code dev.nupa.roce.MemoryRegion}), as Soft-RoCE's rxe_mr is behind ib_mr: its key, protection domain, access and
 * bytes. {@code addr + i} is byte {@code i} of {@link #memory}.
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
