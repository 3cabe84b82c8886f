package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RoceIp;
import dev.nupa.roce.verbs.ScatterGather;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.wire.AtomicEth;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.Bytes;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.Ieth;
import dev.nupa.roce.wire.ImmDt;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.Psn;
import dev.nupa.roce.wire.Reth;
import java.lang.foreign.MemorySegment;

/**
 * The requester of a QP (rxe's rxe_req.c in spirit): turns send requests into packets with 24-bit
 * PSNs, keeps the local ACK timer, and goes back to the first unacknowledged PSN on a timeout, a
 * sequence-error NAK or an RNR NAK (go-back-N, IBA 9.7.4). A UD QP's sends go out here as well.
 */
public final class RcRequester {
    /** Most header bytes a packet carries (BTH + AtomicETH) plus pad: the link MTU must leave room. */
    public static final int MAX_HEADERS = 48;
    /** Ask for an ACK at least every this many packets of a long message (bounds what a loss costs). */
    static final int PACKETS_PER_ACK = 64;

    /** {@link #run}'s {@code now} from a post: the clock is read only if a packet arms the ACK timer. */
    static final long NOW_UNREAD = Long.MIN_VALUE;

    private final QpTransport qp;
    private final SendQueue sq;
    private final RdmaDevice device;
    /** DCQCN's rate for this QP; paces it only while it talks RoCEv2 to an IP peer and a CNP lowered it (Pacing). */
    final Dcqcn rate;
    /** Next PSN to send. */
    public int psn;
    /** Last PSN the responder acknowledged. */
    public int ackedPsn;
    /** The highest PSN sent so far (for a READ, its last response's): a response beyond it is stray. */
    int highestSent;
    /** Bytes of the request at {@code sq.next} already sent (or, for a READ, already received). */
    public long sendOffset;
    public int rdOutstanding;
    private int packetsSinceAckReq;
    public long ackDeadline;
    private int retriesLeft;
    private int rnrRetriesLeft;
    private long rnrUntil;
    private int rnrPsn;
    /** A NAK-started retry from this PSN is under way: further NAKs or implied NAKs for it spend no retry (rxe's started_retry). */
    private boolean retrying;
    private int retryingFrom;

    RcRequester(QpTransport qp) {
        this.qp = qp;
        this.sq = qp.sq;
        this.device = qp.device;
        this.rate = new Dcqcn(device.congestion.lineRate());
    }

    void reset(int sqPsn) {
        psn = sqPsn;
        ackedPsn = Psn.add(sqPsn, -1);
        highestSent = ackedPsn;
        sendOffset = 0;
        rdOutstanding = 0;
        retriesLeft = qp.attr.retryCnt;
        rnrRetriesLeft = qp.attr.rnrRetry;
        ackDeadline = 0;
        rnrUntil = 0;
        retrying = false;
        packetsSinceAckReq = 0;
        rate.reset();
    }

    void stop() {
        ackDeadline = 0;
        rnrUntil = 0;
        sendOffset = 0;
    }

    private long timeoutNs() {
        int t = qp.attr.timeout;
        return t == 0 ? 0 : 4096L << t; // IBA 9.7.6.1.3: 4.096 us * 2^timeout
    }

    // ---- posting -------------------------------------------------------------------------------

    void post(SendWorkRequest wr) {
        int op = wr.opcode;
        if (qp.mode != TransferMode.DIRECT || (op != WrOpcode.RDMA_WRITE && !WrOpcodes.isSend(op)) || !postDirect(wr, op)) {
            postQueued(wr, op);
        }
    }

