package dev.nupa.roce.ring;

import static dev.nupa.roce.ring.WorkRingLayout.*;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.PeerEvent;
import dev.nupa.device.PeerListener;
import dev.nupa.l2.Datapath;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The proxy's side of one work ring (docs/work-rings.md), sans-IO: {@link #poll} takes the WQEs posters wrote, posts
 * each on the ring's connected RC queue pair, and writes their completions back in posting order (IBA 10.8.5), all
 * on the caller's thread, the node's datapath, where it is a {@link Datapath.Source}: polled every round, and
 * {@link #ready} when a WQE waits, which a poster that rings the node's doorbell wakes a sleeping loop for. A poster
 * that cannot ring (a GPU kernel) is found by the loop's looks that {@link #nextLook}, a timer, schedules. A WQE the proxy can check itself (version, opcode, the local window,
 * key and range) completes in error without reaching the QP; what only the peer can check (the remote key and
 * range) comes back from it, and then, as in a verbs QP, the QP is in ERR and every later WQE completes flushed.
 */
public final class WorkRingProxy implements Datapath.Source, AutoCloseable {
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int PENDING = -1;

    private final FabricWindow window;
    private final MemorySegment mem;
    private final FabricDevice device;
    private final ProtectionDomain pd;
    private final QueuePair qp;
    private final CompletionQueue cq;
    private final int sqMask;
    private final int cqEntries;
    private final long cqOffset;
    private final long pollNs;
    private final long spinNs;
    private final int maxInFlight;
    /** The target's fabric node (the header's peer_node as formatted): posters may write the header later. */
    private final int peerNode;

    // Per submission slot, the WQE taken there until its completion is written.
    private final long[] wrId;
    private final int[] opcode;
    private final int[] flags;
    private final int[] length;
    private final int[] status;

    /** Local windows by id, opened and registered at their first use. */
    private final FabricWindow[] windows;
    private final MemoryRegion[] regions;

    private final SendWorkRequest wr = new SendWorkRequest(1);
    private final WorkCompletion wc = new WorkCompletion();
    private long sqHead;
    private long drained;
    private long cqTail;
    private int inFlight;
    private long lastWork = Long.MIN_VALUE / 2;
    private long executed;
    private long failed;
    private boolean closed;
    /** Set by the liveness thread when the target's node died or restarted (a new generation at its address). */
    private volatile boolean targetLost;
    private final PeerListener peers = this::onPeerEvent;

    /**
     * Serves the ring in {@code window} (laid out by {@link #format} already) on {@code qp}, an RC QP in RTS whose send
     * CQ is {@code cq} and holds room for {@code maxInFlight} completions. Idle, it has the loop look for new WQEs
     * at least every {@code pollNs}; for {@code spinNs} after its last work, on every round ({@link #nextLook}).
     */
    public WorkRingProxy(FabricWindow window, FabricDevice device, ProtectionDomain pd, QueuePair qp, CompletionQueue cq,
            int maxInFlight, long pollNs, long spinNs) {
        this.window = window;
        this.mem = window.memory();
        this.device = device;
        this.pd = pd;
        this.qp = qp;
        this.cq = cq;
        int sqEntries = mem.get(ValueLayout.JAVA_INT, H_SQ_ENTRIES);
        this.sqMask = sqEntries - 1;
        this.cqEntries = mem.get(ValueLayout.JAVA_INT, H_CQ_ENTRIES);
        this.cqOffset = WorkRingLayout.cqOffset(sqEntries);
        this.maxInFlight = Math.min(maxInFlight, sqEntries);
        this.pollNs = pollNs;
        this.spinNs = spinNs;
        this.peerNode = mem.get(ValueLayout.JAVA_INT, H_PEER_NODE);
        this.wrId = new long[sqEntries];
        this.opcode = new int[sqEntries];
        this.flags = new int[sqEntries];
        this.length = new int[sqEntries];
        this.status = new int[sqEntries];
        int maxWindows = device.geometry().maxWindows();
        this.windows = new FabricWindow[maxWindows];
        this.regions = new MemoryRegion[maxWindows];
        INT.setRelease(mem, (long) H_STATE, READY);
        device.addPeerListener(peers);
    }

