package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.wire.Aeth;
import dev.nupa.roce.wire.AtomicAckEth;
import dev.nupa.roce.wire.AtomicEth;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.Bytes;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.Ieth;
import dev.nupa.roce.wire.ImmDt;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.Psn;
import dev.nupa.roce.wire.Reth;
import dev.nupa.roce.wire.RocePacket;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The responder of a QP (rxe's rxe_resp.c in spirit): checks each request's PSN, opcode sequence,
 * access and length, places SEND and WRITE payloads, executes READs and atomics, and answers with
 * coalesced ACKs, NAKs and RNR NAKs (IBA 9.7.5). READ and atomic requests are remembered in up to
 * max_dest_rd_atomic resources, so a duplicate is answered from them: a READ is read again, an atomic's
 * saved original value is sent again, never executed twice (IBA 9.7.5.1.4). A UD QP's receives land here too.
 */
public final class RcResponder {
    public static final int MAX_RD_ATOMIC = 16;
    /**
     * Most AckReq requests one coalesced ACK covers: owed ACKs normally go out once per poll, but a
     * caller that polls the link far more often than the context must not starve the requester.
     */
    static final int ACK_BATCH = 16;
    /** A UD receive buffer starts with room for the GRH (IBA 11.4.1.2); the fabric has none, so it is zeroed. */
    static final int GRH_BYTES = 40;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final QpTransport qp;
    private final RdmaDevice device;
    /** Expected PSN. */
    public int ePsn;
    private int msn;
    /** A sequence-error NAK went out for the current ePSN: send no more until it moves (IBA 9.7.5.2.2). */
    private boolean nakSent;

    // The message being received: a SEND into a receive request, or a WRITE into a region.
    private static final int NONE = 0;
    private static final int SEND = 1;
    private static final int WRITE = 2;
    private int inMessage = NONE;
    private long msgOffset;
    private long recvWrId;
    /** A receive request is taken (a SEND in progress) and not yet completed. */
    private boolean recvHeld;
    private int recvCount;
    private final long[] recvAddr;
    private final int[] recvLength;
    private final int[] recvLkey;
    private Region writeMr;
    private long writeVa;
    private long writeLength;

    // READ and atomic resources: a ring of MAX_RD_ATOMIC, the newest at (resNext - 1).
    private final int[] resPsn = new int[MAX_RD_ATOMIC];
    private final int[] resNpsn = new int[MAX_RD_ATOMIC];
    private final boolean[] resAtomic = new boolean[MAX_RD_ATOMIC];
    private final long[] resVa = new long[MAX_RD_ATOMIC];
    private final int[] resRkey = new int[MAX_RD_ATOMIC];
    private final long[] resLength = new long[MAX_RD_ATOMIC];
    private final long[] resOriginal = new long[MAX_RD_ATOMIC];
    private final int[] resMsn = new int[MAX_RD_ATOMIC];
    private int resNext;
    private int resCount;

    // Responses waiting to go out, in order: resource index and the PSN to continue from.
    private final int[] serveRes = new int[MAX_RD_ATOMIC * 2];
    private final int[] servePsn = new int[MAX_RD_ATOMIC * 2];
    private int serveHead;
    private int serveTail;

    private boolean ackPending;
    /** Requests acknowledged by the owed ACK: at {@link #ACK_BATCH} it goes out without waiting for a poll. */
    private int acksOwed;
    private int pendingNak = -1; // syndrome of a NAK the ring refused, or -1
    private int pendingNakPsn;

    RcResponder(QpTransport qp) {
        this.qp = qp;
        this.device = qp.device;
        int sge = qp.srq != null ? qp.srq.maxSge : qp.rq.maxSge;
        recvAddr = new long[sge];
        recvLength = new int[sge];
        recvLkey = new int[sge];
    }

    void reset(int rqPsn) {
        ePsn = rqPsn;
        msn = 0;
        nakSent = false;
        stop(false);
    }

    /**
     * Stops the responder; with {@code flush} (entering ERR) a receive a SEND had taken completes WR_FLUSH_ERR, and what
     * the peer is owed for requests already executed goes out first (READ responses, a NAK, the coalesced ACK), ahead
     * of anything sent after the move to ERR (the CM's DREQ or DREP): ERR ends the QP, not the requests it executed, so
     * the peer completes them with SUCCESS rather than flushing them (rxe acknowledges each packet at once). A NAK or
     * ACK the ring refuses still goes out from ERR; READ responses it refuses are dropped, and the ACK with them.
     */
    void stop(boolean flush) {
        if (flush) {
            flush();
        }
        if (recvHeld && flush) {
            qp.completeRecv(recvWrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, 0, 0, 0, false);
        }
        int nakOwed = flush ? pendingNak : -1; // a class C NAK the ring refused still goes out from ERR
        boolean ackOwed = flush && ackPending && serveHead == serveTail; // never ahead of READ responses it lacks
        recvHeld = false;
        inMessage = NONE;
        resCount = 0;
        serveHead = serveTail = 0;
        ackPending = ackOwed;
        acksOwed = 0;
        pendingNak = nakOwed;
        writeMr = null;
    }

    // ---- RC requests ----------------------------------------------------------------------

    void onRequest(RocePacket pkt, long now) {
        QpState st = qp.state;
        if (st != QpState.RTR && st != QpState.RTS && st != QpState.SQD) {
            device.counters.add(RdmaCounter.WRONG_STATE, 1);
            return;
        }
        MemorySegment m = pkt.segment();
        int p = pkt.psn();
        int d = Psn.diff(p, ePsn);
        if (d > 0) {
            device.counters.add(RdmaCounter.SEQUENCE_ERRORS, 1);
            if (!nakSent) {
                nakSent = true;
                nak(Aeth.nak(Aeth.NAK_PSN_SEQUENCE_ERROR), ePsn);
            }
            return;
        }
        if (d < 0) {
            duplicate(pkt, p);
            return;
        }
        int opcode = pkt.opcode();
        int flags = pkt.flags();
        // IBA 9.7.5.2.1 (C9-92..): the opcode must continue the message in progress, or start a new one.
        boolean isSend = opcode <= Opcode.RC_SEND_ONLY_WITH_IMMEDIATE || (flags & Opcode.IETH) != 0;
        boolean continues = (flags & Opcode.FIRST) == 0 && (opcode <= Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE || isSend);
        if (continues ? inMessage != (isSend ? SEND : WRITE) : inMessage != NONE) {
            classC(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        int need = (flags & Opcode.RETH) != 0 && !isSend && opcode != Opcode.RC_RDMA_READ_REQUEST ? Access.REMOTE_WRITE
                : opcode == Opcode.RC_RDMA_READ_REQUEST ? Access.REMOTE_READ
                : (flags & Opcode.ATOMIC_ETH) != 0 ? Access.REMOTE_ATOMIC : 0;
        if (need != 0 && (qp.attr.qpAccessFlags & need) == 0) {
            classC(Aeth.NAK_INVALID_REQUEST, p); // rxe treats an operation the QP does not enable as an invalid request
            return;
        }
        if (opcode == Opcode.RC_RDMA_READ_REQUEST) {
            read(pkt, p);
        } else if ((flags & Opcode.ATOMIC_ETH) != 0) {
            atomic(pkt, p, opcode == Opcode.RC_COMPARE_SWAP);
        } else if (isSend) {
            send(pkt, p, flags);
        } else {
            write(pkt, p, flags);
        }
    }

    private boolean payloadLengthOk(RocePacket pkt, int flags) {
        int n = pkt.payloadLength();
        int mtu = qp.attr.pathMtu;
        // IBA 9.7.5.2.6 (C9-110..): FIRST and MIDDLE carry exactly one MTU, LAST 1..MTU, ONLY 0..MTU.
        if ((flags & Opcode.LAST) == 0) {
            return n == mtu;
        }
        return (flags & Opcode.FIRST) != 0 ? n <= mtu : n >= 1 && n <= mtu;
    }

    private void send(RocePacket pkt, int p, int flags) {
        if (!payloadLengthOk(pkt, flags)) {
            classC(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        if ((flags & Opcode.FIRST) != 0) {
            if (!takeReceive(p)) {
                return;
            }
            inMessage = SEND;
            msgOffset = 0;
        }
        int n = pkt.payloadLength();
        if (msgOffset + n > Sgl.length(recvLength, 0, recvCount)) {
            // IBA 9.7.5.2.3: the message does not fit the receive buffers.
            recvHeld = false;
            qp.completeRecv(recvWrId, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0, 0, 0, false);
            classC(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        if (n > 0 && !Sgl.copy(device, qp.pdId, recvAddr, recvLength, recvLkey, 0, recvCount, msgOffset, pkt.segment(),
                pkt.payload(), n, true)) {
            recvHeld = false;
            qp.completeRecv(recvWrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0, 0, 0, false);
            classC(Aeth.NAK_REMOTE_OPERATIONAL_ERROR, p);
            return;
        }
        msgOffset += n;
        if ((flags & Opcode.LAST) != 0) {
            boolean imm = (flags & Opcode.IMMDT) != 0;
            boolean inv = (flags & Opcode.IETH) != 0;
            int immData = imm ? ImmDt.get(pkt.segment(), pkt.immDt()) : inv ? Ieth.rkey(pkt.segment(), pkt.ieth()) : 0;
            if (inv && !device.invalidate(qp.pdId, immData)) {
                // IBA 10.6.7.2.4 / rxe_resp.c (RESPST_ERR_INVALIDATE_RKEY): an rkey this QP may not invalidate (no
                // bound window of its domain with that key) is an invalid request; the receive completes with it too.
                device.counters.add(RdmaCounter.INVALIDATE_ERRORS, 1);
                inMessage = NONE;
                recvHeld = false;
                qp.completeRecv(recvWrId, WcStatus.REM_INV_REQ_ERR, WcOpcode.RECV, 0, 0, 0, 0, 0, false);
                classC(Aeth.NAK_INVALID_REQUEST, p);
                return;
            }
            inMessage = NONE;
            recvHeld = false;
            msn = Psn.add(msn, 1);
            boolean se = pkt.solicited();
            if (!qp.completeRecv(recvWrId, WcStatus.SUCCESS, WcOpcode.RECV, (int) msgOffset, immData,
                    imm ? WorkCompletion.WITH_IMM : inv ? WorkCompletion.WITH_INV : 0, 0, 0, se)) {
                qp.enterError();
                return;
            }
        }
        advance(pkt);
    }

    private void write(RocePacket pkt, int p, int flags) {
        if (!payloadLengthOk(pkt, flags)) {
            classC(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        MemorySegment m = pkt.segment();
        if ((flags & Opcode.FIRST) != 0) {
            long va = Reth.va(m, pkt.reth());
            int rkey = Reth.rkey(m, pkt.reth());
            long len = Integer.toUnsignedLong(Reth.dmaLength(m, pkt.reth()));
            Region mr = null;
            if (len > 0) { // IBA 9.4.4: a zero-length RDMA checks no key
                mr = remoteRegion(rkey, va, len, Access.REMOTE_WRITE);
                if (mr == null) {
                    classC(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                    return;
                }
            }
            inMessage = WRITE;
            writeMr = mr;
            writeVa = va;
            writeLength = len;
            msgOffset = 0;
        }
        int n = pkt.payloadLength();
        boolean last = (flags & Opcode.LAST) != 0;
        if (msgOffset + n > writeLength || (last && msgOffset + n != writeLength)) {
            classC(Aeth.NAK_INVALID_REQUEST, p); // the packets must add up to the DMA length (C9-113)
            return;
        }
        boolean imm = (flags & Opcode.IMMDT) != 0;
        if (imm && last && !takeReceive(p)) {
            if ((flags & Opcode.FIRST) != 0) {
                inMessage = NONE; // an RNR NAK changes no message state (IBA 9.7.5.2.8): the ONLY packet comes again
            }
            return; // RNR: the payload of this packet is placed when it comes again
        }
        if (n > 0) {
            if (writeMr == null || writeMr.closed) {
                classC(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
                return;
            }
            Bytes.copy(m, pkt.payload(), writeMr.memory, writeVa - writeMr.addr + msgOffset, n);
        }
        msgOffset += n;
        if (last) {
            inMessage = NONE;
            recvHeld = false;
            msn = Psn.add(msn, 1);
            if (imm && !qp.completeRecv(recvWrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) writeLength,
                    ImmDt.get(m, pkt.immDt()), WorkCompletion.WITH_IMM, 0, 0, pkt.solicited())) {
                qp.enterError();
                return;
            }
        }
        advance(pkt);
    }

    private void read(RocePacket pkt, int p) {
        MemorySegment m = pkt.segment();
        long va = Reth.va(m, pkt.reth());
        int rkey = Reth.rkey(m, pkt.reth());
        long len = Integer.toUnsignedLong(Reth.dmaLength(m, pkt.reth()));
        if (qp.attr.maxDestRdAtomic == 0) {
            classC(Aeth.NAK_INVALID_REQUEST, p);
            return;
        }
        if (len > 0 && remoteRegion(rkey, va, len, Access.REMOTE_READ) == null) {
            classC(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        int mtu = qp.attr.pathMtu;
        int npsn = (int) Math.max(1, (len + mtu - 1) / mtu);
        msn = Psn.add(msn, 1);
        int r = saveResource(p, npsn, false, va, rkey, len, 0);
        ePsn = Psn.add(p, npsn);
        nakSent = false;
        serve(r, p);
    }

    private void atomic(RocePacket pkt, int p, boolean cas) {
        MemorySegment m = pkt.segment();
        long at = pkt.atomicEth();
        long va = AtomicEth.va(m, at);
        int rkey = AtomicEth.rkey(m, at);
        if (qp.attr.maxDestRdAtomic == 0 || (va & 7) != 0) {
            classC(Aeth.NAK_INVALID_REQUEST, p); // IBA 9.4.5: atomics need 8-byte alignment
            return;
        }
        Region mr = remoteRegion(rkey, va, 8, Access.REMOTE_ATOMIC);
        if (mr == null) {
            classC(Aeth.NAK_REMOTE_ACCESS_ERROR, p);
            return;
        }
        long original = execute(mr.memory, va - mr.addr, cas, AtomicEth.swapAdd(m, at), AtomicEth.compare(m, at));
        msn = Psn.add(msn, 1);
        int r = saveResource(p, 1, true, va, rkey, 8, original);
        ePsn = Psn.add(p, 1);
        nakSent = false;
        serve(r, p);
    }

    /** Executes an atomic on 8 bytes of fabric or local memory (host order, as rxe); returns the original value. */
    static long execute(MemorySegment mem, long offset, boolean cas, long swapAdd, long compare) {
        if (cas) {
            return (long) LONG.compareAndExchange(mem, offset, compare, swapAdd);
        }
        return (long) LONG.getAndAdd(mem, offset, swapAdd);
    }

    private int saveResource(int p, int npsn, boolean atomic, long va, int rkey, long len, long original) {
        int r = resNext;
        for (int i = serveHead; i < serveTail; i++) {
            if (serveRes[i % serveRes.length] == r) {
                serveRes[i % serveRes.length] = -1; // its request is gone from the ring: a duplicate of it will be dropped too
            }
        }
        resNext = (resNext + 1) % Math.max(1, qp.attr.maxDestRdAtomic);
        resCount = Math.min(resCount + 1, Math.max(1, qp.attr.maxDestRdAtomic));
        resPsn[r] = p;
        resNpsn[r] = npsn;
        resAtomic[r] = atomic;
        resVa[r] = va;
        resRkey[r] = rkey;
        resLength[r] = len;
        resOriginal[r] = original;
        resMsn[r] = msn;
        return r;
    }

    /** The region {@code rkey} names, if it belongs to this QP's domain, grants {@code access} and holds the range. */
    private Region remoteRegion(int rkey, long va, long len, int access) {
        Region mr = device.region(rkey);
        if (mr == null || mr.pdId != qp.pdId || (mr.access & access) == 0 || !mr.covers(va, len)) {
            return null;
        }
        return mr;
    }

    /** Takes a receive request for a SEND or WRITE_WITH_IMM; sends an RNR NAK when there is none (IBA 9.7.5.2.8). */
    private boolean takeReceive(int p) {
        if (qp.mirror != null) {
            qp.absorbDirect(); // receives the requester filled directly come first: they were earlier messages
            if (qp.state == QpState.ERR) {
                return false;
            }
        }
        RecvQueue q = qp.srq != null ? qp.srq : qp.rq;
        int s = q.peek();
        // With a mirror the receive is taken by moving its shared position: a requester's claim of it (a
        // direct SEND not yet stamped) wins, and this packet waits like one that found no receive.
        if (s < 0 || (qp.mirror != null && !qp.mirror.takeForPacket(q.head))) {
            device.counters.add(RdmaCounter.RNR_NAKS_SENT, 1);
            nak(Aeth.rnrNak(qp.attr.minRnrTimer), p);
            return false;
        }
        recvWrId = q.wrId[s];
        recvCount = q.numSge[s];
        for (int i = 0, b = s * q.maxSge; i < recvCount; i++) { // lists are short: cheaper than three arraycopy calls
            recvAddr[i] = q.sgAddr[b + i];
            recvLength[i] = q.sgLength[b + i];
            recvLkey[i] = q.sgLkey[b + i];
        }
        q.pop();
        recvHeld = true;
        return true;
    }

    /** A SEND the requester placed directly completed here: one more message (the MSN of later ACKs counts it). */
    void receivedDirect() {
        msn = Psn.add(msn, 1);
    }

    /** The request was executed: expect the next PSN and owe an ACK if the requester asked for one. */
    private void advance(RocePacket pkt) {
        ePsn = Psn.add(ePsn, 1);
        nakSent = false;
        if (pkt.ackReq()) {
            ackPending = true;
            if (++acksOwed >= ACK_BATCH) {
                flush();
            }
        }
    }

    private void duplicate(RocePacket pkt, int p) {
        device.counters.add(RdmaCounter.DUPLICATES, 1);
        int opcode = pkt.opcode();
        if (opcode == Opcode.RC_RDMA_READ_REQUEST || (pkt.flags() & Opcode.ATOMIC_ETH) != 0) {
            boolean atomic = opcode != Opcode.RC_RDMA_READ_REQUEST;
            for (int k = 1; k <= resCount; k++) {
                int max = Math.max(1, qp.attr.maxDestRdAtomic);
                int r = ((resNext - k) % max + max) % max;
                int d = Psn.diff(p, resPsn[r]);
                if (resAtomic[r] == atomic && d >= 0 && d < resNpsn[r]) {
                    if (atomic && d != 0) {
                        break;
                    }
                    serve(r, p);
                    return;
                }
            }
            return; // no saved state (too old): drop it, the requester times out (rxe does the same)
        }
        // A duplicate SEND or WRITE is not executed again; acknowledge what we have (C9-104).
        ackPending = true;
    }

    // ---- responses ------------------------------------------------------------------------

    private void serve(int r, int fromPsn) {
        if (serveTail - serveHead == serveRes.length) {
            serveHead++; // the oldest is superseded; the requester will ask again
        }
        serveRes[serveTail % serveRes.length] = r;
        servePsn[serveTail % serveRes.length] = fromPsn;
        serveTail++;
        flush();
    }

    /** Sends what is owed: a refused NAK, then READ responses and atomic ACKs, then a coalesced ACK. */
    void flush() {
        while (serveHead < serveTail) {
            int i = serveHead % serveRes.length;
            if (serveRes[i] >= 0 && !respond(serveRes[i], i)) {
                return; // the ring is full: continue on the next poll, and hold the ACK back behind the data
            }
            serveHead++;
        }
        flushNak(); // after the responses it follows in PSN order (IBA 9.7.5.1)
        if (pendingNak >= 0) {
            return;
        }
        if (ackPending) {
            long o = device.claim(qp, Bth.LENGTH + Aeth.LENGTH);
            if (o < 0) {
                return;
            }
            MemorySegment m = device.txMemory();
            Bth.write(m, o, Opcode.RC_ACKNOWLEDGE, false, 0, Bth.DEFAULT_PKEY, qp.attr.destQpNum, false, Psn.add(ePsn, -1));
            Aeth.write(m, o + Bth.LENGTH, Aeth.ack(Aeth.CREDITS_INVALID), msn);
            device.publish();
            device.counters.add(RdmaCounter.ACKS_SENT, 1);
            ackPending = false;
            acksOwed = 0;
        }
    }

    /** Sends the responses of resource {@code r} from servePsn[i]; false when the ring is full (progress kept). */
    private boolean respond(int r, int i) {
        int dqp = qp.attr.destQpNum;
        if (resAtomic[r]) {
            long o = device.claim(qp, Bth.LENGTH + Aeth.LENGTH + AtomicAckEth.LENGTH);
            if (o < 0) {
                return false;
            }
            MemorySegment m = device.txMemory();
            Bth.write(m, o, Opcode.RC_ATOMIC_ACKNOWLEDGE, false, 0, Bth.DEFAULT_PKEY, dqp, false, resPsn[r]);
            Aeth.write(m, o + Bth.LENGTH, Aeth.ack(Aeth.CREDITS_INVALID), resMsn[r]);
            AtomicAckEth.write(m, o + Bth.LENGTH + Aeth.LENGTH, resOriginal[r]);
            device.publish();
            return true;
        }
        Region mr = resLength[r] > 0 ? device.region(resRkey[r]) : null;
        if (resLength[r] > 0 && (mr == null || mr.pdId != qp.pdId || (mr.access & Access.REMOTE_READ) == 0
                || !mr.covers(resVa[r], resLength[r]))) {
            return true; // deregistered since: nothing to send, the requester's timer decides
        }
        int mtu = qp.attr.pathMtu;
        int last = resNpsn[r] - 1;
        int from = Psn.diff(servePsn[i], resPsn[r]);
        if (from < 0 || from > last) {
            return true; // not a PSN of this resource (cannot happen while the ring is not reused under it)
        }
        for (int k = from; k <= last; k++) {
            long off = (long) k * mtu;
            int n = (int) Math.min(mtu, resLength[r] - off);
            int opc = last == 0 ? Opcode.RC_RDMA_READ_RESPONSE_ONLY : k == 0 ? Opcode.RC_RDMA_READ_RESPONSE_FIRST
                    : k == last ? Opcode.RC_RDMA_READ_RESPONSE_LAST : Opcode.RC_RDMA_READ_RESPONSE_MIDDLE;
            int pad = (-n) & 3;
            int hdr = Bth.LENGTH + Opcode.extLength(opc);
            long o = device.claim(qp, hdr + n + pad);
            if (o < 0) {
                servePsn[i] = Psn.add(resPsn[r], k);
                return false;
            }
            MemorySegment m = device.txMemory();
            Bth.write(m, o, opc, false, pad, Bth.DEFAULT_PKEY, dqp, false, Psn.add(resPsn[r], k));
            if ((Opcode.flags(opc) & Opcode.AETH) != 0) {
                Aeth.write(m, o + Bth.LENGTH, Aeth.ack(Aeth.CREDITS_INVALID), resMsn[r]);
            }
            if (n > 0) {
                MemorySegment.copy(mr.memory, resVa[r] - mr.addr + off, m, o + hdr, n);
            }
            for (int b = 0; b < pad; b++) {
                m.set(ValueLayout.JAVA_BYTE, o + hdr + n + b, (byte) 0);
            }
            device.publish();
        }
        return true;
    }

    private void nak(int syndrome, int p) {
        long o = serveHead < serveTail ? -1 : device.claim(qp, Bth.LENGTH + Aeth.LENGTH);
        if (o < 0) { // the ring is full, or READ responses it must follow still wait: it goes out in flush()
            pendingNak = syndrome;
            pendingNakPsn = p;
            return;
        }
        MemorySegment m = device.txMemory();
        Bth.write(m, o, Opcode.RC_ACKNOWLEDGE, false, 0, Bth.DEFAULT_PKEY, qp.attr.destQpNum, false, p);
        Aeth.write(m, o + Bth.LENGTH, syndrome, msn);
        device.publish();
        if (Aeth.type(syndrome) == Aeth.TYPE_NAK) {
            device.counters.add(RdmaCounter.NAKS_SENT, 1);
        }
    }

    /** IBA 9.9.3.1.3 class C: NAK the request and move the QP to ERR (the requester gets the matching status). */
    private void classC(int nakCode, int p) {
        ackPending = false; // the NAK acknowledges every request before it: an owed ACK would only trail it
        acksOwed = 0;
        nak(Aeth.nak(nakCode), p);
        qp.responderFailed(nakCode);
    }

    /** Sends a NAK the ring refused earlier. */
    private void flushNak() {
        if (pendingNak >= 0) {
            int syndrome = pendingNak;
            pendingNak = -1;
            nak(syndrome, pendingNakPsn);
        }
    }

    // ---- UD -------------------------------------------------------------------------------

    void onDatagram(RocePacket pkt, int srcNode, MemorySegment grh) {
        if (qp.state != QpState.RTR && qp.state != QpState.RTS && qp.state != QpState.SQD) {
            device.counters.add(RdmaCounter.WRONG_STATE, 1);
            return;
        }
        MemorySegment m = pkt.segment();
        if (Deth.qkey(m, pkt.deth()) != qp.attr.qkey) {
            device.counters.add(RdmaCounter.UD_DROPS, 1); // IBA 10.2.5: a datagram with the wrong Q_Key is dropped silently
            return;
        }
        RecvQueue q = qp.srq != null ? qp.srq : qp.rq;
        int s = q.peek();
        // With a mirror the receive is taken by moving its shared position: a requester's claim of it (a
        // direct SEND not yet stamped) wins, and this packet waits like one that found no receive.
        if (s < 0 || (qp.mirror != null && !qp.mirror.takeForPacket(q.head))) {
            device.counters.add(RdmaCounter.UD_DROPS, 1); // UD has no RNR: no receive, no delivery (IBA 9.8.3)
            return;
        }
        q.pop();
        int n = pkt.payloadLength();

        boolean imm = (pkt.flags() & Opcode.IMMDT) != 0;
        int immData = imm ? ImmDt.get(m, pkt.immDt()) : 0;
        int srcQp = Deth.srcQp(m, pkt.deth());
        boolean se = pkt.solicited();
        if (GRH_BYTES + n > Sgl.length(q.sgLength, s * q.maxSge, q.numSge[s])) {
            qp.completeRecv(q.wrId[s], WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0, srcQp, srcNode, se);
            return;
        }
        boolean ok = Sgl.copy(device, qp.pdId, q.sgAddr, q.sgLength, q.sgLkey, s * q.maxSge, q.numSge[s], 0, grh, 0, GRH_BYTES, true)
                && (n == 0 || Sgl.copy(device, qp.pdId, q.sgAddr, q.sgLength, q.sgLkey, s * q.maxSge, q.numSge[s], GRH_BYTES, m,
                        pkt.payload(), n, true));
        qp.completeRecv(q.wrId[s], ok ? WcStatus.SUCCESS : WcStatus.LOC_PROT_ERR, WcOpcode.RECV, ok ? GRH_BYTES + n : 0,
                immData, WorkCompletion.GRH | (imm ? WorkCompletion.WITH_IMM : 0), srcQp, srcNode, se);
    }
}