    /**
     * Checks and queues a request (the whole of {@link #post} but its direct fast path, which stays small
     * enough for the JIT to inline into the caller's code: a post that completes at once costs no call).
     */
    private void postQueued(SendWorkRequest wr, int op) {
        if (!WrOpcodes.valid(op)) {
            throw new RdmaException("send request opcode " + op + " is unknown; use a WrOpcode constant");
        }
        if (qp.type == QpType.UD && op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM) {
            throw new RdmaException(WrOpcode.name(op) + " is not available on a UD QP; UD carries SEND and SEND_WITH_IMM only");
        }
        boolean local = WrOpcodes.isLocal(op);
        if (op == WrOpcode.BIND_MW) {
            if (wr.bindMr == null) {
                throw new RdmaException("IBV_WR_BIND_MW names no memory region; set it with SendWorkRequest.bindMw(rkey, mr, addr, length, access)");
            }
            Access.checkWindow(wr.bindAccess);
        }
        if (local && wr.sg.count() != 0) {
            throw new RdmaException(WrOpcode.name(op) + " moves no data and takes no gather list; clear the request's sg");
        }
        if (wr.sg.count() > sq.maxSge) {
            throw new RdmaException("send request has " + wr.sg.count() + " gather entries; QP " + qp.qpn + " takes at most " + sq.maxSge);
        }
        long length = wr.sg.totalLength();
        if (length > Integer.MAX_VALUE) {
            throw new RdmaException("send request of " + length + " bytes exceeds the 2^31-1 bytes a message may hold");
        }
        if (WrOpcodes.isAtomic(op) && length != 8) {
            throw new RdmaException(WrOpcode.name(op) + " needs one 8-byte local buffer for the original value, not " + length + " bytes");
        }
        if (qp.type == QpType.UD && length > qp.attr.pathMtu) {
            throw new RdmaException("UD message of " + length + " bytes exceeds the path MTU of " + qp.attr.pathMtu);
        }
        if (qp.type == QpType.UD && wr.udDestIp != 0 && device.ip() == null) {
            throw new RdmaException("UD send names IP peer " + RoceIp.toString(wr.udDestIp) + " but node " + device.node()
                    + " has no IP layer for RoCEv2; attach it (RdmaContext.attachIp) or name a fabric node");
        }
        if (qp.type == QpType.UD && wr.udDestIp == 0 && (wr.udDestNode < 0 || wr.udDestNode >= device.link.device().geometry().maxNodes())) {
            throw new RdmaException("UD send names fabric node " + wr.udDestNode + "; set it with SendWorkRequest.ud(node, qpn, qkey)");
        }
        boolean inline = (wr.sendFlags & SendFlags.INLINE) != 0;
        if (inline && (length > sq.maxInline || WrOpcodes.isReadOrAtomic(op))) {
            throw new RdmaException(WrOpcodes.isReadOrAtomic(op) ? "INLINE does not apply to " + WrOpcode.name(op)
                    : "inline payload of " + length + " bytes exceeds the QP's max_inline_data of " + sq.maxInline);
        }
        if (sq.tail - sq.head == sq.capacity) {
            throw new RdmaException("send queue of QP " + qp.qpn + " is full (" + sq.capacity
                    + " requests); poll the send CQ for completions or create the QP with a larger max_send_wr");
        }
        int s = sq.slot(sq.tail);
        sq.wrId[s] = wr.wrId;
        sq.opcode[s] = op;
        sq.flags[s] = wr.sendFlags;
        sq.numSge[s] = wr.sg.count();
        for (int i = 0, b = s * sq.maxSge; i < wr.sg.count(); i++) { // lists are short: cheaper than three arraycopy calls
            sq.sgAddr[b + i] = wr.sg.addr(i);
            sq.sgLength[b + i] = wr.sg.length(i);
            sq.sgLkey[b + i] = wr.sg.lkey(i);
        }
        sq.length[s] = length;
        // Only the fields the operation reads later (the queue is walked per message on the hot path).
        if (local) {
            sq.rkey[s] = op == WrOpcode.BIND_MW ? wr.bindRkey : wr.invalidateRkey;
            if (op == WrOpcode.BIND_MW) {
                sq.bindLkey[s] = wr.bindMr.lkey();
                sq.remoteAddr[s] = wr.bindAddr;
                sq.compareAdd[s] = wr.bindLength;
                sq.imm[s] = wr.bindAccess;
            }
        } else if (op == WrOpcode.SEND_WITH_INV) {
            sq.imm[s] = wr.invalidateRkey; // as libibverbs' union of imm_data and invalidate_rkey
        } else if (op != WrOpcode.SEND && op != WrOpcode.SEND_WITH_IMM) {
            sq.remoteAddr[s] = wr.remoteAddr;
            sq.rkey[s] = wr.rkey;
            if (WrOpcodes.isAtomic(op)) {
                sq.compareAdd[s] = wr.compareAdd;
                sq.swap[s] = wr.swap;
            }
        }
        if (WrOpcodes.hasImm(op)) {
            sq.imm[s] = wr.immData;
        }
        if (qp.type == QpType.UD) {
            sq.udNode[s] = wr.udDestNode;
            sq.udIp[s] = wr.udDestIp;
            sq.udQpn[s] = wr.udRemoteQpn;
            sq.udQkey[s] = wr.udRemoteQkey < 0 ? qp.attr.qkey : wr.udRemoteQkey; // IBA 10.2.5: top bit set, use the QP's Q_Key
        }
        sq.state[s] = SendQueue.POSTED;
        sq.status[s] = WcStatus.SUCCESS;
        sq.received[s] = 0;
        sq.npsn[s] = 0;
        sq.tail++;
        sq.inlineCopied[s] = false;
        if (qp.state == QpState.ERR) {
            sq.state[s] = SendQueue.DONE;
            sq.status[s] = WcStatus.WR_FLUSH_ERR;
            qp.retire();
            return;
        }
        // A direct WRITE that completes right here needs no inline copy: the caller's buffer is still intact.
        boolean direct = qp.mode == TransferMode.DIRECT && op == WrOpcode.RDMA_WRITE && sq.head == sq.next && sq.next == sq.tail - 1;
        if (inline && !direct && !copyInline(s)) {
            return;
        }
        run(NOW_UNREAD);
        if (inline && direct && sq.state[s] != SendQueue.DONE) {
            copyInline(s); // it did not go yet (a limit, a fallback): keep the bytes for later
        }
    }