    /**
     * DOWN or RESTARTED alike end the target's life: a restarted node holds the address but not the QP or the region
     * the ring was made for, so nothing posted to the ring can ever execute there either.
     */
    private void onPeerEvent(PeerEvent e) {
        if ((e.kind() == PeerEvent.Kind.DOWN || e.kind() == PeerEvent.Kind.RESTARTED)
                && e.address() == peerNode) {
            targetLost = true;
        }
    }

    /**
     * Writes a ring's header into a fresh window (zeroed by its export): sizes, where the data area lies, the target's
     * region and the QP. The ring is in SETUP until a proxy serves it.
     */
    public static void format(FabricWindow window, int ringIndex, int sqEntries, int cqEntries, long dataBytes, long remoteAddr,
            long remoteLength, int remoteKey, int qpn, int peerNode, int peerQpn) {
        checkEntries("a submission ring", sqEntries);
        checkEntries("a completion ring", cqEntries);
        if (cqEntries < sqEntries) {
            throw new IllegalArgumentException("a completion ring of " + cqEntries + " entries is smaller than its submission ring of "
                    + sqEntries + "; give it at least as many");
        }
        MemorySegment m = window.memory();
        long need = windowBytes(sqEntries, cqEntries, dataBytes);
        if (m.byteSize() < need) {
            throw new IllegalArgumentException("window " + window.id() + " holds " + m.byteSize() + " bytes; the ring needs " + need);
        }
        m.set(ValueLayout.JAVA_SHORT, H_VERSION, (short) VERSION);
        m.set(ValueLayout.JAVA_SHORT, H_WQE_SIZE, (short) WQE_BYTES);
        m.set(ValueLayout.JAVA_SHORT, H_CQE_SIZE, (short) CQE_BYTES);
        m.set(ValueLayout.JAVA_SHORT, H_RING_INDEX, (short) ringIndex);
        m.set(ValueLayout.JAVA_INT, H_SQ_ENTRIES, sqEntries);
        m.set(ValueLayout.JAVA_INT, H_CQ_ENTRIES, cqEntries);
        m.set(ValueLayout.JAVA_LONG, H_DATA_OFFSET, dataOffset(sqEntries, cqEntries));
        m.set(ValueLayout.JAVA_LONG, H_DATA_LENGTH, m.byteSize() - dataOffset(sqEntries, cqEntries));
        m.set(ValueLayout.JAVA_LONG, H_REMOTE_ADDR, remoteAddr);
        m.set(ValueLayout.JAVA_LONG, H_REMOTE_LENGTH, remoteLength);
        m.set(ValueLayout.JAVA_INT, H_REMOTE_KEY, remoteKey);
        m.set(ValueLayout.JAVA_INT, H_QPN, qpn);
        m.set(ValueLayout.JAVA_INT, H_PEER_NODE, peerNode);
        m.set(ValueLayout.JAVA_INT, H_PEER_QPN, peerQpn);
        m.set(ValueLayout.JAVA_INT, H_WINDOW_ID, window.id());
        m.set(ValueLayout.JAVA_INT, H_WINDOW_KEY, window.key());
        INT.setRelease(m, (long) H_MAGIC, MAGIC); // last: a poster that sees the magic sees the rest
    }

    public FabricWindow window() {
        return window;
    }

    public QueuePair qp() {
        return qp;
    }

    /** WQEs that completed successfully, and those that completed in error. */
    public long executed() {
        return executed;
    }

    public long failed() {
        return failed;
    }

    /** Whether a WQE waits at the head of the submission ring: the datapath's look before it sleeps. */
    @Override
    public boolean ready() {
        return !closed && (int) INT.getAcquire(mem, HEADER_BYTES + (sqHead & sqMask) * (long) WQE_BYTES + W_SEQ) == (int) (sqHead + 1);
    }

