package dev.nupa.roce.ring;

import static dev.nupa.roce.ring.WorkRingLayout.*;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.verbs.RdmaException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * The poster's side of a work ring (docs/work-rings.md): a flyweight over the window a proxy exports. Any
 * number of threads or processes may {@link #post} (each claims its slot with a CAS); one consumer at a time
 * may {@link #poll} the completions. Posting and polling allocate nothing and make no system call; the
 * proxy finds new work by polling.
 */
public final class WorkRing implements AutoCloseable {
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final FabricWindow window;
    /** The poster's own device, for the proxy's doorbell; null for a ring wrapped with {@link #of}. */
    private final FabricDevice device;
    private final MemorySegment mem;
    private final int index;
    private final int sqEntries;
    private final int cqEntries;
    private final long cqOffset;
    private final long dataOffset;
    private final long dataLength;
    /** Empty polls between two checks that the proxy still serves the ring. */
    private static final int SERVED_CHECK_EVERY = 1024;
    private int emptyPolls;
    /** The proxy's sq_head as last read: a lower bound, so a claim below it plus the ring's size fits. */
    private long knownHead;

    private WorkRing(FabricWindow window, FabricDevice device) {
        this.window = window;
        this.device = device;
        this.mem = window.memory();
        if (mem.get(ValueLayout.JAVA_INT, H_MAGIC) != MAGIC || Short.toUnsignedInt(mem.get(ValueLayout.JAVA_SHORT, H_VERSION)) != VERSION) {
            throw new RdmaException("window " + window.id() + " of node " + window.owner() + " is not a version " + VERSION
                    + " work ring; update the poster or the proxy so that both speak the same version");
        }
        this.index = Short.toUnsignedInt(mem.get(ValueLayout.JAVA_SHORT, H_RING_INDEX));
        this.sqEntries = mem.get(ValueLayout.JAVA_INT, H_SQ_ENTRIES);
        this.cqEntries = mem.get(ValueLayout.JAVA_INT, H_CQ_ENTRIES);
        this.cqOffset = WorkRingLayout.cqOffset(sqEntries);
        this.dataOffset = mem.get(ValueLayout.JAVA_LONG, H_DATA_OFFSET);
        this.dataLength = mem.get(ValueLayout.JAVA_LONG, H_DATA_LENGTH);
    }

    /** Wraps a ring window the caller opened (the proxy's own window, in tests). */
    public static WorkRing of(FabricWindow window) {
        return new WorkRing(window, null);
    }

    /**
     * Opens ring {@code index} of the proxy at fabric address {@code owner}. Throws RdmaException naming the rings
     * there are when that node serves no such ring (yet: a proxy exports its rings once each has connected).
     */
    public static WorkRing open(FabricDevice device, int owner, int index) {
        List<FabricWindow> windows = device.openWindowsOf(owner, FabricWindow.WORK_RING);
        WorkRing found = null;
        StringBuilder seen = new StringBuilder();
        for (FabricWindow w : windows) {
            int i = w.length() >= HEADER_BYTES ? Short.toUnsignedInt(w.memory().get(ValueLayout.JAVA_SHORT, H_RING_INDEX)) : -1;
            if (i == index && found == null) {
                found = new WorkRing(w, device);
            } else {
                seen.append(seen.isEmpty() ? "" : ", ").append(i);
                w.close();
            }
        }
        if (found == null) {
            throw new RdmaException("node " + owner + " serves no work ring " + index + (seen.isEmpty() ? " (it serves none)"
                    : " (it serves " + seen + ")") + "; start a proxy there (nupa node --proxy ...) or pick one it serves");
        }
        return found;
    }

    public int index() {
        return index;
    }

    public int sqEntries() {
        return sqEntries;
    }

    public int cqEntries() {
        return cqEntries;
    }

    public int windowId() {
        return window.id();
    }

    public int windowKey() {
        return window.key();
    }

    /** The data area: where a poster puts what its WRITEs and SENDs carry (the local window is this window). */
    public MemorySegment data() {
        return mem.asSlice(dataOffset, dataLength);
    }

    /** The offset of the data area in the window: local offsets of WQEs that name this window count from the window's start. */
    public long dataOffset() {
        return dataOffset;
    }

    public long remoteAddr() {
        return mem.get(ValueLayout.JAVA_LONG, H_REMOTE_ADDR);
    }

    public long remoteLength() {
        return mem.get(ValueLayout.JAVA_LONG, H_REMOTE_LENGTH);
    }

    public int remoteKey() {
        return mem.get(ValueLayout.JAVA_INT, H_REMOTE_KEY);
    }

    /** {@link WorkRingLayout#READY}, {@link WorkRingLayout#ERROR} or {@link WorkRingLayout#CLOSED}. */
    public int state() {
        return (int) INT.getAcquire(mem, (long) H_STATE);
    }

    /** Whether the proxy still serves the ring: its window is exported by a live proxy and the ring is not closed. */
    public boolean isServed() {
        return window.isValid() && state() != CLOSED;
    }

    /**
     * Posts one WQE; returns its position in the submission ring, or -1 when the ring is full (the proxy has not
     * taken the WQEs {@link #sqEntries} positions back yet: poll completions and try again). Throws RdmaException when
     * the proxy no longer serves the ring. Errors in the WQE itself (a bad key, an offset out of range) come back as
     * completions.
     */
    public long post(int opcode, int flags, long wrId, int localWindow, int localKey, long localOffset, int length,
            long remoteAddr, int remoteKey, int imm) {
        long c;
        do {
            c = (long) LONG.getVolatile(mem, (long) H_SQ_CLAIM);
            if (c - knownHead >= sqEntries) {
                // Only when the ring looks full is the proxy's line read: each read moves it between CPUs.
                knownHead = (long) LONG.getAcquire(mem, (long) H_SQ_HEAD);
                if (c - knownHead >= sqEntries) {
                    requireServed();
                    return -1;
                }
            }
        } while (!LONG.compareAndSet(mem, (long) H_SQ_CLAIM, c, c + 1));
        long e = sqOffset() + (c & (sqEntries - 1)) * WQE_BYTES;
        mem.set(ValueLayout.JAVA_BYTE, e + W_VERSION, (byte) VERSION);
        mem.set(ValueLayout.JAVA_BYTE, e + W_OPCODE, (byte) opcode);
        mem.set(ValueLayout.JAVA_SHORT, e + W_FLAGS, (short) flags);
        mem.set(ValueLayout.JAVA_LONG, e + W_WR_ID, wrId);
        mem.set(ValueLayout.JAVA_INT, e + W_LOCAL_WINDOW, localWindow);
        mem.set(ValueLayout.JAVA_INT, e + W_LOCAL_KEY, localKey);
        mem.set(ValueLayout.JAVA_LONG, e + W_LOCAL_OFFSET, localOffset);
        mem.set(ValueLayout.JAVA_INT, e + W_LENGTH, length);
        mem.set(ValueLayout.JAVA_INT, e + W_IMM, imm);
        mem.set(ValueLayout.JAVA_LONG, e + W_REMOTE_ADDR, remoteAddr);
        mem.set(ValueLayout.JAVA_INT, e + W_REMOTE_KEY, remoteKey);
        INT.setRelease(mem, e + W_SEQ, (int) (c + 1)); // last: the proxy takes the slot once it sees this
        return c;
    }

    /**
     * Wakes the proxy's node if it sleeps, so that it takes what was posted now rather than at its next poll
     * ({@code --proxy-poll-us}); call it after a batch of posts. One load when the proxy is awake. A post that races
     * with the proxy going to sleep waits at most its poll interval.
     */
    public void doorbell() {
        if (device != null) {
            VarHandle.fullFence(); // the WQEs' sequence words before the look at the sleeper's armed word
            device.wake(window.owner());
        }
    }

    /**
     * Posts an RDMA WRITE of {@code length} bytes from the data area at {@code dataOffset} to the target's region at
     * {@code remoteOffset}; as {@link #post}.
     */
    public long postWrite(long wrId, long dataOffset, long remoteOffset, int length, boolean signaled) {
        return post(OP_WRITE, signaled ? F_SIGNALED : 0, wrId, window.id(), window.key(), this.dataOffset + dataOffset, length,
                remoteAddr() + remoteOffset, remoteKey(), 0);
    }

    /** Posts a SEND of {@code length} bytes from the data area at {@code dataOffset}; as {@link #post}. */
    public long postSend(long wrId, long dataOffset, int length, boolean signaled) {
        return post(OP_SEND, signaled ? F_SIGNALED : 0, wrId, window.id(), window.key(), this.dataOffset + dataOffset, length,
                0, 0, 0);
    }

    /**
     * Takes the next completion into {@code into}: 1, or 0 when none is there yet. Throws RdmaException once the proxy
     * no longer serves the ring and no completion is left (what was posted and not completed will not be); that is
     * looked at once every 1,024 empty polls.
     */
    public int poll(RingCompletion into) {
        long h = (long) LONG.getVolatile(mem, (long) H_CQ_HEAD);
        long e = cqOffset + (h & (cqEntries - 1)) * CQE_BYTES;
        if ((int) INT.getAcquire(mem, e + C_SEQ) != (int) (h + 1)) {
            if ((++emptyPolls & (SERVED_CHECK_EVERY - 1)) == 0) {
                requireServed(); // not at every empty poll: it reads the proxy's lines, which slows the proxy down
            }
            return 0;
        }
        into.status = Byte.toUnsignedInt(mem.get(ValueLayout.JAVA_BYTE, e + C_STATUS));
        into.opcode = Byte.toUnsignedInt(mem.get(ValueLayout.JAVA_BYTE, e + C_OPCODE));
        into.wrId = mem.get(ValueLayout.JAVA_LONG, e + C_WR_ID);
        into.byteLen = mem.get(ValueLayout.JAVA_INT, e + C_BYTE_LEN);
        into.sqPosition = mem.get(ValueLayout.JAVA_INT, e + C_SQ_POSITION);
        LONG.setRelease(mem, (long) H_CQ_HEAD, h + 1);
        return 1;
    }

    private void requireServed() {
        if (!window.isValid()) {
            throw new RdmaException("work ring " + index + " of node " + window.owner() + " is gone: its proxy left or died"
                    + " (its window was freed); WQEs posted and not completed were not executed or their completions are lost");
        }
        if (state() == CLOSED && (long) LONG.getVolatile(mem, (long) H_CQ_HEAD) == (long) LONG.getVolatile(mem, (long) H_CQ_TAIL)) {
            throw new RdmaException("work ring " + index + " of node " + window.owner() + " is closed: its proxy stopped serving it");
        }
    }

    /** Forgets the window (the proxy keeps serving the ring). */
    @Override
    public void close() {
        window.close();
    }

    @Override
    public String toString() {
        return "work ring " + index + " of node " + window.owner() + " (window " + window.id() + ", " + sqEntries + "/" + cqEntries + ")";
    }
}
