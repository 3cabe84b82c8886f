package dev.nupa.roce.transport;

import dev.nupa.device.FabricException;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.ScatterGather;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.wire.Bytes;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The fabric's DMA channel for {@link TransferMode#DIRECT} QPs: the requester makes the responder's
 * checks against the peer's {@link VerbsDirectory} (QP state and access, rkey, protection domain, region
 * access and bounds, atomic alignment) and then moves the bytes itself, in place in the window that
 * backs the region. Any failed check returns {@link #FALLBACK}: the operation then goes as packets and
 * the responder answers it with the NAK the spec prescribes, so both modes end in the same completion. Every copy
 * into or out of a peer region is announced in the peer's guard window first ({@link VerbsDirectory#enter}), so
 * that once the peer's deregistration returns no byte touches the region's memory.
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
        /** Where {@code base} lies in the window: 0 for a region, the bound range's offset for a memory window. */
        long offset;
        /** The region's slot and its registration's stamp: what a copy announces ({@link VerbsDirectory#enter}). */
        int slot;
        int stamp;
    }

    /**
     * What a QP knows of its peer's receive queue for direct SENDs ({@link RecvMirror}): the receiver's
     * checks hold while the peer directory's epoch stays the same; the receive buffer's region is cached.
     * Which receive is next is never cached: it is the mirror's {@code next} word, claimed with a CAS.
     */
    static final class SendTarget {
        VerbsDirectory directory;
        long epoch = -1;
        RecvMirror mirror;
        int peerPd;
        /** The region of the last receive buffer, checked under {@link #epoch} (its key in {@code rkey}). */
        final Target buffer = new Target();
        /** Set by {@link #sendBegin}: the mirror word that names the receive, and where the payload goes. */
        long next;
        MemorySegment dst;
        long dstOff;
        /** Whether the receive after the last one placed was posted then (a read ahead: see sendEnd). */
        boolean nextPosted;

        /** Forgets what was checked (the QP was reset or now talks to another peer). */
        void forget() {
            directory = null;
            epoch = -1;
            mirror = null;
            buffer.window = null;
        }
    }

    private final RdmaDevice device;
    private final Peer[] peers;

    DirectPlacement(RdmaDevice device, int maxNodes) {
        this.device = device;
        this.peers = new Peer[maxNodes];
    }

    int execute(QpTransport qp, int s) {
        SendQueue sq = qp.sq;
        int op = sq.opcode[s];
        long len = sq.length[s];
        if (WrOpcodes.isSend(op)) {
            return sendQueued(qp, s);
        }
        if (len == 0 && !WrOpcodes.isAtomic(op)) {
            device.counters.add(RdmaCounter.DIRECT_OPS, 1);
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
        long size = WrOpcodes.isAtomic(op) ? 8 : len;
        Target t = qp.directTarget;
        long epoch = d.epoch(); // read before the checks: a change after them shows as a new epoch next time
        FabricWindow w;
        long base;
        if (t.window != null && t.epoch == epoch && t.rkey == rkey && (t.access & need) != 0 && t.window.isValid()) {
            w = t.window; // nothing in the peer's tables changed since this region was checked for this QP
            base = t.base;
        } else {
            QpState st = d.qpState(dqp);
            if ((st != QpState.RTR && st != QpState.RTS && st != QpState.SQD)
                    || !region(qp.attr.destNode, d, rkey, d.qpPd(dqp), d.qpAccess(dqp), need, t)) {
                return fallback();
            }
            t.epoch = epoch;
            w = t.window;
            base = t.base;
        }
        if (va < base || va - base > t.length - size || (WrOpcodes.isAtomic(op) && (va & 7) != 0)) {
            return fallback();
        }
        VerbsDirectory owner = t.directory;
        if (!owner.enter(t.slot, t.stamp)) {
            return revoked(t); // deregistered since it was checked: the responder refuses the packets
        }
        boolean ok = copy(qp, s, op, w.memory(), va - base + t.offset, (int) len);
        owner.leave();
        if (!ok) {
            return LOCAL_ERROR;
        }
        device.counters.add(RdmaCounter.DIRECT_OPS, 1);
        return DONE;
    }

    /** Moves request {@code s}'s bytes to or from {@code mem} at {@code off}, under the region's guard; false on a bad local key. */
    private boolean copy(QpTransport qp, int s, int op, MemorySegment mem, long off, int len) {
        SendQueue sq = qp.sq;
        int pd = qp.pdId;
        int b = s * sq.maxSge;
        int n = sq.numSge[s];
        if (op == WrOpcode.RDMA_WRITE) {
            // The last 8 bytes land last: a peer polling the end of the buffer (perftest's write-lat) sees all of it.
            if (sq.fromInline(s)) {
                int tail = Math.min(8, len);
                int head = len - tail;
                long src = (long) s * sq.maxInline;
                Bytes.copy(sq.inline, src, mem, off, head);
                VarHandle.releaseFence();
                Bytes.copy(sq.inline, src + head, mem, off + head, tail);
                return true;
            }
            return writeTailLast(pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, mem, off, len);
        }
        if (op == WrOpcode.RDMA_READ) {
            return Sgl.copy(device, pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, 0, mem, off, len, true);
        }
        // Check the local buffer first so a failed check never leaves the remote value changed.
        MemorySegment tmp = device.scratch8;
        if (!Sgl.copy(device, pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, 0, tmp, 0, 8, true)) {
            return false;
        }
        boolean cas = op == WrOpcode.ATOMIC_CMP_AND_SWP;
        long original = RcResponder.execute(mem, off, cas, cas ? sq.swap[s] : sq.compareAdd[s], sq.compareAdd[s]);
        tmp.set(ValueLayout.JAVA_LONG, 0, original);
        return Sgl.copy(device, pd, sq.sgAddr, sq.sgLength, sq.sgLkey, b, n, 0, tmp, 0, 8, true);
    }

    /** A direct operation whose region was withdrawn after its checks: forget them and send it as packets. */
    private int revoked(Target t) {
        t.window = null;
        device.counters.add(RdmaCounter.DIRECT_REVOKED, 1);
        return fallback();
    }

    /**
     * The post-time fast path of a direct RDMA WRITE of {@code len} bytes from one gather entry: when the
     * QP's cached check of this rkey still holds (same directory epoch, live window, range inside) and the
     * local entry is sound, copy straight from it and return {@link #DONE}; otherwise {@link #FALLBACK}
     * (uncounted), and the request takes the queued path, which checks everything and reports errors.
     */
    int writeNow(QpTransport qp, SendWorkRequest wr, int len) {
        Target t = qp.directTarget;
        FabricWindow w = t.window;
        long va = wr.remoteAddr;
        if (w == null || t.rkey != wr.rkey || (t.access & Access.REMOTE_WRITE) == 0 || va < t.base
                || va - t.base > t.length - len || !t.directory.unchangedSince(t.epoch) || !w.ownerUp()) {
            // The epoch covers the region's withdrawal (it moves before the window is freed), ownerUp the peer's death.
            return FALLBACK;
        }
        ScatterGather sg = wr.sg;
        Region local = source(qp, sg, len);
        if (local == null) {
            return FALLBACK; // a bad local key: the queued path reports LOC_PROT_ERR
        }
        MemorySegment src = local.memory;
        long srcOff = sg.addr(0) - local.addr;
        MemorySegment dst = w.memory();
        long dstOff = va - t.base + t.offset;
        VerbsDirectory owner = t.directory;
        if (!owner.enter(t.slot, t.stamp)) {
            t.window = null;
            return FALLBACK; // deregistered since it was checked: the queued path counts it and sends packets
        }
        // The last 8 bytes land last: a peer polling the end of the buffer (perftest's write-lat) sees all of it.
        int tail = Math.min(8, len);
        int head = len - tail;
        if (head > 0) {
            Bytes.copy(src, srcOff, dst, dstOff, head);
            VarHandle.releaseFence();
        }
        Bytes.copy(src, srcOff + head, dst, dstOff + head, tail);
        owner.leave();
        device.counters.add(RdmaCounter.DIRECT_OPS, 1);
        return DONE;
    }

    // ---- direct SENDs -----------------------------------------------------------------------

    /**
     * Finds the receive a direct SEND of {@code len} bytes goes to, makes the responder's checks on it (the
     * peer QP is connected to this one and takes requests, a receive is posted, its buffer's key, protection
     * domain, LOCAL_WRITE and room) and claims it; true with {@code qp.sendTarget} saying where the payload
     * goes, and the buffer region's guard taken (the caller drops it after its copy). False (uncounted) sends it
     * as packets, where the responder meets the same case with its answer (RNR NAK, a length error).
     */
    private boolean sendBegin(QpTransport qp, int len) {
        SendTarget t = qp.sendTarget;
        int node = qp.attr.destNode;
        VerbsDirectory d = directory(node);
        if (d == null) {
            return false;
        }
        long epoch = d.epoch(); // read before the checks: a change after them shows as a new epoch next time
        if (t.epoch != epoch || t.directory != d || t.mirror == null) {
            if (!checkReceiver(qp, t, d, qp.attr.destQpNum)) {
                return false;
            }
            t.epoch = epoch;
        }
        RecvMirror m = t.mirror;
        if (!m.window.ownerUp()) {
            t.forget();
            peers[node] = null; // the peer died or restarted: open its directory afresh next time
            return false;
        }
        long next = m.next();
        if ((next & RecvMirror.CLOSED) != 0) {
            return false; // the receiver is in ERR or gone: packets, which it drops, and the retry timer decides
        }
        long inc = RecvMirror.incarnationOf(next);
        long p = RecvMirror.positionOf(next);
        if (!m.posted(inc, p)) {
            return false; // no receive posted
        }
        if (len > 0) {
            if (m.numSge(p) != 1) {
                return false; // a list of several buffers: packets (rare; the responder scatters them)
            }
            long lengthAndKey = m.lengthAndKey(p, 0);
            int lkey = RecvMirror.upper(lengthAndKey);
            long va = m.addr(p, 0);
            Target b = t.buffer;
            if (len > RecvMirror.lower(lengthAndKey) || ((b.window == null || b.rkey != lkey)
                    && !region(qp.attr.destNode, d, lkey, t.peerPd, -1, Access.LOCAL_WRITE, b))
                    || va < b.base || va - b.base > b.length - len) {
                return false;
            }
            if (!b.directory.enter(b.slot, b.stamp)) {
                b.window = null;
                device.counters.add(RdmaCounter.DIRECT_REVOKED, 1);
                return false; // the buffer's region was deregistered since it was checked
            }
            t.dst = b.window.memory();
            t.dstOff = va - b.base + b.offset;
        } else {
            t.dst = null; // consumes the receive, places nothing (IBA 9.4.4)
        }
        // Claimed only now, with everything checked: a claimed receive is always filled and stamped.
        if (!m.claim(next)) {
            if (len > 0) {
                t.buffer.directory.leave();
            }
            return false;
        }
        t.next = next;
        return true;
    }

    /**
     * The responder's checks of the peer region {@code key} names, against its directory: a live region of
     * protection domain {@code pd} in a fabric window, granting {@code need} within {@code allowed} (the peer
     * QP's access flags for a remote key, everything for a receive buffer), a writable window when
     * {@code need} writes. On success the region is cached in {@code into} (window, key, access, base,
     * length); the caller records the epoch it read first.
     */
    private boolean region(int node, VerbsDirectory d, int key, int pd, int allowed, int need, Target into) {
        long e = d.mrEntry(key);
        if (e < 0 || d.mrPd(e) != pd || d.mrWindowId(e) < 0) {
            return false;
        }
        int access = d.mrAccess(e) & allowed;
        long base = d.mrAddr(e);
        long length = d.mrLength(e);
        long offset = d.mrOffset(e);
        int stamp = d.stamp(d.slotOf(e));
        if ((access & need) == 0 || stamp == 0) {
            return false;
        }
        FabricWindow w = window(node, key >>> 8, d.mrWindowId(e), d.mrWindowKey(e));
        if (w == null) {
            peers[node] = null; // the peer may have restarted: reread its directory next time
            return false;
        }
        if (offset < 0 || offset > w.length() || length < 0) {
            return false; // a peer's directory is untrusted: a range it could not have exported
        }
        boolean writes = (need & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC | Access.LOCAL_WRITE)) != 0;
        if (writes && (w.access() & FabricWindow.REMOTE_WRITE) == 0) {
            return false;
        }
        VarHandle.loadLoadFence(); // the entry's fields were read before this re-check of its key (a seqlock's second read)
        if (!d.stillHolds(e, key)) {
            return false;
        }
        into.window = w;
        into.directory = d;
        into.slot = d.slotOf(e);
        into.stamp = stamp;
        into.rkey = key;
        into.access = access;
        into.base = base;
        into.offset = offset;
        into.length = Math.min(length, w.length() - offset); // a memory window: its range of the region's window
        return true;
    }

    /**
     * The peer QP (re)checked after its directory changed: connected to this QP (packet mode drops RC frames
     * from anyone else), taking requests, its protection domain and its mirror window.
     */
    private boolean checkReceiver(QpTransport qp, SendTarget t, VerbsDirectory d, int dqp) {
        if (dqp >= d.maxQps) {
            return false;
        }
        QpState st = d.qpState(dqp);
        if ((st != QpState.RTR && st != QpState.RTS && st != QpState.SQD) || d.qpType(dqp) != QpType.RC.ordinal()
                || d.qpPeerNode(dqp) != device.node() || d.qpPeerQpn(dqp) != qp.qpn) {
            return false;
        }
        int id = d.qpMirrorId(dqp);
        int key = d.qpMirrorKey(dqp);
        if (id < 0) {
            return false; // a shared receive queue, or no window space at the peer: packets
        }
        RecvMirror m = t.mirror;
        if (m == null || m.window.id() != id || m.window.key() != key || !m.window.ownerUp()) {
            try {
                m = RecvMirror.open(device.link.device().openWindow(id, key));
            } catch (FabricException e) {
                m = null;
            }
            if (m == null) {
                return false;
            }
            t.mirror = m;
        }
        t.directory = d;
        t.peerPd = d.qpPd(dqp);
        t.buffer.window = null; // the receive buffers' regions are checked again under the new epoch
        return true;
    }

    /** Stamps the receive {@link #sendBegin} claimed as filled; the peer's responder completes it. */
    private void sendEnd(QpTransport qp, int len, boolean withImm, int imm, boolean solicited) {
        SendTarget t = qp.sendTarget;
        long inc = RecvMirror.incarnationOf(t.next);
        long p = RecvMirror.positionOf(t.next);
        t.mirror.stamp(inc, p, len, withImm ? imm : 0, (withImm ? RecvMirror.WITH_IMM : 0) | (solicited ? RecvMirror.SOLICITED : 0));
        // Read the next receive's slot now, while the caller waits for an answer anyway: the next SEND then
        // finds that line in this core's cache (shared with the owner, who polls it) instead of fetching it
        // on its critical path. Measured gain small: send-lat p50 median 0.25 us with it, 0.27 us without,
        // over a few runs each on 2 vCPUs (within the noise of vCPU placement).
        t.nextPosted = t.mirror.posted(inc, p + 1);
        device.counters.add(RdmaCounter.DIRECT_SENDS, 1);
    }

    /** A queued SEND (or SEND_WITH_IMM) of request {@code s}, placed directly. */
    private int sendQueued(QpTransport qp, int s) {
        SendQueue sq = qp.sq;
        int len = (int) sq.length[s];
        int b = s * sq.maxSge;
        boolean inline = sq.fromInline(s);
        // The local list is checked before a receive is claimed: a claimed receive must be filled.
        if (len > 0 && !inline && !Sgl.check(device, qp.pdId, sq.sgAddr, sq.sgLength, sq.sgLkey, b, sq.numSge[s], len)) {
            return LOCAL_ERROR;
        }
        if (!sendBegin(qp, len)) {
            device.counters.add(RdmaCounter.DIRECT_SEND_FALLBACKS, 1);
            return FALLBACK;
        }
        SendTarget t = qp.sendTarget;
        if (len > 0) {
            if (inline) {
                Bytes.copy(sq.inline, (long) s * sq.maxInline, t.dst, t.dstOff, len);
            } else {
                Sgl.copy(device, qp.pdId, sq.sgAddr, sq.sgLength, sq.sgLkey, b, sq.numSge[s], 0, t.dst, t.dstOff, len, false);
            }
            t.buffer.directory.leave();
        }
        sendEnd(qp, len, sq.opcode[s] == WrOpcode.SEND_WITH_IMM, sq.imm[s], (sq.flags[s] & SendFlags.SOLICITED) != 0);
        return DONE;
    }

    /**
     * The post-time fast path of a direct SEND of at most one gather entry: {@link #DONE} when placed,
     * else {@link #FALLBACK} (uncounted), and the request takes the queued path, which reports errors.
     */
    int sendNow(QpTransport qp, SendWorkRequest wr, int len) {
        ScatterGather sg = wr.sg;
        Region local = null;
        // The local entry is checked before a receive is claimed: a claimed receive must be filled.
        if ((len > 0 && (local = source(qp, sg, len)) == null) || !sendBegin(qp, len)) {
            return FALLBACK;
        }
        SendTarget t = qp.sendTarget;
        if (len > 0) {
            Bytes.copy(local.memory, sg.addr(0) - local.addr, t.dst, t.dstOff, len);
            t.buffer.directory.leave();
        }
        sendEnd(qp, len, wr.opcode == WrOpcode.SEND_WITH_IMM, wr.immData, (wr.sendFlags & SendFlags.SOLICITED) != 0);
        return DONE;
    }

    /**
     * The region a post-time fast path copies its one gather entry of {@code len} bytes from, or null when
     * it is unsound (no such key, another protection domain, out of range): the queued path reports that.
     */
    private Region source(QpTransport qp, ScatterGather sg, int len) {
        Region local = device.region(sg.lkey(0));
        return local != null && !local.isWindow() && local.pdId == qp.pdId && local.covers(sg.addr(0), len) ? local : null;
    }

    /**
     * Gathers {@code len} bytes of a list into {@code mem} at {@code off}, the last 8 after a release fence:
     * a peer polling the end of the buffer (perftest's write-lat) then sees all of it. False on a bad local key.
     */
    private boolean writeTailLast(int pd, long[] addr, int[] length, int[] lkey, int base, int count, MemorySegment mem,
            long off, int len) {
        int tail = Math.min(8, len);
        int head = len - tail;
        boolean ok = head == 0 || Sgl.copy(device, pd, addr, length, lkey, base, count, 0, mem, off, head, false);
        VarHandle.releaseFence();
        return ok && Sgl.copy(device, pd, addr, length, lkey, base, count, head, mem, off + head, tail, false);
    }

    private int fallback() {
        device.counters.add(RdmaCounter.DIRECT_FALLBACKS, 1);
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
            w = device.link.device().openDirectory(node);
        } catch (FabricException e) {
            w = null;
        }
        VerbsDirectory d = w == null ? null : VerbsDirectory.open(w, device.link.device());
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
            w = device.link.device().openWindow(id, key);
        } catch (FabricException e) {
            return null;
        }
        p.windows[index] = w;
        return w;
    }
}
