package dev.nupa.roce;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.MwType;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.TransferMode;
import java.lang.foreign.MemorySegment;

/**
 * A protection domain ({@code ibv_pd}): memory regions and queue pairs created in it may be used
 * together; a remote access through a QP of another domain is refused (IBA 10.2.3).
 */
public final class ProtectionDomain implements AutoCloseable {
    final RdmaContext context;
    final int id;
    int users;
    boolean closed;

    ProtectionDomain(RdmaContext context, int id) {
        this.context = context;
        this.id = id;
    }

    public int id() {
        return id;
    }

    public RdmaContext context() {
        return context;
    }

    /**
     * Registers memory the application owns ({@code ibv_reg_mr}). Peers reach it through packets; for
     * {@link TransferMode#DIRECT} placement allocate the region in a fabric window with {@link #allocMr}.
     * The segment must be native (heap arrays move) and stay alive until the region is closed.
     */
    public MemoryRegion regMr(MemorySegment memory, int access) {
        context.checkThread();
        if (!memory.isNative()) {
            throw new RdmaException("memory regions need native memory (Arena.allocate or a mapped file); heap segments move");
        }
        if (memory.isReadOnly() && (access & Access.LOCAL_WRITE) != 0) {
            throw new RdmaException("a read-only segment cannot be registered with LOCAL_WRITE");
        }
        return context.register(this, memory, access);
    }

    /**
     * Allocates {@code length} zeroed bytes in a fabric window and registers them: peers may reach the
     * region both by packets and by direct placement.
     */
    public MemoryRegion allocMr(long length, int access) {
        context.checkThread();
        if (length <= 0) {
            throw new RdmaException("memory region length must be positive, was " + length);
        }
        return context.allocRegion(this, length, access);
    }

    /**
     * Allocates a memory window ({@code ibv_alloc_mw}), free until a {@code WrOpcode.BIND_MW} work request on a QP of
     * this domain binds it. Type 2 only; it takes a slot of the context's region table.
     */
    public MemoryWindow allocMw(MwType type) {
        context.checkThread();
        if (type != MwType.TYPE_2) {
            throw new RdmaException("memory windows of " + type + " (bound with ibv_bind_mw) are not supported; allocate MwType.TYPE_2"
                    + " and bind it with a WrOpcode.BIND_MW work request");
        }
        return context.allocMw(this);
    }

    /** Deallocates the domain ({@code ibv_dealloc_pd}); throws if regions or QPs still use it. */
    @Override
    public void close() {
        context.checkThread();
        if (closed) {
            return;
        }
        if (users > 0) {
            throw new RdmaException("protection domain " + id + " still has " + users
                    + " memory region(s), memory window(s) or queue pair(s); close them first");
        }
        closed = true;
        context.pds--;
    }
}