    /**
     * The post-time fast path of a DIRECT QP's RDMA WRITE or SEND of at most one gather entry with nothing
     * queued before it: placed at once ({@link DirectPlacement#writeNow} through the QP's cached check of
     * the rkey, {@link DirectPlacement#sendNow} into the peer's next receive), completed without a
     * send-queue entry (the order is the same, the queue being empty). False when anything is out of the
     * ordinary: the request then takes the queued path, which checks everything and reports errors.
     */
    private boolean postDirect(SendWorkRequest wr, int op) {
        ScatterGather sg = wr.sg;
        if (sg.count() > 1 || sq.head != sq.tail || qp.state != QpState.RTS || rnrUntil != 0 || qp.type != QpType.RC) {
            return false;
        }
        int len = sg.count() == 0 ? 0 : sg.length(0);
        if (len < 0 || ((wr.sendFlags & SendFlags.INLINE) != 0 && len > sq.maxInline)) {
            return false;
        }
        boolean write = op == WrOpcode.RDMA_WRITE;
        if (write ? len == 0 || device.direct.writeNow(qp, wr, len) != DirectPlacement.DONE
                : device.direct.sendNow(qp, wr, len) != DirectPlacement.DONE) {
            return false;
        }
        if ((qp.sqSigAll || (wr.sendFlags & SendFlags.SIGNALED) != 0) && !qp.sendCq.push(wr.wrId, WcStatus.SUCCESS,
                write ? WcOpcode.RDMA_WRITE : WcOpcode.SEND, len, 0, qp.qpn, 0, 0, 0, false)) {
            qp.enterError();
        }
        return true;
    }

    /** Copies request {@code s}'s payload into its inline slot (INLINE: the caller may reuse its buffer at once). */
    private boolean copyInline(int s) {
        if (!gather(s, 0, sq.inline, (long) s * sq.maxInline, (int) sq.length[s], false)) {
            qp.fail(s, WcStatus.LOC_PROT_ERR);
            return false;
        }
        sq.inlineCopied[s] = true;
        return true;
    }

    // ---- transmitting ---------------------------------------------------------------------

    long poll(long now) {
        if (rnrUntil != 0 && now - rnrUntil >= 0) {
            rnrUntil = 0;
            retryFrom(rnrPsn);
        }
        if (ackDeadline != 0 && now - ackDeadline >= 0) {
            onTimeout(now);
        }
        if (qp.state != QpState.ERR) {
            run(now);
        }
        long next = Long.MAX_VALUE;
        if (ackDeadline != 0) {
            next = ackDeadline;
        }
        if (rnrUntil != 0) {
            next = Math.min(next, rnrUntil);
        }
        if (sq.next < sq.tail && qp.state == QpState.RTS) {
            next = Math.min(next, now + 20_000); // blocked by a full ring or a limit: look again soon
            if (rate.limited()) {
                next = Math.min(next, Math.max(now, rate.nextSendAt())); // or paced: when the rate allows the next
            }
        }
        return next;
    }

