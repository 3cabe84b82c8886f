package dev.nupa.device;

import static dev.nupa.device.FabricLayout.*;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A mapped fabric: the bytes of docs/fabric-layout.md wherever they live (a /dev/shm file for the
 * shm backend, a PCI BAR for uio). Nodes attach to it; tools read it. Control-plane operations live
 * here (joining, reclaiming dead nodes, the window table); the datapath lives in {@link FabricNode}.
 */
public final class Fabric implements AutoCloseable {
    static final long HOST_ID = readHostId();

    final MemorySegment mem;
    private final Arena arena;
    private final String name;
    private final boolean writable;
    final FabricGeometry geometry;
    final long nodeTable;
    final long rings;
    final long ringBytes;
    final int slotBytes;
    final long windowTable;
    final long windowArea;
    private final SplittableRandom keys = new SplittableRandom(new SecureRandom().nextLong());

    /** True where the fabric is a device's memory (a PCI BAR) rather than a file: its doorbells are polled ({@link Doorbell}). */
    final boolean polled;
    /** The ivshmem-doorbell device whose BAR this is, driven through VFIO (interrupts), or null. */
    final VfioDevice vfio;
    /** The file mapped, watched for removal, replacement and shrinking; null for a device's memory. */
    private final FabricFile file;

    Fabric(MemorySegment mem, Arena arena, String name, boolean writable) {
        this(mem, arena, name, writable, false, null);
    }

    Fabric(MemorySegment mem, Arena arena, String name, boolean writable, boolean polled) {
        this(mem, arena, name, writable, polled, null);
    }

    Fabric(MemorySegment mem, Arena arena, String name, boolean writable, boolean polled, VfioDevice vfio) {
        this.polled = polled;
        this.vfio = vfio;
        this.mem = mem;
        this.arena = arena;
        this.name = name;
        this.writable = writable;
        this.geometry = FabricLayout.readHeader(mem, name);
        this.nodeTable = mem.get(ValueLayout.JAVA_LONG, H_NODE_TABLE);
        this.rings = mem.get(ValueLayout.JAVA_LONG, H_RINGS);
        this.ringBytes = mem.get(ValueLayout.JAVA_LONG, H_RING_BYTES);
        this.slotBytes = mem.get(ValueLayout.JAVA_INT, H_SLOT_BYTES);
        this.windowTable = mem.get(ValueLayout.JAVA_LONG, H_WINDOW_TABLE);
        this.windowArea = mem.get(ValueLayout.JAVA_LONG, H_WINDOW_AREA);
        this.file = polled || vfio != null ? null : FabricFile.of(name, mem.byteSize());
    }

    /**
     * Null while the fabric's file is the one mapped and still holds every mapped byte (always, for a device's
     * memory); else what happened to it, in words: the nodes on this mapping must stop (docs/fabric-layout.md 10.5).
     */
    public String lostReason() {
        return file == null ? null : file.check();
    }

    /** Set when a node on this mapping found its memory gone: the control plane then leaves the memory alone. */
    volatile boolean lost;

    public FabricGeometry geometry() {
        return geometry;
    }

    public String name() {
        return name;
    }

    /** Whether this fabric is a PCI BAR whose doorbells are polled, not a file whose doorbells are futexes. */
    public boolean polled() {
        return polled;
    }

    /** How this mapping's nodes sleep and are woken: a futex, polling, or ivshmem-doorbell interrupts (with the peer ID). */
    public String doorbells() {
        return !polled ? "futex" : vfio == null ? "polled every " + Doorbell.POLL_NS / 1000 + " us"
                : "MSI-X interrupts of " + vfio.bdf() + " through VFIO (ivshmem peer " + vfio.peerId() + "), and a look every "
                + Doorbell.POLL_NS / 1000 + " us";
    }

    public long createdMillis() {
        return mem.get(ValueLayout.JAVA_LONG, H_CREATED_MILLIS);
    }

