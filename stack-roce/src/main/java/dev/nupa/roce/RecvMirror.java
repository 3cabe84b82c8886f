package dev.nupa.roce;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricException;
import dev.nupa.device.FabricWindow;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The receive queue of a {@link TransferMode#DIRECT} RC QP as the peer's requester sees it: a fabric
 * window its owner exports, one slot per receive-queue slot (docs/rdma.md, "Direct SEND"). The owner
 * writes each posted receive's scatter list into its slot and stamps the slot with the receive's
 * position; the peer's requester, finding the next receive posted, places a SEND's payload in its buffer
 * (after the responder's checks, made against the owner's directory) and stamps the slot done with the
 * length, immediate data and flags; the owner completes the receive when it sees that stamp. Receives the
 * owner takes for packet SENDs are counted in the header, so both sides agree on which receive is next.
 *
 * <pre>
 * 0   u64 packetTaken  receives the owner gave to packet SENDs (owner, release)
 * 8   u64 incarnation  +1 each time the owner's queue restarts (RESET): the requester's count starts over
 * 16  u32 slots        24 u32 maxSge
 * 64  slot[slots], {@link #slotBytes} each, 64-byte aligned:
 *     0  u64 posted   position + 1 of the receive posted in this slot (owner, release after the list)
 *     8  u64 done     position + 1 once a SEND was placed in it (requester, release after the fields below)
 *     16 u32 byteLen  20 u32 imm  24 u32 flags (1 immediate data, 2 solicited)  28 u32 numSge (owner)
 *     32 entry[maxSge], 16 bytes: u64 addr, u32 length, u32 lkey
 * </pre>
 * A slot is reused only after its owner completed the receive in it, so owner and requester never write
 * one at the same time. Host byte order: the fabric joins processes of one host.
 */
final class RecvMirror {
    static final int WITH_IMM = 1;
    static final int SOLICITED = 2;
    private static final long PACKET_TAKEN = 0;
    private static final long INCARNATION = 8;
    private static final long SLOTS = 16;
    private static final long MAX_SGE = 24;
    private static final int HEADER = 64;
    private static final long POSTED = 0;
    private static final long DONE = 8;
    private static final long BYTE_LEN = 16;
    private static final long IMM = 20;
    private static final long FLAGS = 24;
    private static final long NUM_SGE = 28;
    private static final long ENTRIES = 32;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    final FabricWindow window;
    final MemorySegment mem;
    final int slots;
    final int maxSge;
    private final long mask;
    private final long slotBytes;

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
        if (m.byteSize() < HEADER) {
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
        mem.set(ValueLayout.JAVA_INT, s + NUM_SGE, wr.sg.count);
        for (int i = 0; i < wr.sg.count; i++) {
            long e = s + ENTRIES + 16L * i;
            mem.set(ValueLayout.JAVA_LONG, e, wr.sg.addr[i]);
            mem.set(ValueLayout.JAVA_INT, e + 8, wr.sg.length[i]);
            mem.set(ValueLayout.JAVA_INT, e + 12, wr.sg.lkey[i]);
        }
        LONG.setRelease(mem, s + POSTED, position + 1);
    }

    /** The owner gave the next receive to a packet SEND (before it acknowledges that SEND). */
    void takenByPacket() {
        LONG.setRelease(mem, PACKET_TAKEN, (long) LONG.get(mem, PACKET_TAKEN) + 1);
    }

    /** Whether a SEND was placed in the receive at {@code position}. */
    boolean placed(long position) {
        return (long) LONG.getAcquire(mem, slot(position) + DONE) == position + 1;
    }

    int byteLen(long position) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + BYTE_LEN);
    }

    int imm(long position) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + IMM);
    }

    int flags(long position) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + FLAGS);
    }

    /** The queue starts over (RESET): every stamp is cleared and requesters restart their count. */
    void restart() {
        mem.asSlice(HEADER, slots * slotBytes).fill((byte) 0);
        LONG.setRelease(mem, PACKET_TAKEN, 0L);
        LONG.setRelease(mem, INCARNATION, (long) LONG.get(mem, INCARNATION) + 1);
    }

    // ---- requester -------------------------------------------------------------------------

    long packetTaken() {
        return (long) LONG.getAcquire(mem, PACKET_TAKEN);
    }

    long incarnation() {
        return (long) LONG.getAcquire(mem, INCARNATION);
    }

    /** Whether the receive at {@code position} is posted (its list may then be read). */
    boolean posted(long position) {
        return (long) LONG.getAcquire(mem, slot(position) + POSTED) == position + 1;
    }

    int numSge(long position) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + NUM_SGE);
    }

    long addr(long position, int i) {
        return mem.get(ValueLayout.JAVA_LONG, slot(position) + ENTRIES + 16L * i);
    }

    int length(long position, int i) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + ENTRIES + 16L * i + 8);
    }

    int lkey(long position, int i) {
        return mem.get(ValueLayout.JAVA_INT, slot(position) + ENTRIES + 16L * i + 12);
    }

    /** Marks the receive at {@code position} filled: its fields, then the stamp (release). */
    void stamp(long position, int byteLen, int imm, int flags) {
        long s = slot(position);
        mem.set(ValueLayout.JAVA_INT, s + BYTE_LEN, byteLen);
        mem.set(ValueLayout.JAVA_INT, s + IMM, imm);
        mem.set(ValueLayout.JAVA_INT, s + FLAGS, flags);
        LONG.setRelease(mem, s + DONE, position + 1);
    }
}