    /** Takes completions and up to {@code limit} new WQEs, writes what completed; returns how many of both. */
    @Override
    public int poll(int limit, long now) {
        if (closed) {
            return 0;
        }
        int work = 0;
        while (cq.poll(wc)) {
            int s = (int) wc.wrId & sqMask;
            status[s] = wc.status;
            inFlight--;
            work++;
            if (wc.status != WcStatus.SUCCESS) {
                INT.setRelease(mem, (long) H_STATE, ERROR);
            }
        }
        if (qp.state() == QpState.ERR && targetGone()) {
            // Its target died or restarted: nothing posted to the ring can ever execute. Rather than complete every
            // later WQE flushed as fast as posters write them, stop serving it (close: what was taken completes, CLOSED).
            close();
            return work;
        }
        work += take(limit);
        drain();
        if (work > 0) {
            lastWork = now;
        }
        return work;
    }

    /**
     * When the loop must look at the ring again though nobody rang (a GPU poster cannot): at once for {@code spinNs}
     * after its last work, else {@code pollNs} from now. A {@link Datapath.Timer}: the deadline bounds the loop's sleep.
     */
    public long nextLook(long now) {
        if (closed) {
            return Long.MAX_VALUE;
        }
        return now - lastWork < spinNs ? now : now + pollNs;
    }

    /**
     * Whether the ring's target node (the header's peer_node) is gone: it left or died, or came back with a new
     * generation, as the fabric's liveness reported.
     */
    private boolean targetGone() {
        if (targetLost) {
            return true;
        }
        return peerNode >= 0 && peerNode < device.geometry().maxNodes() && !device.isUp(peerNode);
    }

    /** Takes up to {@code limit} WQEs in order while they are written, their completion has room, and the QP can take them. */
    private int take(int limit) {
        int n = 0;
        long cqHead = (long) LONG.getAcquire(mem, (long) H_CQ_HEAD);
        while (n < limit && inFlight < maxInFlight && cqTail - cqHead + (sqHead - drained) < cqEntries) {
            long e = HEADER_BYTES + (sqHead & sqMask) * (long) WQE_BYTES;
            if ((int) INT.getAcquire(mem, e + W_SEQ) != (int) (sqHead + 1)) {
                break;
            }
            int s = (int) (sqHead & sqMask);
            wrId[s] = mem.get(ValueLayout.JAVA_LONG, e + W_WR_ID);
            opcode[s] = Byte.toUnsignedInt(mem.get(ValueLayout.JAVA_BYTE, e + W_OPCODE));
            flags[s] = Short.toUnsignedInt(mem.get(ValueLayout.JAVA_SHORT, e + W_FLAGS));
            length[s] = mem.get(ValueLayout.JAVA_INT, e + W_LENGTH);
            status[s] = execute(e);
            if (status[s] == PENDING) {
                inFlight++;
            }
            sqHead++;
            n++;
        }
        if (n > 0) {
            LONG.setRelease(mem, (long) H_SQ_HEAD, sqHead); // the slots may be written again; once a batch, one line to move
        }
        return n;
    }

    /** Posts the WQE at {@code e} on the QP (PENDING) or returns the status it completes with at once. */
    private int execute(long e) {
        int s = (int) (sqHead & sqMask);
        if (mem.get(ValueLayout.JAVA_BYTE, e + W_VERSION) != VERSION || opcode[s] > OP_READ) {
            return WcStatus.LOC_QP_OP_ERR;
        }
        if (qp.state() == QpState.ERR || (int) INT.getAcquire(mem, (long) H_STATE) == ERROR) {
            return WcStatus.WR_FLUSH_ERR;
        }
        int len = length[s];
        wr.sg.clear();
        if (len != 0 || opcode[s] == OP_READ) {
            MemoryRegion mr = local(mem.get(ValueLayout.JAVA_INT, e + W_LOCAL_WINDOW), mem.get(ValueLayout.JAVA_INT, e + W_LOCAL_KEY),
                    opcode[s] == OP_READ);
            long off = mem.get(ValueLayout.JAVA_LONG, e + W_LOCAL_OFFSET);
            if (mr == null || len < 0 || off < 0 || off > mr.length() - Integer.toUnsignedLong(len)) {
                return WcStatus.LOC_PROT_ERR;
            }
            wr.sg.add(mr, off, len);
        }
        wr.wrId = sqHead;
        wr.opcode = opcode[s];
        wr.sendFlags = SendFlags.SIGNALED | ((flags[s] & F_SOLICITED) != 0 ? SendFlags.SOLICITED : 0);
        wr.immData = mem.get(ValueLayout.JAVA_INT, e + W_IMM);
        wr.remoteAddr = mem.get(ValueLayout.JAVA_LONG, e + W_REMOTE_ADDR);
        wr.rkey = mem.get(ValueLayout.JAVA_INT, e + W_REMOTE_KEY);
        try {
            qp.postSend(wr);
        } catch (RdmaException malformed) {
            return WcStatus.LOC_QP_OP_ERR; // what verbs refuses to post, the ring completes in error
        }
        return PENDING;
    }