    long nodeOffset(int address) {
        return nodeTable + (long) address * NODE_BYTES;
    }

    long ringOffset(int address, int ring) {
        return rings + ((long) address * geometry.ringsPerNode() + ring) * ringBytes;
    }

    void checkAddress(int address) {
        if (address < 0 || address >= geometry.maxNodes()) {
            throw new FabricException("node address " + address + " is outside 0.." + (geometry.maxNodes() - 1)
                    + " of fabric " + name + "; pick an address in range or recreate the fabric with more nodes");
        }
    }

    long stateWord(int address) {
        return (long) LONG.getVolatile(mem, nodeOffset(address) + N_STATE);
    }

    static int state(long word) {
        return (int) word;
    }

    /** Whether the word's state is one of the four a node can write (docs/fabric-layout.md 5.2); else it is foreign bytes. */
    static boolean validState(long word) {
        int s = state(word);
        return s >= STATE_FREE && s <= STATE_RECLAIMING;
    }

    static int generation(long word) {
        return (int) (word >>> 32);
    }

    static long word(int state, int generation) {
        return ((long) generation << 32) | (state & 0xFFFFFFFFL);
    }

    /** The membership epoch (docs/fabric-layout.md 8): it moves after every change of a state word. */
    long epoch() {
        return (long) LONG.getVolatile(mem, H_EPOCH);
    }

    void bumpEpoch() {
        LONG.getAndAdd(mem, H_EPOCH, 1L);
    }

    long heartbeat(int address) {
        return (long) LONG.getAcquire(mem, nodeOffset(address) + N_HEARTBEAT);
    }

    /** True only when the node claims this host and its process no longer exists. */
    boolean provablyDead(int address) {
        long node = nodeOffset(address);
        long host = (long) LONG.getAcquire(mem, node + N_HOST_ID);
        long pid = (long) LONG.getAcquire(mem, node + N_PID);
        return HOST_ID != 0 && host == HOST_ID && pid > 0 && !running(pid);
    }

    boolean provablyAlive(int address) {
        long node = nodeOffset(address);
        long host = (long) LONG.getAcquire(mem, node + N_HOST_ID);
        long pid = (long) LONG.getAcquire(mem, node + N_PID);
        return HOST_ID != 0 && host == HOST_ID && pid > 0 && running(pid);
    }

