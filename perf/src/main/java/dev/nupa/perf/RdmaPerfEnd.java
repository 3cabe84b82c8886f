package dev.nupa.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;

/**
 * One side of an {@link RdmaPerf} tool: the verbs context, its one RC queue pair and its region, and what both
 * sides do with them (set up, connect, poll, take completions, spin on a target byte). {@link RdmaPerfServer} and
 * {@link RdmaPerfClient} are the two sides; the command's options are copied here when a side starts.
 */
abstract class RdmaPerfEnd {
    static final int ROUNDS_BW = 3;
    static final int RX_DEPTH = 512;
    static final int LAT_SIGNAL_EVERY = 64;
    /** READs and atomics a requester keeps outstanding: all 16 of the responder's resources (perftest's default). */
    static final int READS_OUTSTANDING = 16;
    static final long STALL_NS = 10_000_000_000L;
    static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    // control datagrams
    static final byte HELLO = 1;
    static final byte FLOOR = 2;
    static final byte WRITE_ECHO = 3;
    static final byte SEND_ECHO = 4;
    static final byte SYNC = 5;
    static final byte BYE = 6;
    static final byte ACK = 7;

    final RdmaPerf cmd;
    final PerfOptions o;
    final boolean all;
    final String mode;
    final int txDepth;
    final int cqMod;
    final long warmup;
    final String name;
    final RdmaPerf.Op op;
    final boolean bw;

    PerfNode pn;
    RdmaContext ctx;
    ProtectionDomain pd;
    CompletionQueue sendCq;
    CompletionQueue recvCq;
    QueuePair qp;
    MemoryRegion mr;
    MemorySegment mem;
    long half; // bytes of each half of mr
    final WorkCompletion wc = new WorkCompletion();
    final SendWorkRequest swr = new SendWorkRequest();
    final RecvWorkRequest rwr = new RecvWorkRequest();
    final MemorySegment control = java.lang.foreign.Arena.ofAuto().allocate(64, 8);
    long lastProgress;
    int pathMtu;
    int rolling; // last write-lat value sent or seen (1..255)
    long received; // receive completions taken
    long signalCount;
    long peerAddr;
    int peerRkey;
    FabricWindow floorWindow;

    RdmaPerfEnd(RdmaPerf cmd) {
        this.cmd = cmd;
        this.o = cmd.o;
        this.all = cmd.all;
        this.mode = cmd.mode;
        this.txDepth = cmd.txDepth;
        this.cqMod = cmd.cqMod;
        this.warmup = cmd.warmup;
        this.name = cmd.name;
        this.op = cmd.op;
        this.bw = cmd.bw;
    }

    /** Runs this side to its end; returns the exit status. */
    abstract int run();

    long bufferBytes() {
        return cmd.bufferBytes();
    }

    // ---- shared verbs plumbing ---------------------------------------------------------------

    void open(boolean server, long bytes) {
        pn = new PerfNode(o, server, true);
        ctx = RdmaContext.open(pn.link, 16, 64, System::nanoTime);
        pd = ctx.allocPd();
        sendCq = ctx.createCq(16_384);
        recvCq = ctx.createCq(16_384);
        half = RdmaPerf.roundUp(Math.max(bytes, 64), 64);
        mr = pd.allocMr(2 * half, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        mem = mr.memory();
        pathMtu = 4096;
        while (pathMtu > 256 && pathMtu + 48 > pn.link.mtu()) {
            pathMtu >>= 1;
        }
        lastProgress = System.nanoTime();
    }

    void createQp(TransferMode m) {
        qp = ctx.createQp(pd, QpInitAttr.rc(sendCq, recvCq).withMode(m).withCapacity(Math.max(256, txDepth + 1), RX_DEPTH));
        qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1)
                        .qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        rwr.local(mr, 0, (int) Math.min(half, Integer.MAX_VALUE));
        for (int i = 0; i < RX_DEPTH; i++) {
            qp.postRecv(rwr); // every receive lands at the start of the target half
        }
    }

