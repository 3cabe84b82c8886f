package dev.nupa.roce.transport;

import dev.nupa.device.FabricWindow;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.TransferMode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A context's QP and memory-region tables, kept in its fabric {@link FabricWindow#DIRECTORY directory
 * window} so that a {@link TransferMode#DIRECT} requester can make the responder's checks (QP state,
 * protection domain, access, rkey, bounds) before it moves a byte, as a NIC consults its own tables.
 * Layout (docs/rdma.md), host byte order, 4-byte fields written before a release store of the entry's
 * first word and read after an acquire load of it:
 *
 * <pre>
 * 0   u64 magic "NUPAVRB1"        8  u32 maxQps     12 u32 maxMrs     16 u64 epoch (+1 after every entry change)
 * 64  QP entry[maxQps], 32 bytes: u32 state (0 none, else QpState ordinal + 1), u32 pd, u32 access, u32 type,
 *     i32 receive mirror window id (-1 none: SENDs to it go as packets), u32 its key,
 *     i32 the node and i32 the QP number it is connected to (RC; -1 before RTR)
 * M   MR entry[maxMrs], 48 bytes: u32 key (0 free), u32 pd, u32 access, i32 window id (-1 none),
 *     u32 window key, u32 0, u64 addr, u64 length
 * </pre>
 * where {@code M = align(64 + 32 * maxQps, 64)}.
 */
final class VerbsDirectory {
    static final long MAGIC = 0x4E55504156524231L;
    static final int QP_BASE = 64;
    static final int QP_ENTRY = 32;
    static final int MR_ENTRY = 48;
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long EPOCH = 16;
    private static final QpState[] STATES = QpState.values(); // values() copies on every call

    final MemorySegment mem;
    final int maxQps;
    final int maxMrs;
    final long mrBase;

    VerbsDirectory(MemorySegment mem, int maxQps, int maxMrs) {
        this.mem = mem;
        this.maxQps = maxQps;
        this.maxMrs = maxMrs;
        this.mrBase = mrBase(maxQps);
    }

    static long mrBase(int maxQps) {
        return (QP_BASE + (long) QP_ENTRY * maxQps + 63) & ~63L;
    }

    static long bytes(int maxQps, int maxMrs) {
        return mrBase(maxQps) + (long) MR_ENTRY * maxMrs;
    }

    /** Writes the header (owner side, before the window is found by peers). */
    void format() {
        mem.set(ValueLayout.JAVA_INT, 8, maxQps);
        mem.set(ValueLayout.JAVA_INT, 12, maxMrs);
        VarHandle.releaseFence();
        mem.set(ValueLayout.JAVA_LONG, 0, MAGIC);
    }

    /** Reads a peer's directory; null unless the window holds one. */
    static VerbsDirectory open(FabricWindow w) {
        MemorySegment m = w.memory();
        if (m.byteSize() < QP_BASE || m.get(ValueLayout.JAVA_LONG, 0) != MAGIC) {
            return null;
        }
        VarHandle.acquireFence();
        int q = m.get(ValueLayout.JAVA_INT, 8);
        int r = m.get(ValueLayout.JAVA_INT, 12);
        if (q <= 0 || r <= 0 || bytes(q, r) > m.byteSize()) {
            return null;
        }
        return new VerbsDirectory(m, q, r);
    }

    // ---- QP entries (owner writes) --------------------------------------------------------

    void publishQp(int qpn, QpState state, int pd, int access, QpType type, FabricWindow mirror, int peerNode, int peerQpn) {
        long e = QP_BASE + (long) QP_ENTRY * qpn;
        mem.set(ValueLayout.JAVA_INT, e + 24, peerNode);
        mem.set(ValueLayout.JAVA_INT, e + 28, peerQpn);
        mem.set(ValueLayout.JAVA_INT, e + 4, pd);
        mem.set(ValueLayout.JAVA_INT, e + 8, access);
        mem.set(ValueLayout.JAVA_INT, e + 12, type.ordinal());
        mem.set(ValueLayout.JAVA_INT, e + 16, mirror == null ? -1 : mirror.id());
        mem.set(ValueLayout.JAVA_INT, e + 20, mirror == null ? 0 : mirror.key());
        INT.setRelease(mem, e, state == null ? 0 : state.ordinal() + 1);
        bump();
    }

