package dev.nupa.device;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A region of fabric memory that a node exported for its peers to read and write in place
 * (the fabric's DMA channel). Peers open it by id and key; the key guards against stale ids and
 * bugs, not against hostile nodes (everyone who maps the fabric is trusted).
 */
public final class FabricWindow implements AutoCloseable {
    public static final int REMOTE_READ = 1;
    public static final int REMOTE_WRITE = 2;
    /**
     * Marks the owner's directory: one well-known window per node (the verbs layer keeps its QP and
     * memory-region tables there) that peers find by owner with {@link FabricDevice#openDirectory}.
     */
    public static final int DIRECTORY = 4;
    /** Holds a {@link CounterTable} its owner publishes for tools that read the fabric ({@link Fabric#publishedCounters}). */
    public static final int COUNTERS = 8;
    /** Holds a work ring (docs/work-rings.md): a proxy's submission and completion rings for one of its QPs. */
    public static final int WORK_RING = 16;

    private final Fabric fabric;
    private final int id;
    private final int key;
    private final int owner;
    private final int access;
    private final MemorySegment memory;
    private final boolean exported;
    /** The owner's node state word while it is up in the incarnation that exported this window. */
    private final long ownerWord;
    /** Where that word lies: the fabric's memory and the offset in it (held here: one hop less per check). */
    private final MemorySegment fabricMemory;
    private final long ownerStateOffset;
    private boolean closed;

    FabricWindow(Fabric fabric, int id, int key, int owner, int ownerGen, int access, MemorySegment memory, boolean exported) {
        this.fabric = fabric;
        this.ownerWord = Fabric.word(FabricLayout.STATE_UP, ownerGen);
        this.fabricMemory = fabric.mem;
        this.ownerStateOffset = fabric.nodeOffset(owner) + FabricLayout.N_STATE;
        this.id = id;
        this.key = key;
        this.owner = owner;
        this.access = access;
        this.memory = memory;
        this.exported = exported;
    }

    public int id() {
        return id;
    }

    public int key() {
        return key;
    }

    public int owner() {
        return owner;
    }

    public int access() {
        return access;
    }

    public long length() {
        return memory.byteSize();
    }

    /** The window's bytes; read-only when opened from a window that does not grant REMOTE_WRITE. */
    public MemorySegment memory() {
        return memory;
    }

    /** Whether this window is still exported by a live owner with the same key (peers should check before use). */
    public boolean isValid() {
        return !closed && fabric.windowValid(id, key, owner);
    }

    /**
     * Whether the node that exported this window is still up in the same incarnation: one load, for a
     * caller that learns of the window's withdrawal another way (the verbs layer: its directory's epoch
     * changes before a region's window is freed). {@link #isValid} checks the window entry as well.
     *
     * <p>A plain load, not an acquire: the answer only guards the caller's own later stores into the
     * window (they depend on it; no CPU makes a store visible before the branch that guards it), and the
     * check is racy by nature (the owner may die right after it) whatever the order. As acquires, this
     * and the directory's epoch check cost the verbs layer's direct WRITE some 3 ns a post (measured,
     * single-thread ping-pong): after an acquire the compiler reloads every field the next access checks.
     */
    public boolean ownerUp() {
        return !closed && fabricMemory.get(ValueLayout.JAVA_LONG, ownerStateOffset) == ownerWord;
    }

    /** For the exporter: withdraws the window and frees its space. For a peer: forgets it. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (exported) {
                fabric.freeWindow(id, key);
            }
        }
    }
}