    /**
     * Whether process {@code pid} still runs: a zombie (killed, not yet reaped by its parent) counts as alive to
     * ProcessHandle but runs no code and holds nothing, so state Z in /proc/PID/stat (proc(5), third field) is dead.
     */
    static boolean running(long pid) {
        if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            return false;
        }
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc", Long.toString(pid), "stat"));
            int close = stat.lastIndexOf(')'); // the command name in parentheses may itself hold spaces and parentheses
            return close < 0 || close + 2 >= stat.length() || stat.charAt(close + 2) != 'Z';
        } catch (java.io.IOException | RuntimeException e) {
            return true; // no /proc to look at: as ProcessHandle says
        }
    }

    /** Attaches as node {@code address}; waits at most one heartbeat timeout to tell a dead holder from a live one. */
    public FabricNode attach(int address) {
        requireWritable();
        checkAddress(address);
        long node = nodeOffset(address);
        long deadline = System.nanoTime() + geometry.heartbeatTimeoutNs() + geometry.heartbeatPeriodNs();
        long seenBeat = Long.MIN_VALUE;
        while (true) {
            long w = stateWord(address);
            if (state(w) == STATE_FREE) {
                int gen = generation(w) + 1;
                if (LONG.compareAndSet(mem, node + N_STATE, w, word(STATE_JOINING, gen))) {
                    return new FabricNode(this, address, gen);
                }
                continue;
            }
            // A RECLAIMING entry carries the dead node's pid: leave it to its reclaimer unless that one stalls too.
            if (state(w) != STATE_RECLAIMING && provablyDead(address)) {
                reclaim(address, w);
                continue;
            }
            long beat = heartbeat(address);
            if (provablyAlive(address) || (seenBeat != Long.MIN_VALUE && beat != seenBeat)) {
                throw new FabricException("node address " + address + " of fabric " + name + " is taken by a live node (pid "
                        + mem.get(ValueLayout.JAVA_LONG, node + N_PID) + ", generation " + generation(w)
                        + "); choose another address or stop that node");
            }
            seenBeat = beat;
            if (System.nanoTime() > deadline) {
                reclaim(address, w); // its heartbeat stood still for a whole timeout
                continue;
            }
            sleepMillis(Math.max(1, geometry.heartbeatPeriodNs() / 2_000_000));
        }
    }

    /** Attaches at the lowest free address. */
    public FabricNode attachAny() {
        return attachAny(false);
    }

    /**
     * As {@link #attachAny()}, searching from the highest address down when {@code fromTop}: for nodes that
     * need no address of the fabric's plan (a node's extra event loops), leaving the low ones to nodes started
     * at an address they were given.
     */
    public FabricNode attachAny(boolean fromTop) {
        int n = geometry.maxNodes();
        for (int i = 0; i < n; i++) {
            int a = fromTop ? n - 1 - i : i;
            if (state(stateWord(a)) == STATE_FREE) {
                try {
                    return attach(a);
                } catch (FabricException e) {
                    // lost a race for this address; try the next
                }
            }
        }
        throw new FabricException("fabric " + name + " has no free node address (all " + geometry.maxNodes()
                + " taken); detach a node or recreate the fabric with more nodes");
    }

    /**
     * Takes back a dead node's rings and windows. Exactly one reclaimer wins the CAS from the word it
     * saw; the address then becomes FREE with its generation kept, so a rejoin gets the next one.
     */
    boolean reclaim(int address, long expectedWord) {
        long node = nodeOffset(address);
        int gen = generation(expectedWord);
        if (!LONG.compareAndSet(mem, node + N_STATE, expectedWord, word(STATE_RECLAIMING, gen))) {
            return false;
        }
        for (int r = 0; r < geometry.ringsPerNode(); r++) {
            long dropped = Ring.drain(mem, ringOffset(address, r));
            LONG.getAndAdd(mem, node + N_DISCARDED, dropped);
        }
        freeWindowsOf(address, gen);
        LONG.compareAndSet(mem, H_LOCK, lockValue(address, gen), 0L);
        LONG.setRelease(mem, node + N_ATTR_VERSION, 0L);
        INT.setRelease(mem, node + N_ARMED, 0);
        // A CAS, not a store: a second reclaimer that took over a stuck RECLAIMING entry may have finished first.
        LONG.compareAndSet(mem, node + N_STATE, word(STATE_RECLAIMING, gen), word(STATE_FREE, gen));
        bumpEpoch();
        return true;
    }

    // ---- the control-plane lock -------------------------------------------------------------

    static long lockValue(int address, int generation) {
        return ((long) generation << 32) | (address + 1L);
    }

    void lock(int address, int generation) {
        long mine = lockValue(address, generation);
        long deadline = System.nanoTime() + 5_000_000_000L;
        for (int spins = 0; ; spins++) {
            long held = (long) LONG.getVolatile(mem, H_LOCK);
            if (held == 0 && LONG.compareAndSet(mem, H_LOCK, 0L, mine)) {
                return;
            }
            if (held != 0) {
                int holder = (int) (held & 0xFFFFFFFFL) - 1;
                long w = holder >= 0 && holder < geometry.maxNodes() ? stateWord(holder) : 0;
                if (state(w) != STATE_UP || generation(w) != (int) (held >>> 32)) {
                    LONG.compareAndSet(mem, H_LOCK, held, 0L); // its holder is gone
                    continue;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new FabricException("fabric " + name + ": control lock held by node "
                        + ((held & 0xFFFFFFFFL) - 1) + " for more than 5 s; is that node hung?");
            }
            if (spins < 100) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
    }

    void unlock(int address, int generation) {
        LONG.compareAndSet(mem, H_LOCK, lockValue(address, generation), 0L);
    }

    // ---- windows ---------------------------------------------------------------------------

    long windowEntry(int id) {
        return windowTable + (long) id * WINDOW_ENTRY;
    }

    FabricWindow exportWindow(int owner, int ownerGen, long bytes, int access) {
        if (bytes <= 0) {
            throw new FabricException("window size must be positive, was " + bytes);
        }
        if ((access & ~(FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE | FabricWindow.DIRECTORY | FabricWindow.COUNTERS
                | FabricWindow.WORK_RING)) != 0) {
            throw new FabricException("window access flags 0x" + Integer.toHexString(access)
                    + " are unknown; use FabricWindow.REMOTE_READ, REMOTE_WRITE, DIRECTORY, COUNTERS and/or WORK_RING");
        }
        long size = align(bytes, PAGE);
        lock(owner, ownerGen);
        try {
            int free = -1;
            List<long[]> used = new ArrayList<>();
            for (int id = 0; id < geometry.maxWindows(); id++) {
                long e = windowEntry(id);
                if (activeAndSane(e)) {
                    used.add(new long[] {mem.get(ValueLayout.JAVA_LONG, e + W_OFFSET), mem.get(ValueLayout.JAVA_LONG, e + W_LENGTH)});
                    continue;
                }
                if ((int) INT.getAcquire(mem, e + W_STATE) == WINDOW_ACTIVE) {
                    // Active with fields no exporter writes, seen under the lock (no export is half-written): foreign bytes.
                    mem.set(ValueLayout.JAVA_INT, e + W_KEY, 0);
                    INT.setRelease(mem, e + W_STATE, WINDOW_FREE);
                }
                if (free < 0) {
                    free = id;
                }
            }
            if ((access & FabricWindow.DIRECTORY) != 0 && findDirectory(owner) >= 0) {
                throw new FabricException("node " + owner + " already exports a directory window; close it before exporting another");
            }
            if (free < 0) {
                throw new FabricException("fabric " + name + " has no free window entry (all " + geometry.maxWindows()
                        + " in use); close windows or recreate the fabric with more");
            }
            used.sort(Comparator.comparingLong(r -> r[0]));
            long at = 0;
            for (long[] r : used) {
                if (r[0] - at >= size) {
                    break;
                }
                at = Math.max(at, r[0] + r[1]);
            }
            if (geometry.windowBytes() - at < size) {
                throw new FabricException("fabric " + name + " has no " + size + " contiguous bytes of window space left (of "
                        + geometry.windowBytes() + "); close windows or recreate the fabric with more window space");
            }
            int key = keys.nextInt() | 1; // never 0, so a zeroed entry never matches
            long e = windowEntry(free);
            mem.set(ValueLayout.JAVA_INT, e + W_OWNER, owner);
            mem.set(ValueLayout.JAVA_INT, e + W_OWNER_GEN, ownerGen);
            mem.set(ValueLayout.JAVA_INT, e + W_KEY, key);
            mem.set(ValueLayout.JAVA_LONG, e + W_OFFSET, at);
            mem.set(ValueLayout.JAVA_LONG, e + W_LENGTH, size);
            mem.set(ValueLayout.JAVA_INT, e + W_ACCESS, access);
            MemorySegment region = mem.asSlice(windowArea + at, size);
            region.fill((byte) 0); // a new window never shows an old owner's bytes
            INT.setRelease(mem, e + W_STATE, WINDOW_ACTIVE);
            return new FabricWindow(this, free, key, owner, ownerGen, access, region, true);
        } finally {
            unlock(owner, ownerGen);
        }
    }

    /**
     * Whether window entry {@code e}'s owner, offset and length are ones an exporter writes (9.3): an owner in range,
     * page-aligned bounds inside the window area. Else the entry is foreign bytes: it is neither opened nor counted
     * as used space, and its range is never followed.
     */
    boolean windowSane(long e) {
        int owner = mem.get(ValueLayout.JAVA_INT, e + W_OWNER);
        long offset = mem.get(ValueLayout.JAVA_LONG, e + W_OFFSET);
        long length = mem.get(ValueLayout.JAVA_LONG, e + W_LENGTH);
        return owner >= 0 && owner < geometry.maxNodes() && offset >= 0 && length > 0 && offset % PAGE == 0
                && length % PAGE == 0 && length <= geometry.windowBytes() && offset <= geometry.windowBytes() - length;
    }

    /** Active window entries found with foreign bytes ({@link #windowSane}): counted where a scan met them. */
    private final java.util.concurrent.atomic.AtomicLong corruptWindows = new java.util.concurrent.atomic.AtomicLong();

    public long corruptWindowEntries() {
        return corruptWindows.get();
    }

    private boolean activeAndSane(long e) {
        if ((int) INT.getAcquire(mem, e + W_STATE) != WINDOW_ACTIVE) {
            return false;
        }
        if (!windowSane(e)) {
            corruptWindows.incrementAndGet();
            return false;
        }
        return true;
    }

    FabricWindow openWindow(int id, int key) {
        if (id < 0 || id >= geometry.maxWindows()) {
            throw new FabricException("window id " + id + " is outside 0.." + (geometry.maxWindows() - 1));
        }
        long e = windowEntry(id);
        if ((int) INT.getAcquire(mem, e + W_STATE) != WINDOW_ACTIVE || mem.get(ValueLayout.JAVA_INT, e + W_KEY) != key) {
            throw new FabricException("window " + id + " with key 0x" + Integer.toHexString(key)
                    + " is not exported (closed, reclaimed, or a stale key); ask its owner for a fresh id and key");
        }
        if (!windowSane(e)) {
            corruptWindows.incrementAndGet();
            throw new FabricException("window " + id + " of fabric " + name + " holds an owner or a range no exporter writes"
                    + " (foreign bytes in the window table); its owner must export it again");
        }
        int owner = mem.get(ValueLayout.JAVA_INT, e + W_OWNER);
        int ownerGen = mem.get(ValueLayout.JAVA_INT, e + W_OWNER_GEN);
        int access = mem.get(ValueLayout.JAVA_INT, e + W_ACCESS);
        if ((access & (FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE)) == 0) {
            throw new FabricException("window " + id + " grants no remote access; its owner must export it with REMOTE_READ or REMOTE_WRITE");
        }
        MemorySegment region = mem.asSlice(windowArea + mem.get(ValueLayout.JAVA_LONG, e + W_OFFSET),
                mem.get(ValueLayout.JAVA_LONG, e + W_LENGTH));
        if ((access & FabricWindow.REMOTE_WRITE) == 0) {
            region = region.asReadOnly();
        }
        return new FabricWindow(this, id, key, owner, ownerGen, access, region, false);
    }

    /** The id of the active DIRECTORY window of {@code owner}'s current generation, or -1. */
    int findDirectory(int owner) {
        long state = stateWord(owner);
        for (int id = 0; id < geometry.maxWindows(); id++) {
            long e = windowEntry(id);
            if ((int) INT.getAcquire(mem, e + W_STATE) == WINDOW_ACTIVE && mem.get(ValueLayout.JAVA_INT, e + W_OWNER) == owner
                    && (mem.get(ValueLayout.JAVA_INT, e + W_ACCESS) & FabricWindow.DIRECTORY) != 0
                    && state == word(STATE_UP, mem.get(ValueLayout.JAVA_INT, e + W_OWNER_GEN))) {
                return id;
            }
        }
        return -1;
    }

    /** Opens {@code owner}'s directory window, or returns null if it exports none. */
    FabricWindow openDirectory(int owner) {
        checkAddress(owner);
        int id = findDirectory(owner);
        if (id < 0) {
            return null;
        }
        try {
            return openWindow(id, mem.get(ValueLayout.JAVA_INT, windowEntry(id) + W_KEY));
        } catch (FabricException e) {
            return null; // withdrawn between the scan and the open
        }
    }

    /**
     * Opens every active window of {@code owner}'s current generation whose access has all of {@code access}'s bits, in
     * id order (how peers find windows of a kind that a node may export several of, such as work rings).
     */
    List<FabricWindow> openWindowsOf(int owner, int access) {
        checkAddress(owner);
        long state = stateWord(owner);
        List<FabricWindow> out = new ArrayList<>();
        for (int id = 0; id < geometry.maxWindows(); id++) {
            long e = windowEntry(id);
            if ((int) INT.getAcquire(mem, e + W_STATE) == WINDOW_ACTIVE && mem.get(ValueLayout.JAVA_INT, e + W_OWNER) == owner
                    && (mem.get(ValueLayout.JAVA_INT, e + W_ACCESS) & access) == access
                    && state == word(STATE_UP, mem.get(ValueLayout.JAVA_INT, e + W_OWNER_GEN))) {
                try {
                    out.add(openWindow(id, mem.get(ValueLayout.JAVA_INT, e + W_KEY)));
                } catch (FabricException gone) {
                    // withdrawn between the scan and the open
                }
            }
        }
        return out;
    }

    boolean windowValid(int id, int key, int owner) {
        long e = windowEntry(id);
        if ((int) INT.getAcquire(mem, e + W_STATE) != WINDOW_ACTIVE || mem.get(ValueLayout.JAVA_INT, e + W_KEY) != key) {
            return false;
        }
        return stateWord(owner) == word(STATE_UP, mem.get(ValueLayout.JAVA_INT, e + W_OWNER_GEN));
    }

    void freeWindow(int id, int key) {
        if (lost) {
            return;
        }
        long e = windowEntry(id);
        if (mem.get(ValueLayout.JAVA_INT, e + W_KEY) == key) {
            mem.set(ValueLayout.JAVA_INT, e + W_KEY, 0);
            INT.setRelease(mem, e + W_STATE, WINDOW_FREE);
        }
    }

    private void freeWindowsOf(int address, int generation) {
        for (int id = 0; id < geometry.maxWindows(); id++) {
            long e = windowEntry(id);
            if ((int) INT.getAcquire(mem, e + W_STATE) == WINDOW_ACTIVE && mem.get(ValueLayout.JAVA_INT, e + W_OWNER) == address
                    && mem.get(ValueLayout.JAVA_INT, e + W_OWNER_GEN) == generation) {
                mem.set(ValueLayout.JAVA_INT, e + W_KEY, 0);
                INT.setRelease(mem, e + W_STATE, WINDOW_FREE);
            }
        }
    }

    // ---- snapshots for tools ---------------------------------------------------------------

    public List<NodeInfo> nodes() {
        List<NodeInfo> out = new ArrayList<>();
        for (int a = 0; a < geometry.maxNodes(); a++) {
            long w = stateWord(a);
            long node = nodeOffset(a);
            if ((state(w) == STATE_FREE && generation(w) == 0) || !validState(w)) {
                continue; // never used, or foreign bytes (corruptEntries): absent, never a source of numbers
            }
            long occupancy = 0;
            for (int r = 0; r < geometry.ringsPerNode(); r++) {
                occupancy += Ring.occupancy(mem, ringOffset(a, r));
            }
            out.add(new NodeInfo(a, stateName(state(w)), generation(w), mem.get(ValueLayout.JAVA_LONG, node + N_PID),
                    heartbeat(a), mem.get(ValueLayout.JAVA_LONG, node + N_JOINED_MILLIS), occupancy, counters(a)));
        }
        return out;
    }

    /** Node addresses whose table entry holds a state no node writes (foreign bytes): absent to every reader. */
    public List<Integer> corruptEntries() {
        List<Integer> out = new ArrayList<>();
        for (int a = 0; a < geometry.maxNodes(); a++) {
            if (!validState(stateWord(a))) {
                out.add(a);
            }
        }
        return out;
    }

    public List<WindowInfo> windows() {
        List<WindowInfo> out = new ArrayList<>();
        for (int id = 0; id < geometry.maxWindows(); id++) {
            long e = windowEntry(id);
            if (activeAndSane(e)) {
                out.add(new WindowInfo(id, mem.get(ValueLayout.JAVA_INT, e + W_OWNER), mem.get(ValueLayout.JAVA_INT, e + W_OWNER_GEN),
                        mem.get(ValueLayout.JAVA_LONG, e + W_OFFSET), mem.get(ValueLayout.JAVA_LONG, e + W_LENGTH),
                        mem.get(ValueLayout.JAVA_INT, e + W_ACCESS)));
            }
        }
        return out;
    }

    /** A {@link CounterTable} a node published: its owner, title and counters. */
    public record PublishedCounters(int owner, String title, Map<String, Long> counters) {
    }

    /** The counter tables the nodes publish in {@link FabricWindow#COUNTERS} windows (a gateway's, for one). */
    public List<PublishedCounters> publishedCounters() {
        List<PublishedCounters> out = new ArrayList<>();
        for (WindowInfo w : windows()) {
            if ((w.access() & FabricWindow.COUNTERS) != 0) {
                MemorySegment m = mem.asSlice(windowArea + w.offset(), w.length());
                String title = CounterTable.title(m);
                if (title != null) {
                    out.add(new PublishedCounters(w.owner(), title, CounterTable.read(m)));
                }
            }
        }
        return out;
    }

    public FabricCounters counters(int address) {
        checkAddress(address);
        long n = nodeOffset(address);
        return new FabricCounters(c(n + N_FRAMES_SENT), c(n + N_BYTES_SENT), c(n + N_BACK_PRESSURED), c(n + N_PEER_DOWN),
                c(n + N_LATE_DROPS), c(n + N_FRAMES_RECEIVED), c(n + N_BYTES_RECEIVED), c(n + N_STALL_SKIPS),
                c(n + N_WAKEUPS), c(n + N_DISCARDED), c(n + N_HANDLER_ERRORS), c(n + N_CORRUPT), c(n + N_INTERRUPTS_SENT),
                c(n + N_INTERRUPTS_RECEIVED));
    }

    private long c(long offset) {
        return (long) LONG.getOpaque(mem, offset);
    }

    static String stateName(int state) {
        return switch (state) {
            case STATE_FREE -> "FREE";
            case STATE_JOINING -> "JOINING";
            case STATE_UP -> "UP";
            case STATE_RECLAIMING -> "RECLAIMING";
            default -> "UNKNOWN(" + state + ")";
        };
    }

    private void requireWritable() {
        if (!writable) {
            throw new FabricException("fabric " + name + " was opened read-only; open it for writing to attach a node");
        }
    }

    static void sleepMillis(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FabricException("interrupted while waiting on fabric", e);
        }
    }

    /** A stable id of this boot of this host, so a node can tell a peer's pid is its own host's. */
    private static long readHostId() {
        try {
            String boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
            long h = 0xcbf29ce484222325L;
            for (int i = 0; i < boot.length(); i++) {
                h = (h ^ boot.charAt(i)) * 0x100000001b3L;
            }
            return h == 0 ? 1 : h;
        } catch (IOException | RuntimeException e) {
            return 0; // unknown host: liveness falls back to heartbeats alone
        }
    }

    /** Unmaps the fabric. Nodes attached through this mapping must be closed first. */
    @Override
    public void close() {
        if (arena != null) {
            arena.close();
        }
        if (vfio != null) {
            vfio.close();
        }
    }
}
