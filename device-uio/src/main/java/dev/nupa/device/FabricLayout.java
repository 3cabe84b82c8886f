package dev.nupa.device;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Byte offsets of the fabric layout, version 2. docs/fabric-layout.md is the normative text; this
 * class and that document must agree. All integers are little-endian; every field that is shared
 * between writers sits on a 64-byte cache line of its own kind (see the document).
 */
public final class FabricLayout {
    private FabricLayout() {
    }

    /** "NUPAFAB1" read as a little-endian u64. */
    public static final long MAGIC = 0x314241464150554EL;
    public static final int VERSION = 2;
    public static final int PAGE = 4096;
    public static final int LINE = 64;

    // Header (one page at offset 0).
    public static final long H_MAGIC = 0;
    public static final long H_VERSION = 8;
    public static final long H_HEADER_BYTES = 12;
    public static final long H_TOTAL_BYTES = 16;
    public static final long H_MAX_NODES = 24;
    public static final long H_RINGS_PER_NODE = 28;
    public static final long H_RING_SLOTS = 32;
    public static final long H_SLOT_BYTES = 36;
    public static final long H_MAX_FRAME = 40;
    public static final long H_MAX_WINDOWS = 44;
    public static final long H_WINDOW_BYTES = 48;
    public static final long H_NODE_TABLE = 56;
    public static final long H_RINGS = 64;
    public static final long H_WINDOW_TABLE = 72;
    public static final long H_WINDOW_AREA = 80;
    public static final long H_HEARTBEAT_PERIOD_NS = 88;
    public static final long H_HEARTBEAT_TIMEOUT_NS = 96;
    public static final long H_STALL_TIMEOUT_NS = 104;
    public static final long H_CREATED_MILLIS = 112;
    public static final long H_NODE_BYTES = 120;
    public static final long H_RING_BYTES = 128;
    /** The control-plane lock (window allocation): 0 free, else (generation << 32) | (address + 1). */
    public static final long H_LOCK = 192;
    /** u64 membership epoch: added to after every change of a node's state word, so watchers scan states only then. */
    public static final long H_EPOCH = 256;
    /** The observer table: 8 slots of 256 bytes for capture observers (docs/fabric-layout.md 12.1; {@link ObserverTable}). */
    public static final long H_OBSERVERS = 512;

    // Node table entry (512 bytes).
    public static final int NODE_BYTES = 512;
    /** u32 state and u32 generation, updated together as one u64 (state low, generation high). */
    public static final long N_STATE = 0;
    public static final long N_GENERATION = 4;
    public static final long N_PID = 8;
    public static final long N_HOST_ID = 16;
    public static final long N_JOINED_MILLIS = 24;
    public static final long N_HEARTBEAT = 64;
    public static final long N_ARMED = 128;
    public static final long N_DOORBELL = 132;
    /** u32: the node's ivshmem peer ID + 1 where it sleeps on an ivshmem-doorbell interrupt (VFIO), else 0. */
    public static final long N_IVSHMEM_PEER = 136;
    public static final long N_FRAMES_SENT = 192;
    public static final long N_BYTES_SENT = 200;
    public static final long N_BACK_PRESSURED = 208;
    public static final long N_PEER_DOWN = 216;
    public static final long N_LATE_DROPS = 224;
    public static final long N_INTERRUPTS_SENT = 232;
    public static final long N_FRAMES_RECEIVED = 256;
    public static final long N_BYTES_RECEIVED = 264;
    public static final long N_STALL_SKIPS = 272;
    public static final long N_WAKEUPS = 280;
    public static final long N_DISCARDED = 288;
    public static final long N_HANDLER_ERRORS = 296;
    public static final long N_CORRUPT = 304;
    public static final long N_INTERRUPTS_RECEIVED = 312;
    public static final long N_ATTR_VERSION = 320;
    public static final long N_ATTRS = 328;
    public static final int ATTR_BYTES = NODE_BYTES - (int) N_ATTRS;

    public static final int STATE_FREE = 0;
    public static final int STATE_JOINING = 1;
    public static final int STATE_UP = 2;
    public static final int STATE_RECLAIMING = 3;

    // Ring: a 256-byte header, then the slots.
    public static final long R_TAIL = 0;
    public static final long R_HEAD = 64;
    public static final int RING_HEADER = 256;

    // Slot: a 16-byte header, then the frame.
    public static final long S_CTRL = 0;
    public static final long S_LENGTH = 8;
    public static final long S_SOURCE = 12;
    public static final long S_SOURCE_GEN = 14;
    public static final int SLOT_HEADER = 16;
    /** ctrl = ((position + 1) << 2) | flags. */
    public static final long CTRL_PADDING = 1;
    public static final long CTRL_SKIPPED = 2;