    void connect(int peerNode, int peerQpn, int peerPsn, int ourPsn) {
        qp.modify(new QpAttr().qpState(QpState.RTR).destNode(peerNode).pathMtu(pathMtu).destQpNum(peerQpn)
                        .rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        // ACK timeout 17 (537 ms a try), as the CM gives a RoCE path: the fabric loses nothing, and a side the host did
        // not schedule for a while (a loaded machine) must not end the run.
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(ourPsn).timeout(17).retryCnt(7).rnrRetry(7).maxRdAtomic(READS_OUTSTANDING),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    /** One poll of the link and the verbs context; fails if nothing has progressed for 10 s. */
    void pump() {
        long now = System.nanoTime();
        pn.link.poll(64, now);
        ctx.poll(now);
        if (now - lastProgress > STALL_NS) {
            throw new IllegalStateException(name + ": no progress for " + STALL_NS / 1_000_000_000L + " s; is the "
                    + (o.server ? "client" : "server") + " still running?");
        }
    }

    /**
     * One look while waiting on a latency path: the link is polled every time (a completion shows up
     * right after it), the context's timers and owed ACKs, the clock and the stall check every 16th
     * look, so an ACK does not go out ahead of the reply the application is about to post.
     */
    void look(int looks) {
        if ((looks & 15) == 0) {
            pump();
        } else if (pn.link.poll(64, pn.link.now()) == 0) {
            Thread.onSpinWait(); // as the floor spins: a core shared with the peer (SMT) keeps its issue slots
        }
    }

    void progress() {
        lastProgress = System.nanoTime();
    }

    void check(WorkCompletion w) {
        if (w.status != WcStatus.SUCCESS) {
            throw new IllegalStateException(name + ": " + WrOpcode.name(op == RdmaPerf.Op.ATOMIC ? WrOpcode.ATOMIC_FETCH_AND_ADD
                    : op == RdmaPerf.Op.READ ? WrOpcode.RDMA_READ : op == RdmaPerf.Op.SEND ? WrOpcode.SEND : WrOpcode.RDMA_WRITE)
                    + " completed with status " + WcStatus.name(w.status) + " (wr_id " + w.wrId + ")");
        }
    }

    /** Takes signalled send completions as they come (the latency tools signal one in LAT_SIGNAL_EVERY). */
    void drainSends() {
        while (sendCq.poll(wc)) {
            check(wc);
        }
    }

    /** Takes receive completions and re-posts each receive; returns how many. */
    int drainRecvs() {
        int n = 0;
        while (recvCq.poll(wc)) {
            check(wc);
            if (wc.status == WcStatus.WR_FLUSH_ERR) {
                continue; // a side that takes a flush (its peer left) posts nothing more to the ERR QP
            }
            qp.postRecv(rwr);
            n++;
        }
        received += n;
        return n;
    }

    static boolean inline(int size, RdmaPerf.Op op) {
        return size <= RdmaPerf.MAX_INLINE && (op == RdmaPerf.Op.WRITE || op == RdmaPerf.Op.SEND);
    }

    /** Latency tools: signal every LAT_SIGNAL_EVERY-th post, so the send queue drains as perftest does. */
    int latFlags(int size) {
        int f = inline(size, op) ? SendFlags.INLINE : 0;
        return ++signalCount % LAT_SIGNAL_EVERY == 0 ? f | SendFlags.SIGNALED : f;
    }

    static byte nextRolling(int r) {
        return (byte) (r % 255 + 1);
    }

    byte targetLast(int size) {
        return (byte) BYTE.getAcquire(mem, (long) size - 1);
    }

    /**
     * Spins on the last byte of the target buffer until it reads {@code v}, as perftest's write-lat does
     * (and as the floor spins: acquire load, PAUSE). With direct placement the link and timers are pumped
     * every 256 looks only, so a poll pass does not sit between the write landing and its detection; in
     * packet mode the link is polled on every look, since that is what places the bytes.
     */
    void awaitLast(int size, byte v) {
        boolean packets = qp.mode() == TransferMode.PACKET; // then the bytes land only when the link is polled
        for (int looks = 1; targetLast(size) != v; looks++) {
            if (packets) {
                look(looks);
            } else if ((looks & 255) == 0) {
                pump();
            } else {
                Thread.onSpinWait();
            }
        }
    }

    void close() {
        if (floorWindow != null) {
            try {
                floorWindow.close();
            } catch (RuntimeException e) {
                // closing down anyway
            }
        }
        if (ctx != null) {
            ctx.close();
        }
        if (pn != null) {
            pn.close();
        }
    }
}