    /**
     * The region over local window {@code id} if {@code key} matches a live window (for a READ, one the proxy may
     * write); null otherwise. A window is opened and registered at its first use and checked again at every use.
     */
    private MemoryRegion local(int id, int key, boolean write) {
        if (id < 0 || id >= windows.length) {
            return null;
        }
        FabricWindow w = windows[id];
        if (w != null && (w.key() != key || !w.isValid())) {
            forget(id);
            w = null;
        }
        if (w == null) {
            try {
                w = id == window.id() && key == window.key() ? window : device.openWindow(id, key);
            } catch (RuntimeException gone) {
                return null;
            }
            windows[id] = w;
            regions[id] = pd.regMr(w.memory(), w.memory().isReadOnly() ? 0 : Access.LOCAL_WRITE);
        }
        MemoryRegion mr = regions[id];
        return write && (mr.access() & Access.LOCAL_WRITE) == 0 ? null : mr;
    }

    private void forget(int id) {
        regions[id].close();
        if (windows[id] != window) {
            windows[id].close();
        }
        windows[id] = null;
        regions[id] = null;
    }

    /** Writes the completions of the oldest WQEs that are done, in posting order. */
    private void drain() {
        long taken = sqHead;
        if (drained == taken) {
            return;
        }
        long tail = cqTail;
        while (drained < taken) {
            int s = (int) (drained & sqMask);
            int st = status[s];
            if (st == PENDING) {
                break;
            }
            if (st == WcStatus.SUCCESS) {
                executed++;
            } else {
                failed++;
            }
            if (st != WcStatus.SUCCESS || (flags[s] & F_SIGNALED) != 0) {
                complete(s, st);
            }
            drained++;
        }
        if (cqTail != tail) {
            LONG.setRelease(mem, (long) H_CQ_TAIL, cqTail);
            LONG.setOpaque(mem, (long) H_EXECUTED, executed);
            LONG.setOpaque(mem, (long) H_FAILED, failed);
        }
    }

    private void complete(int s, int st) {
        long e = cqOffset + (cqTail & (cqEntries - 1)) * CQE_BYTES;
        mem.set(ValueLayout.JAVA_BYTE, e + C_STATUS, (byte) st);
        mem.set(ValueLayout.JAVA_BYTE, e + C_OPCODE, (byte) opcode[s]);
        mem.set(ValueLayout.JAVA_LONG, e + C_WR_ID, wrId[s]);
        mem.set(ValueLayout.JAVA_INT, e + C_BYTE_LEN, st == WcStatus.SUCCESS ? length[s] : 0);
        mem.set(ValueLayout.JAVA_INT, e + C_SQ_POSITION, (int) drained);
        INT.setRelease(mem, e + C_SEQ, (int) (cqTail + 1));
        cqTail++;
    }

    /**
     * Stops serving: the WQEs taken and not completed complete flushed (their room in the completion ring was kept
     * for them), the ring is CLOSED, and the local windows are forgotten. The caller destroys the QP and frees the
     * window afterwards.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        for (long p = drained; p < sqHead; p++) {
            int s = (int) (p & sqMask);
            if (status[s] == PENDING) {
                status[s] = WcStatus.WR_FLUSH_ERR;
            }
        }
        inFlight = 0;
        drain();
        INT.setRelease(mem, (long) H_STATE, CLOSED);
        closed = true;
        device.removePeerListener(peers);
        for (int id = 0; id < windows.length; id++) {
            if (windows[id] != null) {
                forget(id);
            }
        }
    }
}
