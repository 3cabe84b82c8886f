package dev.nupa.roce.transport;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricException;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.HeavyFence;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.TransferMode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.function.IntPredicate;

/**
 * A context's QP and memory-region tables (bound memory windows in region slots of their own), kept in its fabric {@link FabricWindow#DIRECTORY directory
 * window} so that a {@link TransferMode#DIRECT} requester can make the responder's checks (QP state,
 * protection domain, access, rkey, bounds) before it moves a byte, as a NIC consults its own tables.
 * Layout (docs/rdma.md), host byte order, 4-byte fields written before a release store of the entry's
 * first word and read after an acquire load of it:
 *
 * <pre>
 * 0   u64 magic "NUPAVRB3"        8  u32 maxQps     12 u32 maxMrs     16 u64 epoch (+1 after every entry change)
 * 24  i32 guard window id          28 u32 its key        32 u32 the guard window's node count
 * 36  u32 flags: bit 0, deregistration runs a {@link HeavyFence} between its store and its loads
 * 64  QP entry[maxQps], 32 bytes: u32 state (0 none, else QpState ordinal + 1), u32 pd, u32 access, u32 type,
 *     i32 receive mirror window id (-1 none: SENDs to it go as packets), u32 its key,
 *     i32 the node and i32 the QP number it is connected to (RC; -1 before RTR)
 * M   MR entry[maxMrs], 48 bytes: u32 key (0 free), u32 pd, u32 access, i32 window id (-1 none),
 *     u32 window key, u32 0, u64 addr, u64 length, u64 where addr lies in the window (0 for a region; a bound
 *     memory window's entry names its region's window and the bound range)
 * </pre>
 * where {@code M = align(64 + 32 * maxQps, 64)}.
 *
 * <p>Peers may only read the directory. Beside it the context exports a <em>guard</em> window, which keeps a
 * region's memory safe from direct copies once it is deregistered, as a NIC finishes its DMA before
 * {@code ibv_dereg_mr} returns:
 * <pre>
 * 0   u64 stamp[maxMrs]: the registration in region slot i (unique per registration in this directory, 0 none)
 * B   u64 busy[nodes], 64 bytes apart: slot &lt;&lt; 32 | stamp of the region fabric node n copies into or out of
 *     now, 0 when none (B = align(8 * maxMrs, 64); each node writes only its own word)
 * </pre>
 * A requester copies on its context's one thread, so one busy word per node is enough. It stores its busy word,
 * fences, and checks the stamp is still the one it checked before it touches the window; it clears the word
 * (a release) after. Deregistration clears the stamp, fences, and waits while any node's busy word names the
 * registration (Dekker's handshake: one side always sees the other's store). Where both processes can use
 * membarrier(2) (flag bit 0 and {@link HeavyFence#available}), the requester's fence is left out and the
 * deregistering side runs a {@link HeavyFence} instead: a fence on every direct copy drains the CPU's store buffer
 * of the copy before it (direct write-bw at 64 KiB on a 16-core Xeon: 110 Gbit/s with it, 139 without, 153 with
 * no guard; medians of 5).
 */
final class VerbsDirectory {
    static final long MAGIC = 0x4E55504156524233L; // "NUPAVRB3": peers of another layout find no directory
    static final int QP_BASE = 64;
    static final int QP_ENTRY = 32;
    static final int MR_ENTRY = 48;
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long EPOCH = 16;
    private static final QpState[] STATES = QpState.values(); // values() copies on every call

    final MemorySegment mem;
    /** The guard window's memory: the stamps, then the busy words. */
    final MemorySegment guards;
    /** Where node n's busy word is: {@code busyBase + 64 * n}. */
    private final long busyBase;
    /** The nodes the guard window has busy words for. */
    private final int nodes;
    /** This node's busy word (a peer's directory: the one its requester writes); -1 in the owner's own. */
    private final long mine;
    /** Owner: deregistration runs a heavy fence. Requester: the owner does, and this process is covered by it. */
    private final boolean asymmetric;
    private static final int ASYMMETRIC = 1;
    final int maxQps;
    final int maxMrs;
    final long mrBase;
    /** The stamp of the next registration (owner side); never 0. */
    private int nextStamp = 1;

