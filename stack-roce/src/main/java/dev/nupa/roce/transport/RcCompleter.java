package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.wire.Aeth;
import dev.nupa.roce.wire.AtomicAckEth;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.Psn;
import dev.nupa.roce.wire.RocePacket;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The completer of an RC QP (rxe's rxe_comp.c in spirit): takes ACKs, NAKs, READ responses and atomic
 * ACKs from the responder, places returned data, completes send requests in order, and turns NAKs
 * into retries or errors (IBA 9.7.5.2).
 */
final class RcCompleter {
    private final QpTransport qp;
    private final SendQueue sq;
    private final RdmaDevice device;

    RcCompleter(QpTransport qp) {
        this.qp = qp;
        this.sq = qp.sq;
        this.device = qp.device;
    }

    void onResponse(RocePacket pkt, long now) {
        if (qp.state != QpState.RTS && qp.state != QpState.SQD) {
            device.counters.add(RdmaCounter.WRONG_STATE, 1);
            return;
        }
        MemorySegment m = pkt.segment();
        int p = pkt.psn();
        RcRequester req = qp.requester;
        // A response for a PSN we never sent is stray (IBA 9.7.5.1.1: ignore it).
        if (Psn.diff(p, req.highestSent) > 0) {
            device.counters.add(RdmaCounter.STRAY_RESPONSES, 1);
            return;
        }
        int opcode = pkt.opcode();
        if (opcode == Opcode.RC_ACKNOWLEDGE) {
            int syndrome = Aeth.syndrome(m, pkt.aeth());
            switch (Aeth.type(syndrome)) {
                case Aeth.TYPE_ACK -> ackUpTo(p, now);
                case Aeth.TYPE_RNR_NAK -> {
                    ackUpTo(Psn.add(p, -1), now);
                    if (qp.state == QpState.RTS || qp.state == QpState.SQD) {
                        req.rnrNak(p, Aeth.value(syndrome), now);
                    }
                }
                case Aeth.TYPE_NAK -> nak(p, Aeth.value(syndrome), now);
                default -> device.counters.add(RdmaCounter.MALFORMED, 1);
            }
        } else if (opcode == Opcode.RC_ATOMIC_ACKNOWLEDGE) {
            ackUpTo(Psn.add(p, -1), now);
            int s = req.slotCovering(p);
            if (s < 0 || !WrOpcodes.isAtomic(sq.opcode[s]) || sq.state[s] == SendQueue.DONE || qp.state == QpState.ERR) {
                device.counters.add(RdmaCounter.STRAY_RESPONSES, 1);
                return;
            }
            long original = AtomicAckEth.originalData(m, pkt.atomicAckEth());
            MemorySegment tmp = device.scratch8;
            tmp.set(ValueLayout.JAVA_LONG, 0, original); // host order, as rxe stores it
            if (!Sgl.copy(device, qp.pdId, sq.sgAddr, sq.sgLength, sq.sgLkey, s * sq.maxSge, sq.numSge[s], 0, tmp, 0, 8, true)) {
                qp.fail(s, WcStatus.LOC_PROT_ERR);
                return;
            }
            done(s, now, p);
        } else {
            readResponse(pkt, p, now);
        }
        qp.retire();
    }

    private void readResponse(RocePacket pkt, int p, long now) {
        RcRequester req = qp.requester;
        int flags = pkt.flags();
        int s = req.slotCovering(p);
        if ((flags & Opcode.AETH) != 0) {
            // FIRST, LAST and ONLY carry an AETH: every request before this READ is acknowledged (not the
            // READ's own earlier PSNs, which its responses, not an ACK, account for).
            boolean ours = s >= 0 && sq.opcode[s] == WrOpcode.RDMA_READ;
            ackUpTo(Psn.add(ours ? sq.firstPsn[s] : p, -1), now);
            s = req.slotCovering(p); // acknowledging may have moved the queue on
        }
        if (s < 0 || sq.opcode[s] != WrOpcode.RDMA_READ || sq.state[s] == SendQueue.DONE || qp.state == QpState.ERR) {
            device.counters.add(RdmaCounter.STRAY_RESPONSES, 1);
            return;
        }
        int expected = Psn.add(sq.firstPsn[s], sq.received[s]);
        int d = Psn.diff(p, expected);
        if (d < 0) {
            device.counters.add(RdmaCounter.DUPLICATES, 1);
            return;
        }
        if (d > 0) {
            // A response went missing: ask again from the one we lack (IBA 9.7.5.1.3).
            req.nakRetry(expected, now);
            return;
        }
        int mtu = qp.attr.pathMtu;
        long off = (long) sq.received[s] * mtu;
        int n = pkt.payloadLength();
        boolean last = (flags & Opcode.LAST) != 0;
        long remaining = sq.length[s] - off;
        if (last ? n != remaining : n != mtu || remaining <= mtu) {
            qp.fail(s, WcStatus.BAD_RESP_ERR); // IBA 9.7.5.1.4: a response of the wrong length is a bad response
            return;
        }
        if (n > 0 && !Sgl.copy(device, qp.pdId, sq.sgAddr, sq.sgLength, sq.sgLkey, s * sq.maxSge, sq.numSge[s], off,
                pkt.segment(), pkt.payload(), n, true)) {
            qp.fail(s, WcStatus.LOC_PROT_ERR);
            return;
        }
        sq.received[s]++;
        if (last) {
            done(s, now, p);
        } else {
            req.progressed(now); // keeps the timer from firing mid-read
        }
    }

    /** A READ or atomic got its response: everything before it is acknowledged too, unless an earlier one still waits. */
    private void done(int s, long now, int p) {
        sq.state[s] = SendQueue.DONE;
        ackUpTo(p, now);
    }

    /** An ACK (explicit or implied) for every PSN up to {@code p}. */
    private void ackUpTo(int p, long now) {
        RcRequester req = qp.requester;
        for (long i = sq.head; i < sq.tail && i <= sq.next; i++) {
            int s = sq.slot(i);
            if (sq.state[s] == SendQueue.POSTED || sq.npsn[s] == 0) {
                break;
            }
            if (sq.state[s] == SendQueue.DONE) {
                continue;
            }
            if (Psn.diff(p, sq.firstPsn[s]) < 0) {
                break; // not reached yet
            }
            if (WrOpcodes.isReadOrAtomic(sq.opcode[s])) {
                // An ACK past a READ or atomic whose response never came: the response was lost (IBA 9.7.5.1.3).
                req.nakRetry(req.firstUnacked(), now);
                return;
            }
            if (Psn.diff(p, sq.lastPsn(s)) < 0) {
                break; // part of a long message
            }
            sq.state[s] = SendQueue.DONE;
        }
        req.acked(p, now);
    }

    private void nak(int p, int code, long now) {
        device.counters.add(RdmaCounter.NAKS_RECEIVED, 1);
        ackUpTo(Psn.add(p, -1), now);
        if (qp.state == QpState.ERR) {
            return;
        }
        if (code == Aeth.NAK_PSN_SEQUENCE_ERROR) {
            if (Psn.diff(p, qp.requester.ackedPsn) <= 0) {
                return; // a stale NAK, overtaken by ACKs for what it asked for (reordering): no retry to spend
            }
            qp.requester.nakRetry(p, now);
            return;
        }
        int s = qp.requester.slotCovering(p);
        if (s < 0) {
            device.counters.add(RdmaCounter.STRAY_RESPONSES, 1);
            return;
        }
        int status = switch (code) {
            case Aeth.NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
            case Aeth.NAK_REMOTE_ACCESS_ERROR -> WcStatus.REM_ACCESS_ERR;
            case Aeth.NAK_REMOTE_OPERATIONAL_ERROR -> WcStatus.REM_OP_ERR;
            default -> WcStatus.REM_INV_REQ_ERR; // invalid RD request and reserved codes
        };
        qp.fail(s, status);
    }
}