    /** Tells requesters that cached what they checked that an entry changed (one load per operation on their side). */
    private void bump() {
        LONG.setRelease(mem, EPOCH, (long) LONG.getAcquire(mem, EPOCH) + 1);
    }

    /** The epoch, read before the entries a requester checks (an acquire: those reads must not pass it). */
    long epoch() {
        return (long) LONG.getAcquire(mem, EPOCH);
    }

    /**
     * Whether the epoch is still {@code epoch}: a requester's per-operation check of what it cached. A plain
     * load, as {@link dev.nupa.device.FabricWindow#ownerUp}: it guards only the caller's later stores.
     */
    boolean unchangedSince(long epoch) {
        return mem.get(ValueLayout.JAVA_LONG, EPOCH) == epoch;
    }

    /** A peer QP's state, or null when absent. */
    QpState qpState(int qpn) {
        if (qpn <= 0 || qpn >= maxQps) {
            return null;
        }
        int s = (int) INT.getAcquire(mem, QP_BASE + (long) QP_ENTRY * qpn);
        return s <= 0 || s > STATES.length ? null : STATES[s - 1];
    }

    int qpPd(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 4);
    }

    int qpAccess(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 8);
    }

    int qpType(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 12);
    }

    /** The node a peer RC QP is connected to (-1 before RTR). */
    int qpPeerNode(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 24);
    }

    /** The QP number a peer RC QP is connected to (-1 before RTR). */
    int qpPeerQpn(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 28);
    }

    /** The window id of a peer QP's {@link RecvMirror}, or -1 when it has none. */
    int qpMirrorId(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 16);
    }

    int qpMirrorKey(int qpn) {
        return mem.get(ValueLayout.JAVA_INT, QP_BASE + (long) QP_ENTRY * qpn + 20);
    }

    // ---- MR entries -------------------------------------------------------------------------

    void publishMr(Region mr) {
        long e = mrBase + (long) MR_ENTRY * mr.index;
        mem.set(ValueLayout.JAVA_INT, e + 4, mr.pdId);
        mem.set(ValueLayout.JAVA_INT, e + 8, mr.access);
        mem.set(ValueLayout.JAVA_INT, e + 12, mr.window == null ? -1 : mr.window.id());
        mem.set(ValueLayout.JAVA_INT, e + 16, mr.window == null ? 0 : mr.window.key());
        mem.set(ValueLayout.JAVA_LONG, e + 24, mr.addr);
        mem.set(ValueLayout.JAVA_LONG, e + 32, mr.memory.byteSize());
        INT.setRelease(mem, e, mr.key);
        bump();
    }

    void withdrawMr(int index) {
        INT.setRelease(mem, mrBase + (long) MR_ENTRY * index, 0);
        bump();
    }

    /** Offset of the entry that holds {@code rkey}, or -1 if no live region has it. */
    long mrEntry(int rkey) {
        int index = rkey >>> 8;
        if (rkey == 0 || index >= maxMrs) {
            return -1;
        }
        long e = mrBase + (long) MR_ENTRY * index;
        return (int) INT.getAcquire(mem, e) == rkey ? e : -1;
    }

    int mrPd(long e) {
        return mem.get(ValueLayout.JAVA_INT, e + 4);
    }

    int mrAccess(long e) {
        return mem.get(ValueLayout.JAVA_INT, e + 8);
    }

    int mrWindowId(long e) {
        return mem.get(ValueLayout.JAVA_INT, e + 12);
    }

    int mrWindowKey(long e) {
        return mem.get(ValueLayout.JAVA_INT, e + 16);
    }

    long mrAddr(long e) {
        return mem.get(ValueLayout.JAVA_LONG, e + 24);
    }

    long mrLength(long e) {
        return mem.get(ValueLayout.JAVA_LONG, e + 32);
    }

    /** Whether entry {@code e} still holds {@code rkey} (re-checked after reading its fields). */
    boolean stillHolds(long e, int rkey) {
        return (int) INT.getAcquire(mem, e) == rkey;
    }
}
