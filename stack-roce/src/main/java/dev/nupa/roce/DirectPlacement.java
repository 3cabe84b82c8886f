package dev.nupa.roce;

import dev.nupa.device.FabricException;
import dev.nupa.device.FabricWindow;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The fabric's DMA channel for {@link TransferMode#DIRECT} QPs: the requester makes the responder's
 * checks against the peer's {@link VerbsDirectory} (QP state and access, rkey, protection domain, region
 * access and bounds, atomic alignment) and then moves the bytes itself, in place in the window that
 * backs the region. Any failed check returns {@link #FALLBACK}: the operation then goes as packets and
 * the responder answers it with the NAK the spec prescribes, so both modes end in the same completion.
 */
final class DirectPlacement {
    static final int DONE = 1;
    static final int FALLBACK = 0;
    /** The local gather/scatter list failed its own checks: LOC_PROT_ERR. */
    static final int LOCAL_ERROR = -1;

    /** What this context knows of one peer: its directory and the region windows opened so far. */
    private static final class Peer {
        FabricWindow directoryWindow;
        VerbsDirectory directory;
        FabricWindow[] windows = new FabricWindow[0];
    }

    /** What a QP last checked: valid while the peer's directory epoch and the region's window stay the same. */
    static final class Target {
        FabricWindow window;
        VerbsDirectory directory;
        long epoch;
        int rkey;
        int access;
        long base;
        long length;
    }

    private final RdmaContext ctx;
    private final Peer[] peers;

    DirectPlacement(RdmaContext ctx, int maxNodes) {
        this.ctx = ctx;
        this.peers = new Peer[maxNodes];
    }

    int execute(QueuePair qp, int s) {
        SendQueue sq = qp.sq;
        int op = sq.opcode[s];
        long len = sq.length[s];
        if (len == 0 && !WrOpcode.isAtomic(op)) {
            ctx.counters.add(RdmaCounter.DIRECT_OPS, 1);
            return DONE; // IBA 9.4.4: nothing to move and no key to check
        }
        VerbsDirectory d = directory(qp.attr.destNode);
        int dqp = qp.attr.destQpNum;
        if (d == null || dqp >= d.maxQps) {
            return fallback();
        }
        int need = op == WrOpcode.RDMA_WRITE ? Access.REMOTE_WRITE : op == WrOpcode.RDMA_READ ? Access.REMOTE_READ : Access.REMOTE_ATOMIC;
        int rkey = sq.rkey[s];
        long va = sq.remoteAddr[s];
        long size = WrOpcode.isAtomic(op) ? 8 : len;
        Target t = qp.directTarget;
        long epoch = d.epoch(); // read before the checks: a change after them shows as a new epoch next time
        FabricWindow w;
        long base;
        if (t.window != null && t.epoch == epoch && t.rkey == rkey && (t.access & need) != 0 && t.window.isValid()) {
            w = t.window; // nothing in the peer's tables changed since this region was checked for this QP
            base = t.base;
        } else {
            QpState st = d.qpState(dqp);
            if ((st != QpState.RTR && st != QpState.RTS && st != QpState.SQD) || (d.qpAccess(dqp) & need) == 0) {
                return fallback();
            }
            long e = d.mrEntry(rkey);
            if (e < 0 || d.mrPd(e) != d.qpPd(dqp) || d.mrWindowId(e) < 0) {
                return fallback();
            }
            int access = d.mrAccess(e) & d.qpAccess(dqp);
            base = d.mrAddr(e);
            long length = d.mrLength(e);
            if ((access & need) == 0) {
                return fallback();
            }
            w = window(qp.attr.destNode, rkey >>> 8, d.mrWindowId(e), d.mrWindowKey(e));
            if (w == null) {
                peers[qp.attr.destNode] = null; // the peer may have restarted: reread its directory next time
                return fallback();
            }
            VarHandle.loadLoadFence(); // the entry's fields were read before this re-check of its key (a seqlock's second read)
            if (!d.stillHolds(e, rkey)) {
                return fallback();
            }
            t.window = w;
            t.directory = d;
            t.epoch = epoch;
            t.rkey = rkey;
            t.access = access;
            t.base = base;
            t.length = Math.min(length, w.length());
        }
        if (va < base || va - base > t.length - size || (WrOpcode.isAtomic(op) && (va & 7) != 0)) {
            return fallback();
        }
        MemorySegment mem = w.memory();
        long off = va - base;
        int pd = qp.pd.id;
        int b = s * sq.maxSge;
        int n = sq.numSge[s];
        boolean ok;
        if (op == WrOpcode.RDMA_WRITE) {
            // The last 8 bytes land last: a peer polling the end of the buffer (perftest's write-lat) sees all of it.
            int tail = (int) Math.min(8, len);
            int head = (int) len - tail;
            if (sq.fromInline(s)) {
                long src = (long) s * sq.maxInline;
                Bytes.copy(sq.inline, src, mem, off, head);
                VarHandle.releaseFence();
                Bytes.copy(sq.inline, src + head, mem, off + head, tail);
                ok = true;
            } else {
                ok = writeTailLast(pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, mem, off, (int) len);
            }
        } else if (op == WrOpcode.RDMA_READ) {
            ok = Sgl.copy(ctx, pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, 0, mem, off, (int) len, true);
        } else {
            // Check the local buffer first so a failed check never leaves the remote value changed.
            MemorySegment tmp = ctx.scratch8;
            if (!Sgl.copy(ctx, pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, 0, tmp, 0, 8, true)) {
                return LOCAL_ERROR;
            }
            boolean cas = op == WrOpcode.ATOMIC_CMP_AND_SWP;
            long original = RcResponder.execute(mem, off, cas, cas ? sq.swap[s] : sq.compareAdd[s], sq.compareAdd[s]);
            tmp.set(ValueLayout.JAVA_LONG, 0, original);
            ok = Sgl.copy(ctx, pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, 0, tmp, 0, 8, true);
        }
        if (!ok) {
            return LOCAL_ERROR;
        }
        ctx.counters.add(RdmaCounter.DIRECT_OPS, 1);
        return DONE;
    }

    /**
     * The post-time fast path of a direct RDMA WRITE of {@code len} bytes from one gather entry: when the
     * QP's cached check of this rkey still holds (same directory epoch, live window, range inside) and the
     * local entry is sound, copy straight from it and return {@link #DONE}; otherwise {@link #FALLBACK}
     * (uncounted), and the request takes the queued path, which checks everything and reports errors.
     */
    int writeNow(QueuePair qp, SendWorkRequest wr, int len) {
        Target t = qp.directTarget;
        FabricWindow w = t.window;
        long va = wr.remoteAddr;
        if (w == null || t.rkey != wr.rkey || (t.access & Access.REMOTE_WRITE) == 0 || va < t.base
                || va - t.base > t.length - len || t.directory.epoch() != t.epoch || !w.ownerUp()) {
            // The epoch covers the region's withdrawal (it moves before the window is freed), ownerUp the peer's death.
            return FALLBACK;
        }
        ScatterGather sg = wr.sg;
        MemoryRegion local = ctx.region(sg.lkey[0]);
        long lva = sg.addr[0];
        if (local == null || local.pd != qp.pd || !local.covers(lva, len)) {
            return FALLBACK; // a bad local key: the queued path reports LOC_PROT_ERR
        }
        MemorySegment src = local.memory;
        long srcOff = lva - local.addr;
        MemorySegment dst = w.memory();
        long dstOff = va - t.base;
        // The last 8 bytes land last: a peer polling the end of the buffer (perftest's write-lat) sees all of it.
        int tail = Math.min(8, len);
        int head = len - tail;
        if (head > 0) {
            Bytes.copy(src, srcOff, dst, dstOff, head);
            VarHandle.releaseFence();
        }
        Bytes.copy(src, srcOff + head, dst, dstOff + head, tail);
        ctx.counters.add(RdmaCounter.DIRECT_OPS, 1);
        return DONE;
    }

    /**
     * Gathers {@code len} bytes of a list into {@code mem} at {@code off}, the last 8 after a release fence:
     * a peer polling the end of the buffer (perftest's write-lat) then sees all of it. False on a bad local key.
     */
    private boolean writeTailLast(int pd, long[] addr, int[] length, int[] lkey, int base, int count, MemorySegment mem,
            long off, int len) {
        int tail = Math.min(8, len);
        int head = len - tail;
        boolean ok = head == 0 || Sgl.copy(ctx, pd, addr, length, lkey, base, count, 0, mem, off, head, false);
        VarHandle.releaseFence();
        return ok && Sgl.copy(ctx, pd, addr, length, lkey, base, count, head, mem, off + head, tail, false);
    }

    private int fallback() {
        ctx.counters.add(RdmaCounter.DIRECT_FALLBACKS, 1);
        return FALLBACK;
    }

    private VerbsDirectory directory(int node) {
        if (node < 0 || node >= peers.length) {
            return null;
        }
        Peer p = peers[node];
        if (p != null) {
            // Checked per operation through the region's window (same owner and generation); a dead or
            // restarted peer fails that check, and then its directory is opened afresh.
            return p.directory;
        }
        FabricWindow w;
        try {
            w = ctx.link.device().openDirectory(node);
        } catch (FabricException e) {
            w = null;
        }
        VerbsDirectory d = w == null ? null : VerbsDirectory.open(w);
        if (d == null) {
            peers[node] = null;
            return null;
        }
        p = new Peer();
        p.directoryWindow = w;
        p.directory = d;
        p.windows = new FabricWindow[d.maxMrs];
        peers[node] = p;
        return d;
    }

    private FabricWindow window(int node, int index, int id, int key) {
        Peer p = peers[node];
        FabricWindow w = p.windows[index];
        if (w != null && w.id() == id && w.key() == key && w.isValid()) {
            return w;
        }
        try {
            w = ctx.link.device().openWindow(id, key);
        } catch (FabricException e) {
            return null;
        }
        p.windows[index] = w;
        return w;
    }
}