    /** Sends what the queue holds, as far as the ring, the read/atomic limit and fences allow. */
    void run(long now) {
        boolean draining = qp.state == QpState.SQD; // IBA 10.3.1: SQD finishes what it started, starts nothing new
        if ((qp.state != QpState.RTS && !draining) || rnrUntil != 0) {
            return;
        }
        while (sq.next < sq.tail) {
            int s = sq.slot(sq.next);
            int op = sq.opcode[s];
            if (draining && sq.state[s] == SendQueue.POSTED) {
                return;
            }
            if (qp.type == QpType.UD) {
                if (!sendUd(s)) {
                    return;
                }
                sq.state[s] = SendQueue.DONE;
                sq.next++;
                qp.retire();
                continue;
            }
            if (sq.state[s] == SendQueue.POSTED && sendOffset == 0) {
                if ((sq.flags[s] & SendFlags.FENCE) != 0 && rdOutstanding > 0) {
                    return; // IBA 10.8.3.3: wait for earlier READs and atomics
                }
                if (WrOpcodes.isReadOrAtomic(op) && rdOutstanding >= Math.max(1, qp.attr.maxRdAtomic)) {
                    return;
                }
                if (WrOpcodes.isLocal(op)) {
                    if (sq.head != sq.next) {
                        return; // in order: a bind or invalidation takes effect after the requests before it completed
                    }
                    if (!executeLocal(s, op)) {
                        return;
                    }
                    continue;
                }
                if (qp.mode == TransferMode.DIRECT && WrOpcodes.placesDirectly(op) && sq.npsn[s] == 0) {
                    if (sq.head != sq.next) {
                        return; // keep the order: earlier packet requests first
                    }
                    int r = device.direct.execute(qp, s);
                    if (r != DirectPlacement.FALLBACK) {
                        sq.state[s] = SendQueue.DONE;
                        sq.status[s] = r == DirectPlacement.DONE ? WcStatus.SUCCESS : WcStatus.LOC_PROT_ERR;
                        sq.next++;
                        if (r == DirectPlacement.DONE) {
                            qp.retire();
                        } else {
                            qp.enterError();
                            return;
                        }
                        continue;
                    }
                }
                int mtu = qp.attr.pathMtu;
                sq.firstPsn[s] = psn;
                // Path MTUs are powers of two (QueuePair checks): a shift, not a 64-bit division.
                sq.npsn[s] = WrOpcodes.isAtomic(op) ? 1 : (int) Math.max(1, (sq.length[s] + mtu - 1) >>> Integer.numberOfTrailingZeros(mtu));
                if (WrOpcodes.isReadOrAtomic(op)) {
                    rdOutstanding++;
                }
                sq.state[s] = SendQueue.SENT; // PSNs assigned; packets follow
            }
            if (!sendPackets(s, now)) {
                return;
            }
            sq.next++;
            sendOffset = 0;
            psn = Psn.add(sq.lastPsn(s), 1);
        }
    }

    /**
     * Executes BIND_MW or LOCAL_INV {@code s} (rxe_do_local_ops): done, and completed in order. A failed bind completes
     * IBV_WC_MW_BIND_ERR, a failed invalidation IBV_WC_LOC_QP_OP_ERR (as rxe), and the QP enters ERR; false then.
     */
    private boolean executeLocal(int s, int op) {
        boolean bind = op == WrOpcode.BIND_MW;
        boolean ok = bind ? device.bindMw(qp.pdId, sq.rkey[s], sq.bindLkey[s], sq.remoteAddr[s], sq.compareAdd[s], sq.imm[s])
                : device.invalidate(qp.pdId, sq.rkey[s]);
        sq.state[s] = SendQueue.DONE;
        sq.status[s] = ok ? WcStatus.SUCCESS : bind ? WcStatus.MW_BIND_ERR : WcStatus.LOC_QP_OP_ERR;
        sq.next++;
        if (!ok) {
            device.counters.add(RdmaCounter.MW_BIND_ERRORS, 1);
            qp.enterError();
            return false;
        }
        qp.retire();
        return true;
    }