    // Window table entry (64 bytes).
    public static final int WINDOW_ENTRY = 64;
    public static final long W_STATE = 0;
    public static final long W_OWNER = 4;
    public static final long W_OWNER_GEN = 8;
    public static final long W_KEY = 12;
    public static final long W_OFFSET = 16;
    public static final long W_LENGTH = 24;
    public static final long W_ACCESS = 32;
    public static final int WINDOW_FREE = 0;
    public static final int WINDOW_ACTIVE = 1;

    static {
        if (java.nio.ByteOrder.nativeOrder() != java.nio.ByteOrder.LITTLE_ENDIAN) {
            throw new FabricException("the fabric layout is little-endian and this build maps it natively; run on a little-endian CPU");
        }
    }

    public static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    public static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    public static long align(long value, long to) {
        return (value + to - 1) & -to;
    }

    public static int slotBytes(int maxFrame) {
        return (int) align(SLOT_HEADER + (long) maxFrame, LINE);
    }

    public static long ringBytes(int ringSlots, int maxFrame) {
        return RING_HEADER + (long) ringSlots * slotBytes(maxFrame);
    }

    public static long nodeTableOffset() {
        return PAGE;
    }

    public static long ringsOffset(int maxNodes) {
        return align(nodeTableOffset() + (long) maxNodes * NODE_BYTES, PAGE);
    }

    public static long windowTableOffset(int maxNodes, int ringsPerNode, int ringSlots, int maxFrame) {
        return align(ringsOffset(maxNodes) + (long) maxNodes * ringsPerNode * ringBytes(ringSlots, maxFrame), PAGE);
    }

    public static long windowAreaOffset(int maxNodes, int ringsPerNode, int ringSlots, int maxFrame, int maxWindows) {
        return align(windowTableOffset(maxNodes, ringsPerNode, ringSlots, maxFrame)
                + (long) maxWindows * WINDOW_ENTRY, PAGE);
    }

    public static long totalBytes(int maxNodes, int ringsPerNode, int ringSlots, int maxFrame, int maxWindows,
                                  long windowBytes) {
        return windowAreaOffset(maxNodes, ringsPerNode, ringSlots, maxFrame, maxWindows) + windowBytes;
    }

    /** Writes the header of a zero-filled region; the magic is stored last, with release semantics. */
    static void writeHeader(MemorySegment s, FabricGeometry g, long createdMillis) {
        s.set(ValueLayout.JAVA_INT, H_VERSION, VERSION);
        s.set(ValueLayout.JAVA_INT, H_HEADER_BYTES, PAGE);
        s.set(ValueLayout.JAVA_LONG, H_TOTAL_BYTES, g.totalBytes());
        s.set(ValueLayout.JAVA_INT, H_MAX_NODES, g.maxNodes());
        s.set(ValueLayout.JAVA_INT, H_RINGS_PER_NODE, g.ringsPerNode());
        s.set(ValueLayout.JAVA_INT, H_RING_SLOTS, g.ringSlots());
        s.set(ValueLayout.JAVA_INT, H_SLOT_BYTES, slotBytes(g.maxFrame()));
        s.set(ValueLayout.JAVA_INT, H_MAX_FRAME, g.maxFrame());
        s.set(ValueLayout.JAVA_INT, H_MAX_WINDOWS, g.maxWindows());
        s.set(ValueLayout.JAVA_LONG, H_WINDOW_BYTES, g.windowBytes());
        s.set(ValueLayout.JAVA_LONG, H_NODE_TABLE, nodeTableOffset());
        s.set(ValueLayout.JAVA_LONG, H_RINGS, ringsOffset(g.maxNodes()));
        s.set(ValueLayout.JAVA_LONG, H_WINDOW_TABLE,
                windowTableOffset(g.maxNodes(), g.ringsPerNode(), g.ringSlots(), g.maxFrame()));
        s.set(ValueLayout.JAVA_LONG, H_WINDOW_AREA,
                windowAreaOffset(g.maxNodes(), g.ringsPerNode(), g.ringSlots(), g.maxFrame(), g.maxWindows()));
        s.set(ValueLayout.JAVA_LONG, H_HEARTBEAT_PERIOD_NS, g.heartbeatPeriodNs());
        s.set(ValueLayout.JAVA_LONG, H_HEARTBEAT_TIMEOUT_NS, g.heartbeatTimeoutNs());
        s.set(ValueLayout.JAVA_LONG, H_STALL_TIMEOUT_NS, g.stallTimeoutNs());
        s.set(ValueLayout.JAVA_LONG, H_CREATED_MILLIS, createdMillis);
        s.set(ValueLayout.JAVA_LONG, H_NODE_BYTES, NODE_BYTES);
        s.set(ValueLayout.JAVA_LONG, H_RING_BYTES, ringBytes(g.ringSlots(), g.maxFrame()));
        LONG.setRelease(s, H_MAGIC, MAGIC);
    }