    VerbsDirectory(MemorySegment mem, MemorySegment guards, int maxQps, int maxMrs, int nodes, int me, boolean asymmetric) {
        this.asymmetric = asymmetric;
        this.mem = mem;
        this.guards = guards;
        this.nodes = nodes;
        this.busyBase = busyBase(maxMrs);
        this.mine = me < 0 ? -1 : busyBase + 64L * me;
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

    private static long busyBase(int maxMrs) {
        return (8L * maxMrs + 63) & ~63L;
    }

    /** The bytes of the guard window for {@code maxMrs} region slots and {@code nodes} fabric nodes. */
    static long guardBytes(int maxMrs, int nodes) {
        return busyBase(maxMrs) + 64L * nodes;
    }

    /** Writes the header (owner side, before the window is found by peers); {@code guard} is the guard window. */
    void format(FabricWindow guard) {
        mem.set(ValueLayout.JAVA_INT, 8, maxQps);
        mem.set(ValueLayout.JAVA_INT, 12, maxMrs);
        mem.set(ValueLayout.JAVA_INT, 24, guard.id());
        mem.set(ValueLayout.JAVA_INT, 28, guard.key());
        mem.set(ValueLayout.JAVA_INT, 32, nodes);
        mem.set(ValueLayout.JAVA_INT, 36, asymmetric ? ASYMMETRIC : 0);
        VarHandle.releaseFence();
        mem.set(ValueLayout.JAVA_LONG, 0, MAGIC);
    }

    /**
     * Reads a peer's directory, opening its guard window through {@code device}; null unless the window holds a
     * directory whose guard window is open to writers and large enough.
     */
    static VerbsDirectory open(FabricWindow w, FabricDevice device) {
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
        FabricWindow g;
        try {
            g = device.openWindow(m.get(ValueLayout.JAVA_INT, 24), m.get(ValueLayout.JAVA_INT, 28));
        } catch (FabricException e) {
            return null;
        }
        int nodes = m.get(ValueLayout.JAVA_INT, 32);
        int me = device.address();
        if ((g.access() & FabricWindow.REMOTE_WRITE) == 0 || me >= nodes || g.memory().byteSize() < guardBytes(r, nodes)) {
            return null;
        }
        boolean asymmetric = (m.get(ValueLayout.JAVA_INT, 36) & ASYMMETRIC) != 0 && HeavyFence.available();
        return new VerbsDirectory(m, g.memory(), q, r, nodes, me, asymmetric);
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
        mem.set(ValueLayout.JAVA_LONG, e + 40, mr.windowOffset);
        int stamp = nextStamp;
        nextStamp = stamp == -1 ? 1 : stamp + 1;
        mr.stamp = stamp;
        LONG.setRelease(guards, 8L * mr.index, (long) stamp);
        INT.setRelease(mem, e, mr.key);
        bump();
    }

    /**
     * Withdraws region {@code mr}: its key stops matching and no direct copy can start on it, then waits while a
     * copy begun before is in flight, until {@code deadline} (System.nanoTime) or while its node is up. Returns
     * whether none is left (the window may be freed); false leaves it to {@link #drained} (hold the window back).
     */
    boolean withdrawMr(Region mr, long deadline, IntPredicate up) {
        INT.setRelease(mem, mrBase + (long) MR_ENTRY * mr.index, 0);
        LONG.setVolatile(guards, 8L * mr.index, 0L); // a full fence: the busy words read below come after it
        bump();
        if (asymmetric && !HeavyFence.run()) {
            return false; // requesters store without a fence: without the heavy one their busy words prove nothing
        }
        long busy = busyWord(mr.index, mr.stamp);
        for (int n = 0; n < nodes; n++) {
            long at = busyBase + 64L * n;
            while ((long) LONG.getAcquire(guards, at) == busy) { // an acquire: the copy's bytes came first
                if (!up.test(n) || System.nanoTime() - deadline > 0) {
                    return false;
                }
                Thread.onSpinWait();
            }
        }
        return true;
    }

    /** Whether no node's busy word names withdrawn region {@code mr} any more. */
    boolean drained(Region mr) {
        if (asymmetric && !HeavyFence.run()) {
            return false;
        }
        long busy = busyWord(mr.index, mr.stamp);
        for (int n = 0; n < nodes; n++) {
            if ((long) LONG.getAcquire(guards, busyBase + 64L * n) == busy) {
                return false;
            }
        }
        return true;
    }

    private static long busyWord(int slot, int stamp) {
        return (long) slot << 32 | (stamp & 0xFFFF_FFFFL);
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

    /** Where {@link #mrAddr} lies in the entry's window: 0 for a region, the bound range's offset for a memory window. */
    long mrOffset(long e) {
        return mem.get(ValueLayout.JAVA_LONG, e + 40);
    }

    /** The region slot of entry {@code e}. */
    int slotOf(long e) {
        return (int) ((e - mrBase) / MR_ENTRY);
    }

    /** The stamp of the registration in region slot {@code slot} (0 while it is withdrawn). */
    int stamp(int slot) {
        return (int) (long) LONG.getAcquire(guards, 8L * slot);
    }

    /**
     * Announces a direct copy into or out of region slot {@code slot}, registration {@code stamp}, and confirms
     * that the registration still stands; the caller must {@link #leave} after its last access to the region's
     * window. False (nothing announced): the region was withdrawn.
     */
    boolean enter(int slot, int stamp) {
        if (asymmetric) {
            // The JIT keeps this store before the load below (both are raw memory it cannot tell apart); the CPU may
            // still hold the store in its store buffer past the load, which the owner's heavy fence drains.
            LONG.setRelease(guards, mine, busyWord(slot, stamp));
        } else {
            LONG.setVolatile(guards, mine, busyWord(slot, stamp)); // a full fence: the stamp read below comes after it
        }
        if ((int) (long) LONG.getVolatile(guards, 8L * slot) == stamp) {
            return true;
        }
        LONG.setRelease(guards, mine, 0L);
        return false;
    }

    /** Ends the copy {@link #enter} announced: its bytes are visible before the word clears (a release). */
    void leave() {
        LONG.setRelease(guards, mine, 0L);
    }

    /** Whether entry {@code e} still holds {@code rkey} (re-checked after reading its fields). */
    boolean stillHolds(long e, int rkey) {
        return (int) INT.getAcquire(mem, e) == rkey;
    }
}