    /** Sends the packets of request {@code s} from {@link #sendOffset}; false when the ring is full or on error. */
    private boolean sendPackets(int s, long now) {
        int op = sq.opcode[s];
        int mtu = qp.attr.pathMtu;
        long len = sq.length[s];
        int dqp = qp.attr.destQpNum;
        if (WrOpcodes.isReadOrAtomic(op)) {
            int p = Psn.add(sq.firstPsn[s], (int) (sendOffset >>> Integer.numberOfTrailingZeros(mtu)));
            int hdr = op == WrOpcode.RDMA_READ ? Bth.LENGTH + Reth.LENGTH : Bth.LENGTH + AtomicEth.LENGTH;
            if (!mayPace(now)) {
                return false;
            }
            long o = device.claim(qp, hdr);
            if (o < 0) {
                return false;
            }
            MemorySegment m = device.txMemory();
            if (op == WrOpcode.RDMA_READ) {
                Bth.write(m, o, Opcode.RC_RDMA_READ_REQUEST, false, 0, Bth.DEFAULT_PKEY, dqp, true, p);
                Reth.write(m, o + Bth.LENGTH, sq.remoteAddr[s] + sendOffset, sq.rkey[s], (int) (len - sendOffset));
            } else {
                int opc = op == WrOpcode.ATOMIC_CMP_AND_SWP ? Opcode.RC_COMPARE_SWAP : Opcode.RC_FETCH_ADD;
                Bth.write(m, o, opc, false, 0, Bth.DEFAULT_PKEY, dqp, true, p);
                boolean cas = op == WrOpcode.ATOMIC_CMP_AND_SWP;
                AtomicEth.write(m, o + Bth.LENGTH, sq.remoteAddr[s], sq.rkey[s], cas ? sq.swap[s] : sq.compareAdd[s],
                        cas ? sq.compareAdd[s] : 0);
            }
            paced(now, hdr);
            sent(now, sq.lastPsn(s)); // a READ's responses use its whole PSN range
            return true;
        }
        boolean send = op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM || op == WrOpcode.SEND_WITH_INV;
        boolean imm = WrOpcodes.hasImm(op);
        boolean inv = op == WrOpcode.SEND_WITH_INV;
        do {
            boolean first = sendOffset == 0;
            int n = (int) Math.min(mtu, len - sendOffset);
            boolean last = sendOffset + n == len;
            int opc;
            if (first && last) {
                opc = send ? (imm ? Opcode.RC_SEND_ONLY_WITH_IMMEDIATE : inv ? Opcode.RC_SEND_ONLY_WITH_INVALIDATE : Opcode.RC_SEND_ONLY)
                        : (imm ? Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : Opcode.RC_RDMA_WRITE_ONLY);
            } else if (first) {
                opc = send ? Opcode.RC_SEND_FIRST : Opcode.RC_RDMA_WRITE_FIRST;
            } else if (last) {
                opc = send ? (imm ? Opcode.RC_SEND_LAST_WITH_IMMEDIATE : inv ? Opcode.RC_SEND_LAST_WITH_INVALIDATE : Opcode.RC_SEND_LAST)
                        : (imm ? Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : Opcode.RC_RDMA_WRITE_LAST);
            } else {
                opc = send ? Opcode.RC_SEND_MIDDLE : Opcode.RC_RDMA_WRITE_MIDDLE;
            }
            int flags = Opcode.flags(opc);
            int pad = (-n) & 3;
            int hdr = Bth.LENGTH + Opcode.extLength(opc);
            if (!mayPace(now)) {
                return false;
            }
            long o = device.claim(qp, hdr + n + pad);
            if (o < 0) {
                return false;
            }
            MemorySegment m = device.txMemory();
            int p = Psn.add(sq.firstPsn[s], (int) (sendOffset >>> Integer.numberOfTrailingZeros(mtu)));
            boolean ackReq = last || ++packetsSinceAckReq >= PACKETS_PER_ACK;
            if (ackReq) {
                packetsSinceAckReq = 0;
            }
            boolean solicited = last && (sq.flags[s] & SendFlags.SOLICITED) != 0;
            Bth.write(m, o, opc, solicited, pad, Bth.DEFAULT_PKEY, dqp, ackReq, p);
            long h = o + Bth.LENGTH;
            if ((flags & Opcode.RETH) != 0) {
                Reth.write(m, h, sq.remoteAddr[s], sq.rkey[s], (int) len);
                h += Reth.LENGTH;
            }
            if ((flags & Opcode.IMMDT) != 0) {
                ImmDt.write(m, h, sq.imm[s]);
                h += ImmDt.LENGTH;
            }
            if ((flags & Opcode.IETH) != 0) {
                Ieth.write(m, h, sq.imm[s]);
                h += Ieth.LENGTH;
            }
            if (!gather(s, sendOffset, m, h, n, true)) {
                device.abort();
                qp.fail(s, WcStatus.LOC_PROT_ERR);
                return false;
            }
            for (int i = 0; i < pad; i++) {
                m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, h + n + i, (byte) 0);
            }
            paced(now, hdr + n + pad);
            sent(now, p);
            sendOffset += n;
        } while (sendOffset < len);
        return true;
    }

    private boolean sendUd(int s) {
        int op = sq.opcode[s];
        int n = (int) sq.length[s];
        int opc = op == WrOpcode.SEND_WITH_IMM ? Opcode.UD_SEND_ONLY_WITH_IMMEDIATE : Opcode.UD_SEND_ONLY;
        int pad = (-n) & 3;
        int hdr = Bth.LENGTH + Opcode.extLength(opc);
        long o = device.claim(sq.udNode[s], sq.udIp[s], qp.qpn, hdr + n + pad);
        if (o < 0) {
            return false;
        }
        MemorySegment m = device.txMemory();
        Bth.write(m, o, opc, (sq.flags[s] & SendFlags.SOLICITED) != 0, pad, Bth.DEFAULT_PKEY, sq.udQpn[s], false, psn);
        psn = Psn.add(psn, 1);
        Deth.write(m, o + Bth.LENGTH, sq.udQkey[s], qp.qpn);
        long h = o + Bth.LENGTH + Deth.LENGTH;
        if (opc == Opcode.UD_SEND_ONLY_WITH_IMMEDIATE) {
            ImmDt.write(m, h, sq.imm[s]);
            h += ImmDt.LENGTH;
        }
        if (!gather(s, 0, m, h, n, true)) {
            device.abort();
            sq.state[s] = SendQueue.DONE;
            qp.fail(s, WcStatus.LOC_PROT_ERR);
            return false;
        }
        for (int i = 0; i < pad; i++) {
            m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, h + n + i, (byte) 0);
        }
        device.publish();
        return true;
    }

    /**
     * DCQCN's pacing: whether the next packet may leave now. Only a QP with an IP peer whose rate a CNP lowered is
     * held back; any other never reads the clock here.
     */
    private boolean mayPace(long now) {
        if (!rate.limited() || qp.attr.destIp == 0 || !device.congestion.enabled()) {
            return true;
        }
        return rate.maySend(now == NOW_UNREAD ? device.clock.getAsLong() : now);
    }

    private void paced(long now, int length) {
        if (rate.limited() && qp.attr.destIp != 0) {
            rate.sent(now == NOW_UNREAD ? device.clock.getAsLong() : now, length);
        }
    }

    private void sent(long now, int p) {
        device.publish();
        if (Psn.diff(p, highestSent) > 0) {
            highestSent = p;
        }
        if (ackDeadline == 0 && timeoutNs() != 0) {
            ackDeadline = (now == NOW_UNREAD ? device.clock.getAsLong() : now) + timeoutNs();
        }
    }

    /** Copies message bytes of request {@code s} (from its inline copy when {@code fromInline}). */
    private boolean gather(int s, long off, MemorySegment dst, long dstOff, int n, boolean fromInline) {
        if (fromInline && sq.fromInline(s)) {
            Bytes.copy(sq.inline, (long) s * sq.maxInline + off, dst, dstOff, n);
            return true;
        }
        int b = s * sq.maxSge;
        return Sgl.copy(device, qp.pdId, sq.sgAddr, sq.sgLength, sq.sgLkey, b, sq.numSge[s], off, dst, dstOff, n, false);
    }

    // ---- acknowledgements, retries --------------------------------------------------------

    /** The responder acknowledged every PSN up to {@code p}: forward progress. */
    void acked(int p, long now) {
        if (Psn.diff(p, ackedPsn) > 0) {
            ackedPsn = p;
            progressed(now);
        }
        rearm(now);
    }

    /** Forward progress (an ACK, or a READ response in order): the retry budgets start over (IBA 9.7.6.1.3). */
    void progressed(long now) {
        retriesLeft = qp.attr.retryCnt;
        rnrRetriesLeft = qp.attr.rnrRetry;
        retrying = false;
        rearm(now);
    }

    /** Restarts the ACK timer if anything is outstanding, else stops it. */
    void rearm(long now) {
        boolean outstanding = sq.head < sq.next || sendOffset > 0;
        ackDeadline = outstanding && timeoutNs() != 0 ? now + timeoutNs() : 0;
    }

    private void onTimeout(long now) {
        device.counters.add(RdmaCounter.TIMEOUTS, 1);
        ackDeadline = 0;
        if (sq.head == sq.next && sendOffset == 0) {
            return;
        }
        if (retriesLeft-- <= 0) {
            qp.fail(sq.slot(sq.head), WcStatus.RETRY_EXC_ERR);
            return;
        }
        retrying = false; // the timer's retry starts afresh; NAKs after it may start another
        retryFrom(firstUnacked());
        run(now);
        if (ackDeadline == 0) {
            rearm(now);
        }
    }

    /** The oldest PSN whose acknowledgement or response is missing: where a retry starts. */
    int firstUnacked() {
        for (long i = sq.head; i < sq.tail && i <= sq.next; i++) {
            int s = sq.slot(i);
            if (sq.state[s] == SendQueue.POSTED || sq.npsn[s] == 0) {
                break;
            }
            if (sq.state[s] == SendQueue.DONE) {
                continue; // a later READ or atomic whose response overtook an earlier one's
            }
            if (sq.opcode[s] == WrOpcode.RDMA_READ) {
                return Psn.add(sq.firstPsn[s], sq.received[s]);
            }
            int a = Psn.add(ackedPsn, 1);
            return WrOpcodes.isAtomic(sq.opcode[s]) || Psn.diff(a, sq.firstPsn[s]) < 0 ? sq.firstPsn[s] : a;
        }
        return Psn.add(ackedPsn, 1);
    }

    /** A sequence-error NAK or a lost response: resend from {@code p}, spending a retry (rxe does the same). */
    void nakRetry(int p, long now) {
        int first = firstUnacked();
        if (Psn.diff(first, p) < 0) {
            p = first; // an earlier READ or atomic still lacks its response: go back to it, not past it
        }
        if (retrying && Psn.diff(p, retryingFrom) <= 0) {
            return; // already going back to (or before) p: the responses of that retry are on their way
        }
        retrying = true;
        retryingFrom = p;
        if (retriesLeft-- <= 0) {
            qp.fail(sq.slot(sq.head), WcStatus.RETRY_EXC_ERR);
            return;
        }
        retryFrom(p);
        run(now);
    }

    void rnrNak(int p, int timerCode, long now) {
        device.counters.add(RdmaCounter.RNR_NAKS_RECEIVED, 1);
        if (Psn.diff(p, ackedPsn) <= 0) {
            return; // stale (duplicated or overtaken): what it names is acknowledged already
        }
        if (qp.attr.rnrRetry != 7 && rnrRetriesLeft-- <= 0) {
            int s = slotCovering(p);
            qp.fail(s >= 0 ? s : sq.slot(sq.head), WcStatus.RNR_RETRY_EXC_ERR);
            return;
        }
        rnrPsn = p;
        rnrUntil = now + RnrTimer.nanos(timerCode);
        ackDeadline = 0; // the RNR timer replaces the ACK timer while we wait
    }

    /** Go-back-N: the next packet sent is {@code p}, at its place in its request. */
    void retryFrom(int p) {
        for (long i = sq.head; i < sq.tail && i <= sq.next; i++) {
            int s = sq.slot(i);
            if (sq.state[s] != SendQueue.POSTED && sq.npsn[s] > 0 && sq.covers(s, p)) {
                device.counters.add(RdmaCounter.RETRANSMITS, 1);
                sq.next = i;
                sendOffset = (long) Psn.diff(p, sq.firstPsn[s]) * qp.attr.pathMtu;
                psn = p;
                packetsSinceAckReq = 0;
                return;
            }
        }
    }

    /** The slot of the sent request whose PSN range holds {@code p}, or -1. */
    int slotCovering(int p) {
        for (long i = sq.head; i < sq.tail && i <= sq.next; i++) {
            int s = sq.slot(i);
            if (sq.state[s] != SendQueue.POSTED && sq.npsn[s] > 0 && sq.covers(s, p)) {
                return s;
            }
        }
        return -1;
    }
}