    /**
     * Reads and checks the header of a region that claims to be a fabric.
     *
     * @throws FabricException naming the first thing wrong (magic, version, size, geometry)
     */
    static FabricGeometry readHeader(MemorySegment s, String where) {
        if (s.byteSize() < PAGE) {
            throw new FabricException(where + " is " + s.byteSize() + " bytes, too small to be a NUPA fabric"
                    + " (a header alone is " + PAGE + "); remove it or point at another file");
        }
        long magic = (long) LONG.getAcquire(s, H_MAGIC);
        if (magic != MAGIC) {
            throw new FabricException(where + " is not a NUPA fabric (magic 0x" + Long.toHexString(magic)
                    + ", expected 0x" + Long.toHexString(MAGIC) + "); remove it or point at another file");
        }
        int version = s.get(ValueLayout.JAVA_INT, H_VERSION);
        if (version != VERSION) {
            throw new FabricException(where + " has fabric layout version " + version + " but this build reads version "
                    + VERSION + "; recreate the fabric or use a matching build");
        }
        FabricGeometry g;
        try {
            g = new FabricGeometry(s.get(ValueLayout.JAVA_INT, H_MAX_NODES), s.get(ValueLayout.JAVA_INT, H_RINGS_PER_NODE),
                    s.get(ValueLayout.JAVA_INT, H_RING_SLOTS), s.get(ValueLayout.JAVA_INT, H_MAX_FRAME),
                    s.get(ValueLayout.JAVA_INT, H_MAX_WINDOWS), s.get(ValueLayout.JAVA_LONG, H_WINDOW_BYTES),
                    s.get(ValueLayout.JAVA_LONG, H_HEARTBEAT_PERIOD_NS), s.get(ValueLayout.JAVA_LONG, H_HEARTBEAT_TIMEOUT_NS),
                    s.get(ValueLayout.JAVA_LONG, H_STALL_TIMEOUT_NS));
        } catch (FabricException e) {
            throw new FabricException(where + " has a damaged header: " + e.getMessage());
        }
        long declared = s.get(ValueLayout.JAVA_LONG, H_TOTAL_BYTES);
        if (declared != g.totalBytes()
                || s.get(ValueLayout.JAVA_INT, H_HEADER_BYTES) != PAGE
                || s.get(ValueLayout.JAVA_LONG, H_NODE_BYTES) != NODE_BYTES
                || s.get(ValueLayout.JAVA_INT, H_SLOT_BYTES) != slotBytes(g.maxFrame())
                || s.get(ValueLayout.JAVA_LONG, H_RING_BYTES) != ringBytes(g.ringSlots(), g.maxFrame())
                || s.get(ValueLayout.JAVA_LONG, H_NODE_TABLE) != nodeTableOffset()
                || s.get(ValueLayout.JAVA_LONG, H_RINGS) != ringsOffset(g.maxNodes())
                || s.get(ValueLayout.JAVA_LONG, H_WINDOW_TABLE)
                        != windowTableOffset(g.maxNodes(), g.ringsPerNode(), g.ringSlots(), g.maxFrame())
                || s.get(ValueLayout.JAVA_LONG, H_WINDOW_AREA)
                        != windowAreaOffset(g.maxNodes(), g.ringsPerNode(), g.ringSlots(), g.maxFrame(), g.maxWindows())) {
            throw new FabricException(where + " has a damaged header: its offsets do not follow from its geometry");
        }
        // A PCI BAR is a power of two: QEMU's ivshmem maps the file only at such a size, so the file may reach the
        // next one (a sparse tail that nothing writes).
        if (s.byteSize() != declared && s.byteSize() != barBytes(declared)) {
            throw new FabricException(where + " is " + s.byteSize() + " bytes but its header says " + declared
                    + " (or " + barBytes(declared) + " for a PCI BAR); the file was truncated or extended; recreate the fabric");
        }
        return g;
    }

    /** The size of a PCI BAR that holds a fabric of {@code totalBytes}: the next power of two (PCI 3.0 6.2.5.1). */
    public static long barBytes(long totalBytes) {
        return Long.highestOneBit(totalBytes) == totalBytes ? totalBytes : Long.highestOneBit(totalBytes) << 1;
    }
}
