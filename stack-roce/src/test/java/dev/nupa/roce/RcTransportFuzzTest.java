package dev.nupa.roce;

import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.transport.RcRequester;
import dev.nupa.roce.transport.RdmaDevice;
import dev.nupa.roce.transport.SendQueue;
import dev.nupa.roce.transport.WrOpcodes;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.ScatterGather;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.wire.Aeth;
import dev.nupa.roce.wire.AtomicAckEth;
import dev.nupa.roce.wire.AtomicEth;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.CmMad;
import dev.nupa.roce.wire.Deth;
import dev.nupa.roce.wire.ImmDt;
import dev.nupa.roce.wire.Opcode;
import dev.nupa.roce.wire.Psn;
import dev.nupa.roce.wire.Reth;
import static dev.nupa.roce.RdmaFixture.MS;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.nupa.device.FabricDevice;
import dev.nupa.l2.DropReason;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkClaim;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The RC transport (responder, requester, completer), the UD receive path and the connection manager
 * against arbitrary packet sequences, verbs calls, QP modifies and time jumps. Two contexts on one shm
 * fabric on virtual time: node 1 holds RC QP {@code qa}, node 2 the connected {@code qb}, a UD QP and an
 * {@link RdmaCm} listening on {@link #PORT}; node 3 is a bare link that injects frames as a third party
 * (and takes what node 2 sends it). docs/fuzzing.md says how to run it; seeds live in
 * {@code dev/nupa/roce/RcTransportFuzzTestInputs/transport/}.
 *
 * <p>Input: byte 0 the setup (bit 0 DIRECT mode, bits 1-2 path MTU 256 << n, bits 3-5 retry count, bits 6-7
 * RNR retry 0/1/3/7), byte 1 more setup (bits 0-2 local ACK timeout 1..8, bits 3-5 max_rd_atomic and
 * max_dest_rd_atomic 0..4 and 4, bit 6 a PSN pair near the 2^24 wrap); then steps, each a kind byte
 * ({@code kind % 8}: 0-2 inject a mostly well-formed packet, 3 post a send, 4 post a receive, 5 advance
 * time, 6 modify a QP, 7 a CM message or, with bit 3, raw bytes) and the bytes that step reads. Bytes past
 * the end read as zero. Values that depend on the run (PSNs, keys, addresses) are chosen relative to the
 * live state, so one input means the same thing every time.
 *
 * <p>After every step: no exception but RdmaException (from misuse the test makes on purpose) escapes a
 * call, no frame handler throws (Link's HANDLER_ERROR stays 0; the throwable itself is kept for the
 * report), every completion has a known status, belongs to a request posted on its QP and comes once, the
 * requester's {@code head <= next <= tail}, {@code 0 <= rdOutstanding <= max(1, max_rd_atomic)},
 * {@code sendOffset >= 0}, a QP leaves ERR only through RESET and changes state only by a modify or into
 * ERR, an illegal modify throws RdmaException and changes nothing, and no byte of a region changes unless
 * some operation with a valid key and bounds (a remote WRITE or atomic, a local scatter entry with
 * LOCAL_WRITE) covered it: canary regions without remote access, a read-only region and a region of
 * another protection domain never change. At the end every QP is moved to ERR and every receive and
 * signaled send still outstanding must complete (flushed or otherwise).
 */
class RcTransportFuzzTest {
    static final int PORT = 4791;
    static final int UD_QKEY = 0x11223344;
    static final int MAX_STEPS = 96;
    /** -Drcfuzz.trace=true prints each step and the QPs' state after it (for reading a finding). */
    static final boolean TRACE = Boolean.getBoolean("rcfuzz.trace");
    static final int REGION = 4096;
    /** The opcodes we carry, what a well-formed injection picks from. */
    static final int[] OPCODES = {
        Opcode.RC_SEND_FIRST, Opcode.RC_SEND_MIDDLE, Opcode.RC_SEND_LAST, Opcode.RC_SEND_LAST_WITH_IMMEDIATE,
        Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE,
        Opcode.RC_RDMA_WRITE_LAST, Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, Opcode.RC_RDMA_WRITE_ONLY,
        Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, Opcode.RC_RDMA_READ_REQUEST, Opcode.RC_RDMA_READ_RESPONSE_FIRST,
        Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_RDMA_READ_RESPONSE_ONLY,
        Opcode.RC_ACKNOWLEDGE, Opcode.RC_ATOMIC_ACKNOWLEDGE, Opcode.RC_COMPARE_SWAP, Opcode.RC_FETCH_ADD,
        Opcode.UD_SEND_ONLY, Opcode.UD_SEND_ONLY_WITH_IMMEDIATE,
    };
    static final int[] CM_IDS = {CmMad.REQ, CmMad.REP, CmMad.RTU, CmMad.REJ, CmMad.DREQ, CmMad.DREP, CmMad.MRA, -1};
    static final int[] KNOWN_STATUS = {WcStatus.SUCCESS, WcStatus.LOC_LEN_ERR, WcStatus.LOC_QP_OP_ERR, WcStatus.LOC_PROT_ERR,
        WcStatus.WR_FLUSH_ERR, WcStatus.BAD_RESP_ERR, WcStatus.LOC_ACCESS_ERR, WcStatus.REM_INV_REQ_ERR, WcStatus.REM_ACCESS_ERR,
        WcStatus.REM_OP_ERR, WcStatus.RETRY_EXC_ERR, WcStatus.RNR_RETRY_EXC_ERR, WcStatus.GENERAL_ERR};

    private static final MethodHandle ON_PACKET;
    private static final Field BY_COMM;

    static {
        try {
            ON_PACKET = MethodHandles.privateLookupIn(RdmaDevice.class, MethodHandles.lookup()).findVirtual(RdmaDevice.class,
                    "onPacket", MethodType.methodType(void.class, int.class, MemorySegment.class, long.class, int.class));
            BY_COMM = RdmaCm.class.getDeclaredField("byComm");
            BY_COMM.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @FuzzTest(maxDuration = "5m")
    void transport(byte[] input) {
        if (input.length < 2) {
            return;
        }
        try (World w = new World(input[0] & 0xFF, input[1] & 0xFF)) {
            In in = new In(input, 2);
            for (int step = 0; step < MAX_STEPS && in.more(); step++) {
                w.step(in, step);
            }
            w.finish();
        }
    }

    /** Reads the input front to back; past the end every byte is zero. */
    static final class In {
        final byte[] b;
        int at;

        In(byte[] b, int at) {
            this.b = b;
            this.at = at;
        }

        boolean more() {
            return at < b.length;
        }

        int u8() {
            int v = at < b.length ? b[at] & 0xFF : 0;
            at++;
            return v;
        }

        int u16() {
            return u8() << 8 | u8();
        }

        int u24() {
            return u8() << 16 | u16();
        }

        int u32() {
            return u16() << 16 | u16();
        }

        long u64() {
            return (long) u32() << 32 | (u32() & 0xFFFFFFFFL);
        }
    }

    /** A registered region and what the test knows of it: the bytes last seen and the bytes that may change. */
    static final class Region {
        final String name;
        final MemoryRegion mr;
        final byte[] seen;
        final boolean[] mayChange;

        Region(String name, MemoryRegion mr) {
            this.name = name;
            this.mr = mr;
            this.seen = mr.memory().toArray(ValueLayout.JAVA_BYTE);
            this.mayChange = new boolean[seen.length];
        }

        /** Marks the part of [va, va + len) that lies in the region. */
        void allow(long va, long len) {
            long from = Math.max(va, mr.addr());
            long to = Math.min(va + len, mr.addr() + mr.length());
            if (len <= 0 || va + len < va) {
                to = from;
            }
            for (long x = from; x < to; x++) {
                mayChange[(int) (x - mr.addr())] = true;
            }
        }
    }

    record Posted(QueuePair qp, boolean recv, boolean signaled, int op) {
    }

    static final class World implements AutoCloseable {
        final RdmaFixture fx = new RdmaFixture(64);
        final Arena arena = Arena.ofShared();
        final List<Throwable> handlerErrors = new ArrayList<>();
        final RdmaContext a;
        final RdmaContext b;
        final FabricDevice dev3;
        final Link l3;
        final LinkClaim claim = new LinkClaim();
        final MemorySegment scratch;
        final ProtectionDomain pdA;
        final ProtectionDomain pdB;
        final ProtectionDomain pdB2;
        final CompletionQueue cqA;
        final CompletionQueue cqB;
        final QueuePair qa;
        final QueuePair qb;
        final QueuePair ud;
        final RdmaCm cm;
        final List<QueuePair> cmQps = new ArrayList<>();
        final List<RdmaCm.ConnectRequest> deferred = new ArrayList<>();
        final List<Integer> comms = new ArrayList<>();
        final Region[] sideA;
        final Region[] sideB;
        final List<Region> regions = new ArrayList<>();
        final Map<Long, Posted> outstanding = new HashMap<>();
        final WorkCompletion wc = new WorkCompletion();
        final int mtu;
        final int retry;
        final int rnrRetry;
        final int timeout;
        final int rdAtomic;
        long nextWrId = 1;
        int accepts;
        String lastStep = "setup";

        World(int setup, int setup2) {
            try {
                TransferMode mode = (setup & 1) != 0 ? TransferMode.DIRECT : TransferMode.PACKET;
                mtu = 256 << ((setup >>> 1) & 3);
                retry = (setup >>> 3) & 7;
                rnrRetry = new int[] {0, 1, 3, 7}[(setup >>> 6) & 3];
                timeout = 1 + (setup2 & 7);
                rdAtomic = Math.min(4, (setup2 >>> 3) & 7);
                a = fx.node(1);
                b = fx.node(2);
                guard(a);
                guard(b);
                dev3 = fx.fabric.attach(3);
                l3 = new Link(dev3);
                l3.register(EtherType.NUPA_RDMA, (src, m, o, len) -> { }); // node 3 takes (and ignores) what it is sent
                scratch = arena.allocate(16384, 8);
                pdA = a.allocPd();
                pdB = b.allocPd();
                pdB2 = b.allocPd();
                cqA = a.createCq(4096);
                cqB = b.createCq(4096);
                qa = a.createQp(pdA, QpInitAttr.rc(cqA, cqA).withMode(mode).withCapacity(32, 32));
                qb = b.createQp(pdB, QpInitAttr.rc(cqB, cqB).withMode(mode).withCapacity(32, 32));
                boolean wrap = (setup2 & 0x40) != 0;
                connect(qa, qb, wrap ? 0xFFFFFE : 0x100, wrap ? 0xFFFFF0 : 0x5000);
                ud = b.createQp(pdB, QpInitAttr.ud(cqB, cqB).withCapacity(32, 32));
                ud.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qkey(UD_QKEY),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
                ud.modify(new QpAttr().qpState(QpState.RTR), QpAttrMask.STATE);
                ud.modify(new QpAttr().qpState(QpState.RTS).sqPsn(0), QpAttrMask.STATE | QpAttrMask.SQ_PSN);
                int all = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
                Region mrA = region("mrA", pdA.allocMr(REGION, all));
                Region canaryA = region("canaryA", pdA.regMr(filled(0xA5), 0));
                Region mrB = region("mrB", pdB.allocMr(REGION, all));
                Region roB = region("roB", pdB.allocMr(REGION, Access.LOCAL_WRITE | Access.REMOTE_READ));
                Region canaryB = region("canaryB", pdB.regMr(filled(0x5A), 0));
                Region foreignB = region("foreignB(pd2)", pdB2.allocMr(REGION, all));
                sideA = new Region[] {mrA, canaryA, mrA, mrB};
                sideB = new Region[] {mrB, roB, canaryB, foreignB};
                cm = RdmaCm.create(b, ip -> -1, RdmaCm.Options.defaults().withResend(10 * MS, 3));
                cm.listen(PORT, this::onConnectRequest);
            } catch (RuntimeException | Error e) {
                close();
                throw e;
            }
        }

        private MemorySegment filled(int v) {
            MemorySegment m = arena.allocate(REGION, 64);
            m.fill((byte) v);
            return m;
        }

        private Region region(String name, MemoryRegion mr) {
            Region r = new Region(name, mr);
            regions.add(r);
            return r;
        }

        /** Routes the context's frames through a wrapper that keeps what a handler throws (Link only counts it). */
        private void guard(RdmaContext ctx) {
            Link link = ctx.link();
            RdmaDevice device = ctx.device;
            link.unregister(EtherType.NUPA_RDMA);
            link.register(EtherType.NUPA_RDMA, (src, m, o, len) -> {
                try {
                    ON_PACKET.invokeExact(device, src, m, o, len);
                } catch (RuntimeException | Error e) {
                    handlerErrors.add(e);
                    throw e;
                } catch (Throwable t) {
                    handlerErrors.add(t);
                    throw new IllegalStateException(t);
                }
            });
        }

        /** The listener: the first private byte says accept (0), reject (1) or answer later (2..). */
        private void onConnectRequest(RdmaCm.ConnectRequest req) {
            byte[] pd = req.privateData();
            int what = pd.length == 0 ? 0 : pd[0] & 3;
            if (what == 0 && accepts < 3) {
                accepts++;
                QueuePair q = b.createQp(pdB, QpInitAttr.rc(cqB, cqB).withCapacity(8, 8));
                cmQps.add(q);
                req.accept(q, new byte[] {7});
            } else if (what == 1) {
                req.reject(new byte[] {9});
            } else if (deferred.size() < 8) {
                deferred.add(req);
            } else {
                req.reject(new byte[0]);
            }
        }

        void connect(QueuePair x, QueuePair y, int psnX, int psnY) {
            int access = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
            for (QueuePair q : List.of(x, y)) {
                q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(access),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
            }
            rtr(x, y, psnY);
            rtr(y, x, psnX);
            rts(x, psnX);
            rts(y, psnY);
        }

        void rtr(QueuePair q, QueuePair peer, int peerPsn) {
            q.modify(new QpAttr().qpState(QpState.RTR).destNode(peer.ctx.node()).pathMtu(mtu).destQpNum(peer.qpNum())
                    .rqPsn(peerPsn).maxDestRdAtomic(4).minRnrTimer(1),
                    QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                            | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        }

        void rts(QueuePair q, int psn) {
            q.modify(new QpAttr().qpState(QpState.RTS).sqPsn(psn).timeout(timeout).retryCnt(retry).rnrRetry(rnrRetry)
                    .maxRdAtomic(rdAtomic), QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT
                    | QpAttrMask.RNR_RETRY | QpAttrMask.MAX_QP_RD_ATOMIC);
        }

        String name(QueuePair q) {
            String n = q == qa ? "qa" : q == qb ? "qb" : q == ud ? "ud" : "cm-accepted";
            return n + " (node " + q.ctx.node() + " QP " + q.qpNum() + ")";
        }

        List<QueuePair> watched() {
            List<QueuePair> l = new ArrayList<>(List.of(qa, qb, ud));
            l.addAll(cmQps);
            return l;
        }

        // ---- one step -------------------------------------------------------------------------

        void step(In in, int n) {
            int start = in.at;
            int kind = in.u8();
            QpState[] before = {qa.state(), qb.state(), ud.state()};
            List<QueuePair> modified = List.of();
            switch (kind % 8) {
                case 0, 1, 2 -> inject(in);
                case 3 -> postSend(in);
                case 4 -> postRecv(in);
                case 5 -> advance(in);
                case 6 -> modified = modify(in, before);
                default -> {
                    if ((kind & 8) != 0) {
                        injectRaw(in);
                    } else {
                        cmMessage(in);
                    }
                }
            }
            lastStep = "step " + n + " (kind " + kind % 8 + ", input bytes " + start + ".." + (in.at - 1) + ")";
            pump();
            if (TRACE) {
                StringBuilder sb = new StringBuilder(lastStep);
                for (QueuePair q : watched()) {
                    sb.append("\n    ").append(name(q)).append(' ').append(q.state()).append(" sq ").append(q.transport.sq.head).append('/')
                            .append(q.transport.sq.next).append('/').append(q.transport.sq.tail).append(" psn ").append(Integer.toHexString(q.transport.requester.psn))
                            .append(" acked ").append(Integer.toHexString(q.transport.requester.ackedPsn)).append(" ePsn ")
                            .append(Integer.toHexString(q.transport.responder.ePsn)).append(" rd ").append(q.transport.requester.rdOutstanding);
                }
                System.out.println(sb);
            }
            check(before, modified);
        }

        /** Polls the three links and both contexts until nothing moves. */
        void pump() {
            for (int round = 0; round < 10_000; round++) {
                int n = fx.links.get(0).poll(64, fx.now) + fx.links.get(1).poll(64, fx.now) + l3.poll(64, fx.now);
                a.poll(fx.now);
                b.poll(fx.now);
                if (n == 0) {
                    return;
                }
            }
            throw new AssertionError(lastStep + ": the nodes never went quiet (10000 rounds at one instant)");
        }

        // ---- (a) injected packets -------------------------------------------------------------

        private void inject(In in) {
            int c = in.u8();
            boolean toA = (c & 1) != 0;
            boolean fromThird = (c & 2) != 0;
            int dq = (c >>> 2) & 7;
            boolean se = (c & 0x20) != 0;
            boolean ackReq = (c & 0x40) != 0;
            boolean badTver = (c & 0x80) != 0;
            int ob = in.u8();
            int opcode = ob < 0xF0 ? OPCODES[ob % OPCODES.length] : in.u8();
            int flags = Opcode.flags(opcode);
            QueuePair target = toA ? qa : qb;
            Region[] side = toA ? sideA : sideB;
            int destQp = switch (dq) {
                case 0, 1 -> target.qpNum();
                case 2 -> ud.qpNum();
                case 3 -> RdmaCm.CM_QPN;
                case 4 -> cmQps.isEmpty() ? target.qpNum() : cmQps.get(cmQps.size() - 1).qpNum();
                case 5 -> in.u24();
                case 6 -> (toA ? qb : qa).qpNum();
                default -> 0;
            };
            int psn = psn(in, target, (flags & Opcode.RESPONSE) != 0);
            int ps = in.u8();
            int n = switch (ps & 3) {
                case 0 -> mtu;
                case 1 -> 1 + in.u8();
                case 2 -> 0;
                default -> in.u16() % (mtu + 64);
            };
            if ((flags & Opcode.PAYLOAD) == 0 && (ps & 4) == 0) {
                n = 0;
            }
            int pad = (ps & 8) != 0 ? (ps >>> 4) & 3 : (-n) & 3;
            int fill = in.u8();
            MemorySegment m = scratch;
            Bth.write(m, 0, opcode & 0xFF, se, pad, Bth.DEFAULT_PKEY, destQp, ackReq, psn);
            if (badTver) {
                m.set(ValueLayout.JAVA_BYTE, 1, (byte) (m.get(ValueLayout.JAVA_BYTE, 1) | (1 + (ps >>> 6))));
            }
            long at = Bth.LENGTH;
            if ((flags & Opcode.DETH) != 0) {
                int qs = in.u8();
                int qkey = switch (qs & 3) {
                    case 0 -> UD_QKEY;
                    case 1 -> CmMad.GSI_QKEY;
                    default -> in.u32();
                };
                Deth.write(m, at, qkey, qs >>> 2);
                at += Deth.LENGTH;
            }
            if ((flags & Opcode.RETH) != 0) {
                long[] vk = remote(in, side, false);
                int ls = in.u8();
                long dma = switch (ls & 3) {
                    case 0 -> n;
                    case 1 -> n + (long) mtu * (ls >>> 2 & 7);
                    case 2 -> in.u16();
                    default -> in.u32() & 0xFFFFFFFFL;
                };
                Reth.write(m, at, vk[0], (int) vk[1], (int) dma);
                if (opcode != Opcode.RC_RDMA_READ_REQUEST) {
                    allowRemote(side, vk[0], (int) vk[1], dma, Access.REMOTE_WRITE, target.pd());
                }
                at += Reth.LENGTH;
            }
            if ((flags & Opcode.ATOMIC_ETH) != 0) {
                long[] vk = remote(in, side, true);
                int vs = in.u8();
                long swapAdd = (vs & 1) != 0 ? in.u64() : vs >>> 1;
                long compare = (vs & 0x80) != 0 ? in.u64() : 0;
                AtomicEth.write(m, at, vk[0], (int) vk[1], swapAdd, compare);
                allowRemote(side, vk[0], (int) vk[1], 8, Access.REMOTE_ATOMIC, target.pd());
                at += AtomicEth.LENGTH;
            }
            if ((flags & Opcode.AETH) != 0) {
                int s = in.u8();
                int syndrome = switch (s & 3) {
                    case 0 -> Aeth.ack(Aeth.CREDITS_INVALID);
                    case 1 -> Aeth.rnrNak(s >>> 3);
                    case 2 -> Aeth.nak((s >>> 2) % 5);
                    default -> in.u8();
                };
                Aeth.write(m, at, syndrome, in.u8());
                at += Aeth.LENGTH;
            }
            if ((flags & Opcode.ATOMIC_ACK_ETH) != 0) {
                AtomicAckEth.write(m, at, in.u8() == 0 ? 0 : in.u64());
                at += AtomicAckEth.LENGTH;
            }
            if ((flags & Opcode.IMMDT) != 0) {
                ImmDt.write(m, at, in.u32());
                at += ImmDt.LENGTH;
            }
            if (flags == 0) {
                n += in.u8() & 31; // an opcode we do not carry: some header bytes anyway
            }
            for (int i = 0; i < n + pad; i++) {
                m.set(ValueLayout.JAVA_BYTE, at + i, (byte) (fill + i));
            }
            send(toA, fromThird, m, (int) (at + n + pad));
        }

        /** A PSN near the one that matters (the responder's expected PSN, or the requester's unacknowledged range). */
        private int psn(In in, QueuePair target, boolean response) {
            int s = in.u8();
            int base;
            if (response) {
                RcRequester r = target.transport.requester;
                base = (s & 4) != 0 ? Psn.add(r.psn, -1) : Psn.add(r.ackedPsn, 1);
            } else {
                base = target.transport.responder.ePsn;
            }
            return switch (s & 3) {
                case 0 -> Psn.add(base, ((s >>> 3) & 7) - 4);
                case 1 -> base;
                case 2 -> Psn.add(base, (byte) in.u8());
                default -> in.u24();
            };
        }

        /** A remote address and key: {va, rkey}, near a region of {@code side} (or its key spoiled, or anything). */
        private long[] remote(In in, Region[] side, boolean atomic) {
            int s = in.u8();
            MemoryRegion mr = side[s & 3].mr;
            int rkey = switch ((s >>> 2) & 3) {
                case 0, 1 -> mr.rkey();
                case 2 -> mr.rkey() ^ (1 << (in.u8() & 31));
                default -> in.u32();
            };
            long va = switch ((s >>> 4) & 3) {
                case 0 -> mr.addr() + in.u16() % mr.length();
                case 1 -> mr.addr() + in.u16();
                case 2 -> mr.addr() + mr.length() - in.u8();
                default -> in.u64();
            };
            if (atomic && (s & 0x40) == 0) {
                va &= ~7L;
            }
            return new long[] {va, rkey};
        }

        /** A remote WRITE or atomic with this key and range may change the region the key names, if it allows it. */
        private void allowRemote(Region[] side, long va, int rkey, long len, int need, ProtectionDomain pd) {
            for (Region r : side) {
                MemoryRegion mr = r.mr;
                if (mr.rkey() == rkey && (mr.access() & need) != 0 && mr.pd() == pd && mr.region.covers(va, len)) {
                    r.allow(va, len);
                }
            }
        }

        /** A local scatter entry may have bytes written into it if its key names a region with LOCAL_WRITE. */
        private void allowLocal(ScatterGather sg) {
            for (int i = 0; i < sg.count(); i++) {
                for (Region r : regions) {
                    if (r.mr.lkey() == sg.lkey(i) && (r.mr.access() & Access.LOCAL_WRITE) != 0) {
                        r.allow(sg.addr(i), sg.length(i));
                    }
                }
            }
        }

        private void injectRaw(In in) {
            int c = in.u8();
            int n = in.u8();
            for (int i = 0; i < n; i++) {
                scratch.set(ValueLayout.JAVA_BYTE, i, (byte) in.u8());
            }
            send((c & 1) != 0, (c & 2) != 0, scratch, n);
        }

        private void cmMessage(In in) {
            int c = in.u8();
            int idSel = CM_IDS[(c >>> 1) & 7];
            int id = idSel < 0 ? in.u16() : idSel;
            int localComm = (c & 0x10) != 0 ? in.u32() : 0x1000 + in.u8();
            int rs = in.u8();
            int remoteComm = rs < 0xC0 && !comms.isEmpty() ? comms.get(rs % comms.size()) : rs < 0xC0 ? 0 : in.u32();
            int port = (c & 0x20) == 0 ? PORT : in.u16();
            int ms = in.u8();
            int cmMtu = switch (ms & 7) { // ibv_mtu's number: 1..5 valid, the rest not
                case 0, 1 -> 5;
                case 2 -> 3;
                case 3 -> 1;
                case 4 -> 6;
                case 5 -> 0;
                default -> in.u8() & 0xF;
            };
            int qpn = in.u8();
            int psn = in.u24();
            int depth = in.u8() & 0x1F;
            int ps = in.u8();
            int privLen = ps % 64;
            byte[] priv = new byte[Math.min(privLen, CmMad.MAX_PRIVATE_DATA)];
            for (int i = 0; i < priv.length; i++) {
                priv[i] = (byte) (i == 0 ? (ps >>> 6) : i);
            }
            MemorySegment m = scratch;
            Bth.write(m, 0, Opcode.UD_SEND_ONLY, false, 0, Bth.DEFAULT_PKEY, RdmaCm.CM_QPN, false, 0);
            Deth.write(m, Bth.LENGTH, (c & 0x80) != 0 ? UD_QKEY : CmMad.GSI_QKEY, RdmaCm.CM_QPN);
            long p = Bth.LENGTH + Deth.LENGTH;
            long tid = ps;
            switch (id) {
                case CmMad.REQ -> CmMad.writeReq(m, p, tid, localComm, port, 0x0200000000000001L, qpn, psn, depth, depth, 7, 7, cmMtu,
                        14, RdmaFixture.ip(1), RdmaFixture.ip(2), 0xC001, priv);
                case CmMad.REP -> CmMad.writeRep(m, p, tid, localComm, remoteComm, qpn, psn, depth, depth, 14, 7, 1L, priv);
                case CmMad.REJ -> CmMad.writeRej(m, p, tid, localComm, remoteComm, ms & 3, ms >>> 3, priv);
                case CmMad.MRA -> CmMad.writeMra(m, p, tid, localComm, remoteComm, ms & 3, ms >>> 3);
                case CmMad.DREQ -> CmMad.writeDreq(m, p, tid, localComm, remoteComm, (ms & 1) != 0 ? qpn : qa.qpNum());
                default -> CmMad.writeShort(m, p, id, tid, localComm, remoteComm);
            }
            if (id == CmMad.REQ && (ms & 0x40) != 0) {
                m.set(ValueLayout.JAVA_BYTE, CmMad.reqPrivate(p) + 1, (byte) 0x60); // no rdma_cm header for IPv4
            }
            int total = (int) (p + CmMad.LENGTH);
            if ((c & 0x40) != 0) {
                total -= 4 + (ms & 0x3C); // cut short: the message no longer fits its length
            }
            send(false, (c & 1) == 0, m, Math.max(0, total));
        }

        /** Publishes {@code len} bytes of {@code m} as a frame to node 1 (toA) or 2, from node 3 or the other node's link. */
        private void send(boolean toA, boolean fromThird, MemorySegment m, int len) {
            Link from = fromThird ? l3 : fx.links.get(toA ? 1 : 0);
            int dst = toA ? 1 : 2;
            for (int tries = 0; tries < 2; tries++) {
                int rc = from.tryClaim(dst, EtherType.NUPA_RDMA, len, claim);
                if (rc == FabricDevice.OK) {
                    MemorySegment.copy(m, 0, claim.memory(), claim.payloadOffset(), len);
                    claim.publish();
                    return;
                }
                pump(); // a full ring: let the receiver drain it, once
            }
        }

        // ---- (b) verbs calls ------------------------------------------------------------------

        private QueuePair pick(int sel) {
            return switch ((sel & 3) % 3) {
                case 0 -> qa;
                case 1 -> qb;
                default -> ud;
            };
        }

        /** Adds a scatter/gather entry near a region of {@code side} (its own region, a canary, another context's, a bad key). */
        private void local(In in, Region[] side, ScatterGather sg) {
            int s = in.u8();
            MemoryRegion mr = side[s & 3].mr;
            int lkey = (s & 4) != 0 ? mr.lkey() ^ (1 << (in.u8() & 15)) : mr.lkey();
            long off = (s & 8) != 0 ? in.u16() % (mr.length() + 64) : in.u8() * 8L;
            int len = switch ((s >>> 4) & 3) {
                case 0 -> 8;
                case 1 -> in.u8();
                case 2 -> in.u16() % (REGION + 128);
                default -> 0;
            };
            sg.add(mr.addr() + off, len, lkey);
        }

        private void postSend(In in) {
            int c = in.u8();
            QueuePair q = pick(c);
            boolean signaled = (c & 0x04) == 0;
            int sendFlags = (signaled ? SendFlags.SIGNALED : 0) | ((c & 0x08) != 0 ? SendFlags.INLINE : 0)
                    | ((c & 0x10) != 0 ? SendFlags.FENCE : 0) | ((c & 0x20) != 0 ? SendFlags.SOLICITED : 0);
            int o = in.u8();
            int op = o % 8 == 7 ? ((o & 0x80) != 0 ? WrOpcode.SEND_WITH_INV : 12) : o % 8; // 12: an opcode that is none
            Region[] own = q == qa ? sideA : sideB;
            Region[] peer = q == qa ? sideB : sideA;
            SendWorkRequest wr = new SendWorkRequest(4);
            local(in, own, wr.sg);
            if ((c & 0x40) != 0) {
                local(in, own, wr.sg);
            }
            long[] vk = remote(in, peer, WrOpcodes.isAtomic(op));
            wr.remote(vk[0], (int) vk[1]);
            wr.compareAdd(in.u8()).swap(in.u8()).immData(in.u16()).invalidate((int) vk[1]); // a region's key: never invalidated
            if (q == ud) {
                int u = in.u8();
                int node = u & 3;
                int qpn = switch ((u >>> 2) & 3) {
                    case 0 -> ud.qpNum();
                    case 1 -> RdmaCm.CM_QPN;
                    case 2 -> qa.qpNum();
                    default -> in.u8();
                };
                wr.ud(node, qpn, (u & 0x10) != 0 ? -1 : (u & 0x20) != 0 ? CmMad.GSI_QKEY : UD_QKEY);
            }
            long id = nextWrId++;
            wr.wrId(id).opcode(op).sendFlags(sendFlags);
            if (WrOpcodes.isReadOrAtomic(op)) {
                allowLocal(wr.sg);
            }
            if (WrOpcodes.isWrite(op) || WrOpcodes.isAtomic(op)) {
                allowRemote(peer, vk[0], (int) vk[1], WrOpcodes.isAtomic(op) ? 8 : wr.sg.totalLength(),
                        WrOpcodes.isAtomic(op) ? Access.REMOTE_ATOMIC : Access.REMOTE_WRITE, q == qa ? pdB : pdA);
            }
            try {
                outstanding.put(id, new Posted(q, false, signaled, op));
                q.postSend(wr);
            } catch (RdmaException misuse) {
                outstanding.remove(id); // refused: it never entered the queue
            }
        }

        private void postRecv(In in) {
            int c = in.u8();
            QueuePair q = pick(c);
            RecvWorkRequest wr = new RecvWorkRequest(4);
            Region[] own = q == qa ? sideA : sideB;
            local(in, own, wr.sg);
            if ((c & 4) != 0) {
                local(in, own, wr.sg);
            }
            long id = nextWrId++;
            wr.wrId(id);
            allowLocal(wr.sg);
            try {
                outstanding.put(id, new Posted(q, true, true, -1));
                q.postRecv(wr);
            } catch (RdmaException misuse) {
                outstanding.remove(id);
            }
        }

        // ---- (c) time -------------------------------------------------------------------------

        private void advance(In in) {
            int c = in.u8();
            long dt = switch (c & 3) {
                case 0 -> 0;
                case 1 -> (1 + (c >>> 2)) * 1_000L;
                case 2 -> (1 + (c >>> 2)) * MS;
                default -> (1 + ((c >>> 2) & 3)) * 1000 * MS;
            };
            fx.now += dt;
        }

        // ---- (d) QP state ---------------------------------------------------------------------

        private List<QueuePair> modify(In in, QpState[] before) {
            drain(); // completions pushed before a reset must be matched before the reset forgets their requests
            int c = in.u8();
            QueuePair q = pick(c);
            int action = (c >>> 2) & 7;
            switch (action) {
                case 0 -> q.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
                case 1 -> reset(q);
                case 2 -> {
                    reset(q);
                    if (q == ud) {
                        ud.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qkey(UD_QKEY),
                                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.QKEY);
                        ud.modify(new QpAttr().qpState(QpState.RTR), QpAttrMask.STATE);
                        ud.modify(new QpAttr().qpState(QpState.RTS).sqPsn(in.u24()), QpAttrMask.STATE | QpAttrMask.SQ_PSN);
                    } else {
                        QueuePair peer = q == qa ? qb : qa;
                        int access = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
                        q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(access),
                                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
                        int s = in.u8();
                        rtr(q, peer, (s & 1) != 0 ? peer.transport.requester.psn : in.u24());
                        rts(q, (s & 2) != 0 ? peer.transport.responder.ePsn : in.u24());
                    }
                }
                case 3 -> legal(q, new QpAttr().qpState(QpState.SQD), QpAttrMask.STATE, before);
                case 4 -> legal(q, new QpAttr().qpState(QpState.RTS), QpAttrMask.STATE, before);
                case 7 -> {
                    reset(qa);
                    reset(qb);
                    int p = in.u24();
                    connect(qa, qb, p, Psn.add(p, in.u16()));
                }
                default -> randomModify(in, q, before);
            }
            return action == 7 ? List.of(qa, qb) : List.of(q);
        }

        private void reset(QueuePair q) {
            q.modify(new QpAttr().qpState(QpState.RESET), QpAttrMask.STATE);
            outstanding.values().removeIf(p -> p.qp == q); // IBA 10.3.1: a reset discards work without completions
        }

        /** A modify that may be illegal: either it throws RdmaException and changes nothing, or it is legal. */
        private void legal(QueuePair q, QpAttr attr, int mask, QpState[] before) {
            QpState from = q.state();
            String attrs = describe(q);
            try {
                q.modify(attr, mask);
            } catch (RdmaException e) {
                if (q.state() != from || !describe(q).equals(attrs)) {
                    throw new AssertionError("a refused modify changed QP " + q.qpNum() + ": " + attrs + " -> " + describe(q), e);
                }
                return;
            }
            QpState to = q.state();
            if (from == QpState.ERR && to != QpState.ERR && to != QpState.RESET) {
                throw new AssertionError("modify to " + attr.qpState + " (mask 0x" + Integer.toHexString(mask) + ") took QP "
                        + q.qpNum() + " out of ERR without a reset, into " + to);
            }
            if (to == QpState.RESET) {
                outstanding.values().removeIf(p -> p.qp == q);
            }
        }

        private void randomModify(In in, QueuePair q, QpState[] before) {
            QpAttr x = new QpAttr();
            int s = in.u8();
            x.qpState = QpState.values()[s % 7];
            x.curQpState = QpState.values()[in.u8() % 7];
            int mask = in.u32() & ((1 << 21) - 1);
            mask = (s & 0x80) != 0 ? mask : mask | QpAttrMask.STATE;
            int[] mtus = {256, 512, 1024, 2048, 4096, 8192, 300, 0};
            x.pathMtu = mtus[in.u8() & 7];
            x.qkey = (s & 0x40) != 0 ? in.u32() : UD_QKEY;
            int p = in.u8();
            x.rqPsn = (p & 1) != 0 ? q.transport.responder.ePsn : (p & 2) != 0 ? 1 << 24 : in.u24();
            x.sqPsn = (p & 4) != 0 ? q.transport.requester.psn : (p & 8) != 0 ? -1 : in.u24();
            x.destQpNum = (p & 16) != 0 ? (q == qa ? qb : qa).qpNum() : in.u8();
            x.qpAccessFlags = in.u8() & 0x1F;
            int f = in.u8();
            x.pkeyIndex = f & 1;
            x.portNum = 1 + ((f >>> 1) & 1);
            x.destNode = (f >>> 2) & 7;
            int g = in.u8();
            x.maxRdAtomic = g % 18;
            x.maxDestRdAtomic = (g >>> 3) % 18;
            int h = in.u8();
            x.minRnrTimer = h % 33;
            x.timeout = (h >>> 2) % 33;
            int r = in.u8();
            x.retryCnt = r % 9;
            x.rnrRetry = (r >>> 4) % 9;
            legal(q, x, mask, before);
        }

        private static String describe(QueuePair q) {
            QpAttr a = q.query(new QpAttr());
            return a.qpState + " mtu=" + a.pathMtu + " qkey=" + a.qkey + " rq=" + a.rqPsn + " sq=" + a.sqPsn + " dqp=" + a.destQpNum
                    + " acc=" + a.qpAccessFlags + " node=" + a.destNode + " rd=" + a.maxRdAtomic + "/" + a.maxDestRdAtomic + " rnr="
                    + a.minRnrTimer + " to=" + a.timeout + " retry=" + a.retryCnt + "/" + a.rnrRetry;
        }

        // ---- properties -----------------------------------------------------------------------

        private void check(QpState[] before, List<QueuePair> modified) {
            if (!handlerErrors.isEmpty()) {
                Throwable t = handlerErrors.get(0);
                throw new AssertionError(lastStep + ": a frame handler threw " + t, t);
            }
            for (int i = 0; i < 2; i++) {
                long e = fx.links.get(i).counters().drops(DropReason.HANDLER_ERROR);
                if (e != 0) {
                    throw new AssertionError(lastStep + ": node " + (i + 1) + " counted " + e + " HANDLER_ERROR drops");
                }
            }
            drain();
            QueuePair[] qs = {qa, qb, ud};
            for (int i = 0; i < qs.length; i++) {
                QpState now = qs[i].state();
                if (!modified.contains(qs[i]) && now != before[i] && now != QpState.ERR) {
                    throw new AssertionError(lastStep + ": " + name(qs[i]) + " went " + before[i] + " -> " + now
                            + " without a modify");
                }
            }
            for (QueuePair q : watched()) {
                SendQueue sq = q.transport.sq;
                RcRequester r = q.transport.requester;
                // In ERR a flushed request retires without being sent, so head may pass next there (finding 2 in
                // the report of this test's first campaign); everywhere else head <= next <= tail.
                boolean headOk = sq.head <= sq.next;
                if (!(headOk && sq.next <= sq.tail && sq.head <= sq.tail && sq.tail - sq.head <= sq.capacity)) {
                    throw new AssertionError(lastStep + ": " + name(q) + " send queue head " + sq.head + " next " + sq.next
                            + " tail " + sq.tail);
                }
                int maxRdAtomic = q.query(new QpAttr()).maxRdAtomic;
                if (r.rdOutstanding < 0 || r.rdOutstanding > Math.max(1, maxRdAtomic)) {
                    throw new AssertionError(lastStep + ": " + name(q) + " rdOutstanding " + r.rdOutstanding
                            + " outside 0..max(1, max_rd_atomic " + maxRdAtomic + ")");
                }
                if (r.sendOffset < 0) {
                    throw new AssertionError(lastStep + ": " + name(q) + " sendOffset " + r.sendOffset);
                }
            }
            for (Region r : regions) {
                byte[] now = r.mr.memory().toArray(ValueLayout.JAVA_BYTE);
                for (int i = 0; i < now.length; i++) {
                    if (now[i] != r.seen[i] && !r.mayChange[i]) {
                        throw new AssertionError(lastStep + ": byte " + i + " of " + r.name + " " + r.mr + " changed from "
                                + r.seen[i] + " to " + now[i] + " though no valid WRITE, atomic or local scatter entry covered it");
                    }
                }
                System.arraycopy(now, 0, r.seen, 0, now.length);
            }
            learnComms();
        }

        /** Polls both CQs, checking every completion against what was posted. */
        private void drain() {
            for (CompletionQueue cq : List.of(cqA, cqB)) {
                while (cq.poll(wc)) {
                    checkCompletion(wc);
                }
            }
        }

        private void checkCompletion(WorkCompletion w) {
            boolean known = false;
            for (int s : KNOWN_STATUS) {
                known |= s == w.status;
            }
            if (!known) {
                throw new AssertionError(lastStep + ": completion with unknown status " + w);
            }
            Posted p = outstanding.remove(w.wrId);
            if (p == null) {
                throw new AssertionError(lastStep + ": completion for a request not posted, or completed twice: " + w);
            }
            if (p.qp.qpNum() != w.qpNum) {
                throw new AssertionError(lastStep + ": completion names QP " + w.qpNum + " but its request went to QP "
                        + p.qp.qpNum() + ": " + w);
            }
            if (w.status == WcStatus.SUCCESS) {
                boolean recvOp = w.opcode == WcOpcode.RECV || w.opcode == WcOpcode.RECV_RDMA_WITH_IMM;
                if (recvOp != p.recv || (!p.recv && w.opcode != WrOpcodes.completionOpcode(p.op))) {
                    throw new AssertionError(lastStep + ": completion opcode does not match the request: " + w + " for " + p);
                }
                if (!p.signaled) {
                    throw new AssertionError(lastStep + ": an unsignaled request completed successfully: " + w);
                }
            }
        }

        private void learnComms() {
            try {
                @SuppressWarnings("unchecked")
                Map<Integer, ?> live = (Map<Integer, ?>) BY_COMM.get(cm);
                Set<Integer> now = new LinkedHashSet<>(live.keySet());
                for (Iterator<Integer> it = now.iterator(); it.hasNext();) {
                    if (comms.contains(it.next())) {
                        it.remove();
                    }
                }
                comms.addAll(now.stream().sorted().toList());
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }

        /** Moves every QP to ERR: each receive and each signaled send still outstanding must complete now. */
        void finish() {
            lastStep = "finish";
            drain();
            for (QueuePair q : List.of(qa, qb, ud)) {
                if (q.state() != QpState.RESET) {
                    q.modify(new QpAttr().qpState(QpState.ERR), QpAttrMask.STATE);
                }
            }
            pump();
            drain();
            outstanding.values().removeIf(p -> !p.signaled);
            outstanding.values().removeIf(p -> p.qp.state() == QpState.RESET);
            if (!outstanding.isEmpty()) {
                StringBuilder sb = new StringBuilder();
                outstanding.forEach((id, p) -> sb.append(" wr_id ").append(id).append(p.recv ? " recv" : " " + WrOpcode.name(p.op))
                        .append(" on QP ").append(p.qp.qpNum()).append(';'));
                throw new AssertionError("after moving every QP to ERR, requests never completed:" + sb);
            }
        }

        @Override
        public void close() {
            try {
                if (dev3 != null) {
                    dev3.close();
                }
            } finally {
                try {
                    fx.close();
                } finally {
                    arena.close();
                }
            }
        }
    }
}
