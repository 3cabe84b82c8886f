package dev.nupa.roce.transport;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricException;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The receive queue of a {@link TransferMode#DIRECT} RC QP as the peer's requester sees it: a fabric
 * window its owner exports, one slot per receive-queue slot (docs/rdma.md, "Direct SEND"). The owner
 * writes each posted receive's scatter list into its slot and stamps the slot posted; the peer's
 * requester claims the next receive by moving the header's {@code next} position with a CAS, places a
 * SEND's payload in its buffer (after the responder's checks, made against the owner's directory) and
 * stamps the slot done with the length, immediate data and flags; the owner completes the receive when
 * it sees that stamp. The owner takes receives for packet SENDs by moving {@code next} the same way, so a
 * receive goes to exactly one message whichever path it comes by.
 *
 * <pre>
 * 0   u64 next         incarnation << 40 | position of the next receive to consume; bit 62 CLOSED: no direct
 *                      SENDs (the owner is in ERR or gone). The incarnation moves each time the owner's queue
 *                      restarts (RESET), so a claim or stamp made for an earlier one never matches.
 * 72  u32 slots        76 u32 maxSge
 * 128 slot[slots], {@link #slotBytes} each, 64-byte aligned:
 *     0  u64 posted   tag of the receive posted in this slot (owner, release after the list)
 *     8  u64 done     tag once a SEND was placed in it (requester, release after the fields below)
 *     16 u32 byteLen  20 u32 imm  24 u32 flags (1 immediate data, 2 solicited)  28 u32 numSge (owner)
 *     32 entry[maxSge], 16 bytes: u64 addr, u32 length, u32 lkey
 * </pre>
 * A tag is {@code incarnation << 40 | position + 1}, so a late stamp from before a RESET never completes a
 * receive of the new incarnation. A slot is reused only after its owner completed the receive in it.
 * Host byte order: the fabric joins processes of one host.
 */
final class RecvMirror {
    static final int WITH_IMM = 1;
    static final int SOLICITED = 2;
    static final long CLOSED = 1L << 62;
    private static final long NEXT = 0;
    private static final long SLOTS = 72;
    private static final long MAX_SGE = 76;
    private static final int HEADER = 128;
    private static final long POSTED = 0;
    private static final long DONE = 8;
    private static final long BYTE_LEN = 16;
    private static final long IMM = 20;
    private static final long FLAGS = 24;
    private static final long NUM_SGE = 28;
    private static final long ENTRIES = 32;
    private static final long POSITION_BITS = 40;
    static final long POSITION_MASK = (1L << POSITION_BITS) - 1;
    private static final long INCARNATION_MASK = (1L << (62 - POSITION_BITS)) - 1;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    final FabricWindow window;
    final MemorySegment mem;
    final int slots;
    final int maxSge;
    private final long mask;
    private final long slotBytes;
    /** The owner's incarnation (owner side only). */
    private long incarnation;

    private RecvMirror(FabricWindow window, int slots, int maxSge) {
        this.window = window;
        this.mem = window.memory();
        this.slots = slots;
        this.maxSge = maxSge;
        this.mask = slots - 1;
        this.slotBytes = slotBytes(maxSge);
    }

    static long slotBytes(int maxSge) {
        return (ENTRIES + 16L * maxSge + 63) & ~63L;
    }

    static long bytes(int slots, int maxSge) {
        return HEADER + slots * slotBytes(maxSge);
    }

    static long tag(long incarnation, long position) {
        return incarnation << POSITION_BITS | (position + 1);
    }

    /**
     * The owner's side: exports the window for a queue of {@code slots} (a power of two) receives of
     * {@code maxSge} entries, or returns null when the fabric has no window space left (the QP's SENDs
     * then arrive as packets, which is slower but the same to the application).
     */
    static RecvMirror export(FabricDevice device, int slots, int maxSge) {
        FabricWindow w;
        try {
            w = device.exportWindow(bytes(slots, maxSge), FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE);
        } catch (FabricException e) {
            return null;
        }
        RecvMirror m = new RecvMirror(w, slots, maxSge);
        m.mem.asSlice(0, bytes(slots, maxSge)).fill((byte) 0); // a window's space may have held another's data
        m.mem.set(ValueLayout.JAVA_INT, SLOTS, slots);
        m.mem.set(ValueLayout.JAVA_INT, MAX_SGE, maxSge);
        return m;
    }

    /** The requester's side: a view of the peer's window, or null unless it holds a mirror. */
    static RecvMirror open(FabricWindow w) {
        MemorySegment m = w.memory();
        if (m.byteSize() < HEADER || (w.access() & FabricWindow.REMOTE_WRITE) == 0) {
            return null;
        }
        int slots = m.get(ValueLayout.JAVA_INT, SLOTS);
        int maxSge = m.get(ValueLayout.JAVA_INT, MAX_SGE);
        if (slots <= 0 || Integer.bitCount(slots) != 1 || maxSge < 1 || maxSge > 64 || bytes(slots, maxSge) > m.byteSize()) {
            return null;
        }
        return new RecvMirror(w, slots, maxSge);
    }

    private long slot(long position) {
        return HEADER + (position & mask) * slotBytes;
    }

    // ---- owner -----------------------------------------------------------------------------

    /** Publishes the receive posted at {@code position}. */
    void post(long position, RecvWorkRequest wr) {
        long s = slot(position);
        mem.set(ValueLayout.JAVA_INT, s + NUM_SGE, wr.sg.count());
        for (int i = 0; i < wr.sg.count(); i++) {
            long e = s + ENTRIES + 16L * i;
            mem.set(ValueLayout.JAVA_LONG, e, wr.sg.addr(i));
            mem.set(ValueLayout.JAVA_LONG, e + 8, pair(wr.sg.length(i), wr.sg.lkey(i))); // length and lkey in one store
        }
        LONG.setRelease(mem, s + POSTED, tag(incarnation, position));
    }

    /**
     * Takes the receive at {@code position} (the queue's head) for a packet SEND. False when a requester
     * claimed it for a direct SEND not yet stamped: the packet must wait (an RNR NAK), as it would for a
     * receive not yet posted.
     */
    boolean takeForPacket(long position) {
        long n = incarnation << POSITION_BITS | position;
        return LONG.compareAndSet(mem, NEXT, n, n + 1);
    }

    /** Whether a SEND was placed in the receive at {@code position}. */
    boolean placed(long position) {
        return (long) LONG.getAcquire(mem, slot(position) + DONE) == tag(incarnation, position);
    }

    /** A placed SEND's byteLen and imm in one load: {@link #lower} and {@link #upper} take them apart. */
    long byteLenAndImm(long position) {
        return mem.get(ValueLayout.JAVA_LONG, slot(position) + BYTE_LEN);
    }

    int flags(long position) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + FLAGS);
    }

    /** No more direct SENDs (ERR, destroy): a requester's claim fails from now on. */
    void close() {
        LONG.getAndBitwiseOr(mem, NEXT, CLOSED);
    }

    /** The queue starts over (RESET): a new incarnation, position 0, open again. */
    void restart() {
        incarnation = (incarnation + 1) & INCARNATION_MASK;
        LONG.setRelease(mem, NEXT, incarnation << POSITION_BITS);
    }

    // ---- requester -------------------------------------------------------------------------

    /** The header word: {@link #incarnationOf} and {@link #positionOf} say what a requester would claim next. */
    long next() {
        return (long) LONG.getAcquire(mem, NEXT);
    }

    static long incarnationOf(long next) {
        return (next >>> POSITION_BITS) & INCARNATION_MASK;
    }

    static long positionOf(long next) {
        return next & POSITION_MASK;
    }

    /** Whether the receive at {@code position} of incarnation {@code inc} is posted (its list may then be read). */
    boolean posted(long inc, long position) {
        return (long) LONG.getAcquire(mem, slot(position) + POSTED) == tag(inc, position);
    }

    /** Claims the receive {@code next} names for a direct SEND; false if the owner (a packet, RESET, ERR) or another claim moved first. */
    boolean claim(long next) {
        return (next & CLOSED) == 0 && LONG.compareAndSet(mem, NEXT, next, next + 1);
    }

    int numSge(long position) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + NUM_SGE);
    }

    long addr(long position, int i) {
        return mem.get(ValueLayout.JAVA_LONG, slot(position) + ENTRIES + 16L * i);
    }

    /** Entry {@code i}'s length and lkey in one load: {@link #lower} is the length, {@link #upper} the lkey. */
    long lengthAndKey(long position, int i) {
        return mem.get(ValueLayout.JAVA_LONG, slot(position) + ENTRIES + 16L * i + 8);
    }

    /** Marks the claimed receive at {@code position} filled: its fields, then the stamp (release). */
    void stamp(long inc, long position, int byteLen, int imm, int flags) {
        long s = slot(position);
        mem.set(ValueLayout.JAVA_LONG, s + BYTE_LEN, pair(byteLen, imm));
        mem.set(ValueLayout.JAVA_INT, s + FLAGS, flags);
        LONG.setRelease(mem, s + DONE, tag(inc, position));
    }

    // Two adjacent u32 fields as one host-order u64 (one access instead of two on the SEND path).

    /** The u64 whose lower-addressed u32 is {@code lower} and higher-addressed u32 is {@code upper}. */
    static long pair(int lower, int upper) {
        return LITTLE ? (lower & 0xFFFF_FFFFL) | (long) upper << 32 : (upper & 0xFFFF_FFFFL) | (long) lower << 32;
    }

    /** The lower-addressed u32 of a {@link #pair}. */
    static int lower(long pair) {
        return (int) (LITTLE ? pair : pair >>> 32);
    }

    /** The higher-addressed u32 of a {@link #pair}. */
    static int upper(long pair) {
        return (int) (LITTLE ? pair >>> 32 : pair);
    }
}
