package dev.nupa.perf;

import dev.nupa.ip.IpConfig;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;

import org.HdrHistogram.Histogram;

import dev.nupa.device.FabricLayout;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpAttr;
import dev.nupa.roce.QpAttrMask;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.RecvWorkRequest;
import dev.nupa.roce.SendFlags;
import dev.nupa.roce.SendWorkRequest;
import dev.nupa.roce.TransferMode;
import dev.nupa.roce.WcStatus;
import dev.nupa.roce.WorkCompletion;
import dev.nupa.roce.WrOpcode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf write-lat | write-bw | send-lat | send-bw | read-lat | read-bw | atomic-lat`: perftest's
 * ib_*_lat / ib_*_bw over one RC queue pair between two processes on the fabric, each side driving its
 * link and verbs context in line on its own thread (no datapath thread).
 *
 * <p><b>Out-of-band exchange</b> (perftest's manual path, over UDP rather than TCP): the client creates
 * its QP and sends a HELLO datagram to the server's control port 9 through the IPv4 stack on the same
 * link, carrying its fabric node, QP number, start PSN, rkey, buffer address, and the transfer mode. The
 * server then creates its QP in that mode, takes it to RTS against the client, and answers with its own
 * QP number, start PSN, rkey, buffer address and size, and the fabric window of the cache-line floor; the
 * client then takes its QP to RTS. HELLO is resent every 10 ms until answered (the server may not be up
 * yet). Later datagrams on the same port sequence the phases (floor rounds, echo rounds, counts), each
 * acknowledged by the server before the client starts it.
 *
 * <p><b>Buffers.</b> Each side registers one window-backed region of two halves: the first is the
 * target peers write into, read from and add to; the second is the source of its own writes and sends.
 *
 * <p><b>Semantics</b> as perftest: write-lat bounces RDMA WRITEs, each side polling the last byte of its
 * target (a rolling value 1..255) and writing back, half round trip reported; send-lat bounces SENDs into
 * pre-posted receives; read-lat and atomic-lat time each READ (FETCH_AND_ADD) to its completion, whole.
 * The bandwidth tools keep {@code --tx-depth} operations outstanding, signalled every {@code --cq-mod}.
 * Latency tools print the cache-line floor (FloorLine) measured in the same run and the p50 ratio;
 * bandwidth tools print single-thread MemorySegment.copy of the same size and the ratio.
 */
abstract class RdmaPerf implements Callable<Integer> {
    enum Op { WRITE, SEND, READ, ATOMIC }

    @Command(name = "write-lat", mixinStandardHelpOptions = true,
            description = "RDMA WRITE ping-pong latency (half round trip, as ib_write_lat), with the one-way cache-line floor and the ratio.")
    static final class WriteLat extends RdmaPerf {
        WriteLat() {
            super("write-lat", Op.WRITE, false);
        }
    }

    @Command(name = "write-bw", mixinStandardHelpOptions = true,
            description = "RDMA WRITE bandwidth (as ib_write_bw), with single-thread MemorySegment.copy of the same size and the ratio.")
    static final class WriteBw extends RdmaPerf {
        WriteBw() {
            super("write-bw", Op.WRITE, true);
        }
    }

    @Command(name = "send-lat", mixinStandardHelpOptions = true,
            description = "SEND ping-pong latency into pre-posted receives (half round trip, as ib_send_lat), with the floor and the ratio.")
    static final class SendLat extends RdmaPerf {
        SendLat() {
            super("send-lat", Op.SEND, false);
        }
    }

    @Command(name = "send-bw", mixinStandardHelpOptions = true,
            description = "SEND bandwidth into pre-posted receives (as ib_send_bw), with MemorySegment.copy and the ratio.")
    static final class SendBw extends RdmaPerf {
        SendBw() {
            super("send-bw", Op.SEND, true);
        }
    }

    @Command(name = "read-lat", mixinStandardHelpOptions = true,
            description = "RDMA READ latency, each read to its completion (as ib_read_lat), with the round-trip cache-line floor.")
    static final class ReadLat extends RdmaPerf {
        ReadLat() {
            super("read-lat", Op.READ, false);
        }
    }

    @Command(name = "read-bw", mixinStandardHelpOptions = true,
            description = "RDMA READ bandwidth (as ib_read_bw), with MemorySegment.copy of the same size and the ratio.")
    static final class ReadBw extends RdmaPerf {
        ReadBw() {
            super("read-bw", Op.READ, true);
        }
    }

    @Command(name = "atomic-lat", mixinStandardHelpOptions = true,
            description = "FETCH_AND_ADD latency, each to its completion (as ib_atomic_lat), with the round-trip cache-line floor.")
    static final class AtomicLat extends RdmaPerf {
        AtomicLat() {
            super("atomic-lat", Op.ATOMIC, false);
        }
    }

    static final int CONTROL_PORT = 9;
    static final int MAX_SIZE = 8 << 20;
    static final int MAX_INLINE = 256;
    private static final int ROUNDS_BW = 3;
    private static final int RX_DEPTH = 512;
    private static final int LAT_SIGNAL_EVERY = 64;
    /** READs and atomics a requester keeps outstanding: all 16 of the responder's resources (perftest's default). */
    private static final int READS_OUTSTANDING = 16;
    private static final long STALL_NS = 10_000_000_000L;
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    // control datagrams
    private static final byte HELLO = 1;
    private static final byte FLOOR = 2;
    private static final byte WRITE_ECHO = 3;
    private static final byte SEND_ECHO = 4;
    private static final byte SYNC = 5;
    private static final byte BYE = 6;
    private static final byte ACK = 7;

    @Mixin
    PerfOptions o;

    @Option(names = {"-a", "--all"}, description = "Every size from 2 to 8388608 bytes in powers of two (one row each).")
    boolean all;

    @Option(names = "--mode", paramLabel = "packet|direct", defaultValue = "direct",
            description = "How operations move: direct placement in the peer's windows (a SEND into its next "
                    + "posted receive), or packets through its ring (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = {"-t", "--tx-depth"}, paramLabel = "N", defaultValue = "128",
            description = "Bandwidth tools: operations outstanding (default: ${DEFAULT-VALUE}).")
    int txDepth;

    @Option(names = {"-Q", "--cq-mod"}, paramLabel = "N", defaultValue = "64",
            description = "Bandwidth tools: signal one completion every N operations (default: ${DEFAULT-VALUE}).")
    int cqMod;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "10000",
            description = "Unmeasured operations first, per size (default: ${DEFAULT-VALUE}; at most -n).")
    long warmup;

    private final String name;
    private final Op op;
    private final boolean bw;

    // both sides
    private PerfNode pn;
    private RdmaContext ctx;
    private ProtectionDomain pd;
    private CompletionQueue sendCq;
    private CompletionQueue recvCq;
    private QueuePair qp;
    private MemoryRegion mr;
    private MemorySegment mem;
    private long half; // bytes of each half of mr
    private final WorkCompletion wc = new WorkCompletion();
    private final SendWorkRequest swr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private final MemorySegment control = java.lang.foreign.Arena.ofAuto().allocate(64, 8);
    private long lastProgress;
    private int pathMtu;
    private int rolling; // last write-lat value sent or seen (1..255)
    private long received; // receive completions taken
    private long signalCount;
    // server
    private boolean done;
    private byte pendingOp;
    private int pendingSize;
    private long pendingCount;
    private long pendingStart;
    private int pendingSeq;
    private int clientSrc;
    private int clientPort;
    private FabricWindow floorWindow;
    private final MemorySegment helloReply = java.lang.foreign.Arena.ofAuto().allocate(64, 8);
    private int helloReplyLen;
    // client
    private int serverIp;
    private int ourPort;
    private int ackSeq = -1;
    private long ackValue;
    private boolean helloed;
    private long peerAddr;
    private int peerRkey;
    private long peerBuffer;
    private int sendSeq;
    private long atomicExpect;
    private boolean atomicStarted;

    RdmaPerf(String name, Op op, boolean bw) {
        this.name = name;
        this.op = op;
        this.bw = bw;
    }

    // ---- options and the contract ------------------------------------------------------------

    @Override
    public Integer call() throws Exception {
        o.validate(1, MAX_SIZE);
        if (!mode.equals("packet") && !mode.equals("direct")) {
            throw new IllegalArgumentException("--mode must be packet or direct, not " + mode);
        }
        if (op == Op.ATOMIC && ((o.size != null && o.size != 8) || all)) {
            throw new IllegalArgumentException(name + " moves 8 bytes: -s must be 8 and -a does not apply");
        }
        if (all && o.size != null) {
            throw new IllegalArgumentException("-a and -s are exclusive: -a runs every size");
        }
        if (txDepth < 1 || txDepth > 8192) {
            throw new IllegalArgumentException("--tx-depth must be 1..8192, not " + txDepth);
        }
        if (cqMod < 1) {
            throw new IllegalArgumentException("--cq-mod must be at least 1");
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("--warmup must not be negative");
        }
        if (bw) {
            o.tracesNothing(name);
        }
        if (o.server) {
            return server();
        }
        if (o.client) {
            return client();
        }
        long buffer = bufferBytes();
        long windows = roundUp(4 * buffer + (2L << 20), FabricLayout.PAGE);
        List<String> extra = new ArrayList<>(List.of("--mode", mode, "--tx-depth", Integer.toString(txDepth),
                "--cq-mod", Integer.toString(cqMod), "--warmup", Long.toString(warmup)));
        if (all) {
            extra.add("--all");
        }
        return PerfRunner.runBoth(o, name, o.freshGeometry(9216, 256).withWindows(64, windows), extra);
    }

    private int defaultSize() {
        return op == Op.ATOMIC ? 8 : bw ? 65_536 : 2;
    }

    private long defaultIterations() {
        return all ? 1_000 : bw ? 5_000 : 100_000;
    }

    /** Bytes of each half of a side's region: the largest message this run moves (at least 64 KiB on a server). */
    private long bufferBytes() {
        return all ? MAX_SIZE : o.size != null ? o.size : defaultSize();
    }

    private int[] sizes(long cap) {
        if (!all) {
            return new int[] {o.size != null ? o.size : defaultSize()};
        }
        List<Integer> s = new ArrayList<>();
        for (long b = 2; b <= Math.min(MAX_SIZE, cap); b <<= 1) {
            s.add((int) b);
        }
        return s.stream().mapToInt(Integer::intValue).toArray();
    }

    private static long roundUp(long v, long to) {
        return (v + to - 1) / to * to;
    }

    // ---- shared verbs plumbing ---------------------------------------------------------------

    private void open(boolean server, long bytes) {
        pn = new PerfNode(o, server, true);
        ctx = RdmaContext.open(pn.link, 16, 64, System::nanoTime);
        pd = ctx.allocPd();
        sendCq = ctx.createCq(16_384);
        recvCq = ctx.createCq(16_384);
        half = roundUp(Math.max(bytes, 64), 64);
        mr = pd.allocMr(2 * half, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        mem = mr.memory();
        pathMtu = 4096;
        while (pathMtu > 256 && pathMtu + 48 > pn.link.mtu()) {
            pathMtu >>= 1;
        }
        lastProgress = System.nanoTime();
    }

    private void createQp(TransferMode m) {
        qp = ctx.createQp(pd, QpInitAttr.rc(sendCq, recvCq).withMode(m).withCapacity(Math.max(256, txDepth + 1), RX_DEPTH));
        qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1)
                        .qpAccessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        rwr.local(mr, 0, (int) Math.min(half, Integer.MAX_VALUE));
        for (int i = 0; i < RX_DEPTH; i++) {
            qp.postRecv(rwr); // every receive lands at the start of the target half
        }
    }

    private void connect(int peerNode, int peerQpn, int peerPsn, int ourPsn) {
        qp.modify(new QpAttr().qpState(QpState.RTR).destNode(peerNode).pathMtu(pathMtu).destQpNum(peerQpn)
                        .rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(ourPsn).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(READS_OUTSTANDING),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    /** One poll of the link and the verbs context; fails if nothing has progressed for 10 s. */
    private void pump() {
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
    private void look(int looks) {
        if ((looks & 15) == 0) {
            pump();
        } else if (pn.link.poll(64, pn.link.now()) == 0) {
            Thread.onSpinWait(); // as the floor spins: a core shared with the peer (SMT) keeps its issue slots
        }
    }

    private void progress() {
        lastProgress = System.nanoTime();
    }

    private void check(WorkCompletion w) {
        if (w.status != WcStatus.SUCCESS) {
            throw new IllegalStateException(name + ": " + WrOpcode.name(op == Op.ATOMIC ? WrOpcode.ATOMIC_FETCH_AND_ADD
                    : op == Op.READ ? WrOpcode.RDMA_READ : op == Op.SEND ? WrOpcode.SEND : WrOpcode.RDMA_WRITE)
                    + " completed with status " + WcStatus.name(w.status) + " (wr_id " + w.wrId + ")");
        }
    }

    /** Takes signalled send completions as they come (the latency tools signal one in LAT_SIGNAL_EVERY). */
    private void drainSends() {
        while (sendCq.poll(wc)) {
            check(wc);
        }
    }

    /** Takes receive completions and re-posts each receive; returns how many. */
    private int drainRecvs() {
        int n = 0;
        while (recvCq.poll(wc)) {
            check(wc);
            qp.postRecv(rwr);
            n++;
        }
        received += n;
        return n;
    }

    private static boolean inline(int size, Op op) {
        return size <= MAX_INLINE && (op == Op.WRITE || op == Op.SEND);
    }

    /** Latency tools: signal every LAT_SIGNAL_EVERY-th post, so the send queue drains as perftest does. */
    private int latFlags(int size) {
        int f = inline(size, op) ? SendFlags.INLINE : 0;
        return ++signalCount % LAT_SIGNAL_EVERY == 0 ? f | SendFlags.SIGNALED : f;
    }

    private static byte nextRolling(int r) {
        return (byte) (r % 255 + 1);
    }

    private byte targetLast(int size) {
        return (byte) BYTE.getAcquire(mem, (long) size - 1);
    }

    /**
     * Spins on the last byte of the target buffer until it reads {@code v}, as perftest's write-lat does
     * (and as the floor spins: acquire load, PAUSE). With direct placement the link and timers are pumped
     * every 256 looks only, so a poll pass does not sit between the write landing and its detection; in
     * packet mode the link is polled on every look, since that is what places the bytes.
     */
    private void awaitLast(int size, byte v) {
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

    // ---- server ------------------------------------------------------------------------------

    private int server() {
        try {
            open(true, Math.max(bufferBytes(), 65_536));
            floorWindow = pn.node.exportWindow(4096, FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE);
            pn.ip.bindUdp(CONTROL_PORT, this::serverControl);
            System.out.println(PerfRunner.READY);
            System.out.flush();
            while (!done) {
                pump();
                if (qp != null) {
                    drainSends();
                    drainRecvs();
                }
                if (pendingOp != 0) {
                    byte p = pendingOp;
                    pendingOp = 0;
                    runPhase(p);
                }
                progress(); // the server idles as long as the client likes
            }
            return 0;
        } finally {
            close();
        }
    }

    private void serverControl(int src, int srcPort, int dst, MemorySegment m, long off, int len) {
        byte c = len > 0 ? m.get(ValueLayout.JAVA_BYTE, off) : 0;
        clientSrc = src;
        clientPort = srcPort;
        if (c == HELLO && len >= 28) {
            if (qp == null) {
                int node = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
                int qpn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
                int psn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 12);
                peerRkey = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 16);
                peerAddr = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 20);
                boolean direct = m.get(ValueLayout.JAVA_BYTE, off + 1) == 1;
                createQp(direct ? TransferMode.DIRECT : TransferMode.PACKET);
                int ourPsn = new SplittableRandom().nextInt(1 << 24);
                connect(node, qpn, psn, ourPsn);
                helloReply.set(ValueLayout.JAVA_BYTE, 0, HELLO);
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 4, qp.qpNum());
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 8, ourPsn);
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 12, mr.rkey());
                helloReply.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, mr.addr());
                helloReply.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, half);
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 32, floorWindow.id());
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 36, floorWindow.key());
                helloReplyLen = 40;
            }
            pn.ip.sendUdp(CONTROL_PORT, src, srcPort, helloReply, 0, helloReplyLen); // a repeated HELLO gets the same answer
        } else if (c == BYE) {
            done = true;
        } else if (len >= 28 && c != HELLO) {
            pendingSeq = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
            pendingSize = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
            pendingCount = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 12);
            pendingStart = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 20);
            pendingOp = c;
        }
    }

    private void ack() {
        control.set(ValueLayout.JAVA_BYTE, 0, ACK);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, pendingSeq);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, received);
        pn.ip.sendUdp(CONTROL_PORT, clientSrc, clientPort, control, 0, 16);
    }

    private void runPhase(byte p) {
        int size = pendingSize;
        long count = pendingCount;
        if ((p == WRITE_ECHO || p == SEND_ECHO) && (qp == null || size < 1 || size > half)) {
            throw new IllegalStateException(name + ": the client asked for " + size + "-byte messages; this server's buffer holds "
                    + half + " (start it with the same -s or -a)");
        }
        if (p == WRITE_ECHO) {
            BYTE.setRelease(mem, (long) size - 1, (byte) 0);
        }
        ack();
        switch (p) {
            case FLOOR -> FloorLine.echo(floorWindow.memory(), pendingStart, count);
            case WRITE_ECHO -> writeEcho(size, count);
            case SEND_ECHO -> sendEcho(size, count);
            default -> { // SYNC: the ack carried the receive count
            }
        }
    }

    private void writeEcho(int size, long count) {
        swr.opcode(WrOpcode.RDMA_WRITE).local(mr, half, size).remote(peerAddr, peerRkey);
        for (long i = 0; i < count; i++) {
            echoRound(size);
            drainSends();
            progress();
        }
    }

    /** One echo of write-lat's server (a method of its own, as {@link #writeRound}). */
    private void echoRound(int size) {
        byte v = nextRolling(rolling);
        awaitLast(size, v);
        rolling = v & 0xFF;
        mem.set(ValueLayout.JAVA_BYTE, half + size - 1, v);
        swr.sendFlags(latFlags(size));
        qp.postSend(swr);
    }

    private void sendEcho(int size, long count) {
        swr.opcode(WrOpcode.SEND).local(mr, half, size);
        for (long i = 0; i < count; i++) {
            sendEchoRound(size);
            drainSends();
            progress();
        }
    }

    /** One echo of send-lat's server (a method of its own, as {@link #writeRound}). */
    private void sendEchoRound(int size) {
        for (int looks = 1; drainRecvs() == 0; looks++) {
            look(looks);
        }
        swr.sendFlags(latFlags(size));
        qp.postSend(swr);
    }

    // ---- client ------------------------------------------------------------------------------

    private int client() {
        try {
            long iterations = o.iterations != null ? o.iterations : defaultIterations();
            open(false, bufferBytes());
            serverIp = IpConfig.fabricPlan(o.serverAddress).address();
            ourPort = pn.ip.bindUdp(0, this::clientControl);
            createQp(mode.equals("direct") ? TransferMode.DIRECT : TransferMode.PACKET);
            int ourPsn = new SplittableRandom().nextInt(1 << 24);
            hello(ourPsn);
            int[] sizes = sizes(Math.min(half, peerBuffer));
            if (sizes.length == 0 || sizes[sizes.length - 1] > peerBuffer) {
                throw new IllegalArgumentException(name + ": the server's buffer holds " + peerBuffer + " bytes, less than "
                        + bufferBytes() + "; start it with the same -s or -a");
            }
            if (bw) {
                bandwidth(sizes, iterations);
            } else {
                latency(sizes, iterations);
            }
            return 0;
        } finally {
            try {
                if (pn != null && helloed) {
                    control.set(ValueLayout.JAVA_BYTE, 0, BYE);
                    pn.ip.sendUdp(ourPort, serverIp, CONTROL_PORT, control, 0, 1);
                }
            } finally {
                close();
            }
        }
    }

    private void clientControl(int src, int srcPort, int dst, MemorySegment m, long off, int len) {
        byte c = len > 0 ? m.get(ValueLayout.JAVA_BYTE, off) : 0;
        if (c == HELLO && len >= 40 && !helloed) {
            int qpn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
            int psn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
            peerRkey = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 12);
            peerAddr = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 16);
            peerBuffer = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 24);
            floorWindow = pn.node.openWindow(m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 32),
                    m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 36));
            connect(o.serverAddress, qpn, psn, helloPsn);
            helloed = true;
        } else if (c == ACK && len >= 16) {
            ackValue = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 8);
            ackSeq = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
        }
    }

    private int helloPsn;

    private void hello(int ourPsn) {
        helloPsn = ourPsn;
        long deadline = System.nanoTime() + 30_000_000_000L;
        control.set(ValueLayout.JAVA_BYTE, 0, HELLO);
        control.set(ValueLayout.JAVA_BYTE, 1, (byte) (mode.equals("direct") ? 1 : 0));
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, ctx.node());
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 8, qp.qpNum());
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 12, ourPsn);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 16, mr.rkey());
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 20, mr.addr());
        while (!helloed) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + name + " server at node " + o.serverAddress + " of " + o.fabric
                        + " after 30 s; start one with --server");
            }
            pn.ip.sendUdp(ourPort, serverIp, CONTROL_PORT, control, 0, 28);
            long until = System.nanoTime() + 10_000_000L;
            while (!helloed && System.nanoTime() < until) {
                pn.link.poll(64, System.nanoTime());
                ctx.poll(System.nanoTime());
            }
        }
        progress();
    }

    /** Starts a server phase and waits for its acknowledgement; returns the server's receive count. */
    private long command(byte c, int size, long count, long start) {
        int seq = ++sendSeq;
        control.set(ValueLayout.JAVA_BYTE, 0, c);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, seq);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 8, size);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 12, count);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 20, start);
        pn.ip.sendUdp(ourPort, serverIp, CONTROL_PORT, control, 0, 28);
        progress();
        while (ackSeq != seq) {
            pump();
            drainSends();
        }
        progress();
        return ackValue;
    }

    // ---- client: latency ---------------------------------------------------------------------

    private long floorCounter;
    private PerfTrace trace;

    private void floor(long n, Histogram h) {
        command(FLOOR, 0, n, floorCounter);
        floorCounter = FloorLine.measure(floorWindow.memory(), floorCounter, n, h);
        progress();
    }

    private void latency(int[] sizes, long iterations) {
        Histogram floor = LatencyStats.newHistogram();
        List<LatencyStats> rows = new ArrayList<>();
        double[] ratios = new double[sizes.length];
        Turns turns = null;
        PerfReport report = o.report(name);
        trace = o.tracing(describe() + ", mode " + mode).attach(report);
        boolean halved = op == Op.WRITE || op == Op.SEND;
        long warm = Math.min(warmup, iterations);
        floor(warm, null);
        for (int i = 0; i < sizes.length; i++) {
            int size = sizes[i];
            prepare(size);
            ops(size, warm, null);
            turns = new Turns(2, iterations) // 0 ours, 1 floor
                    .observe(report, o.progress(name + " " + size + " B", iterations), "ours", "floor");
            for (int t = 0; t < turns.count(); t++) {
                long n = turns.length(t);
                floor(n, turns.turn(1));
                ops(size, n, turns.turn(0));
                turns.endTurn();
            }
            rows.add(halved ? LatencyStats.ofRoundTrips(turns.pooled(0)) : LatencyStats.of(turns.pooled(0)));
            ratios[i] = turns.ratio(0, 1);
            floor.add(turns.pooled(1));
        }
        trace.export();
        LatencyStats f = halved ? LatencyStats.ofRoundTrips(floor) : LatencyStats.of(floor);
        System.out.println(name + ": " + describe() + ", " + modeLine() + (halved ? ", half round trip" : ", each op to its completion")
                + ", fabric " + o.fabric);
        System.out.println(LatencyStats.perftestHeader());
        StringBuilder json = new StringBuilder();
        for (int i = 0; i < sizes.length; i++) {
            LatencyStats a = rows.get(i);
            System.out.println(a.perftestRow(sizes[i]));
            if (i > 0) {
                json.append(',');
            }
            json.append(String.format(Locale.ROOT, "{\"bytes\":%d,%s,\"ratio\":%.3f}", sizes[i], a.json(), ratios[i]));
        }
        LatencyStats last = rows.get(rows.size() - 1);
        double ratio = ratios[sizes.length - 1];
        System.out.printf(Locale.ROOT, "floor p50 %.3f us, ratio %.2f  (one cache line handed off between the same two processes%s;"
                        + " the ratio is the median over turns of %d of each turn's p50 ratio)%n",
                f.p50() / 1000, ratio, halved ? ", one way" : ", round trip", Turns.TURN);
        if (o.json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"mode\":\"%s\",\"bytes\":%d,\"round_trip\":%b,%s,\"floor\":{\"bytes\":8,%s},"
                            + "\"ratio\":%.3f,\"pooled_ratio\":%.3f,\"turns\":%d%s}%n", name, mode, sizes[sizes.length - 1], !halved,
                    last.json(), f.json(), ratio, turns.pooledRatio(0, 1), turns.count(), all ? ",\"rows\":[" + json + "]" : "");
        }
    }

    private String modeLine() {
        return "mode " + mode;
    }

    private String describe() {
        return switch (op) {
            case WRITE -> bw ? "RDMA WRITE stream" : "RDMA WRITE ping-pong";
            case SEND -> bw ? "SEND stream" : "SEND ping-pong";
            case READ -> bw ? "RDMA READ stream" : "RDMA READ";
            case ATOMIC -> "FETCH_AND_ADD";
        };
    }

    /** Sets the work request for one size (built once, posted many times). */
    private void prepare(int size) {
        switch (op) {
            case WRITE -> swr.opcode(WrOpcode.RDMA_WRITE).local(mr, half, size).remote(peerAddr, peerRkey);
            case SEND -> swr.opcode(WrOpcode.SEND).local(mr, half, size);
            case READ -> swr.opcode(WrOpcode.RDMA_READ).local(mr, 0, size).remote(peerAddr, peerRkey);
            case ATOMIC -> swr.opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).local(mr, 0, 8).remote(peerAddr, peerRkey).compareAdd(1);
        }
    }

    private void ops(int size, long n, Histogram h) {
        switch (op) {
            case WRITE -> writePingPong(size, n, h);
            case SEND -> sendPingPong(size, n, h);
            case READ, ATOMIC -> oneByOne(n, h);
        }
    }

    private void writePingPong(int size, long n, Histogram h) {
        BYTE.setRelease(mem, (long) size - 1, (byte) 0);
        command(WRITE_ECHO, size, n, 0);
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = writeRound(size);
            if (traced) {
                trace.end();
            }
            if (h != null) {
                h.recordValue(t);
            }
            drainSends();
            progress();
        }
    }

    /**
     * One timed round trip of write-lat, in a method of its own called per round (and so the server's
     * {@link #echoRound}). Measured in alternating runs: p50 85-120 ns at 65-75 ns floors this way,
     * 145-200 ns with the round written inside the loop; the loop's on-stack-replaced code is the likely
     * cause. Every latency tool's round is now a method of its own, for the reason {@link FloorLine#ping} gives.
     */
    private long writeRound(int size) {
        byte v = nextRolling(rolling);
        rolling = v & 0xFF;
        mem.set(ValueLayout.JAVA_BYTE, half + size - 1, v);
        swr.sendFlags(latFlags(size));
        long t0 = System.nanoTime();
        qp.postSend(swr);
        awaitLast(size, v);
        return System.nanoTime() - t0;
    }

    private void sendPingPong(int size, long n, Histogram h) {
        command(SEND_ECHO, size, n, 0);
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = sendRound(size);
            if (traced) {
                trace.end();
            }
            if (h != null) {
                h.recordValue(t);
            }
            drainSends();
            progress();
        }
    }

    /** One timed round trip of send-lat (a method of its own, as {@link #writeRound}). */
    private long sendRound(int size) {
        swr.sendFlags(latFlags(size));
        long t0 = System.nanoTime();
        qp.postSend(swr);
        for (int looks = 1; drainRecvs() == 0; looks++) {
            look(looks);
        }
        return System.nanoTime() - t0;
    }

    private void oneByOne(long n, Histogram h) {
        swr.sendFlags(SendFlags.SIGNALED);
        for (long i = 0; i < n; i++) {
            boolean traced = h != null && trace.begin();
            long t = opRound();
            if (traced) {
                trace.end();
            }
            check(wc);
            if (h != null) {
                h.recordValue(t);
            }
            if (op == Op.ATOMIC) {
                long got = mem.get(ValueLayout.JAVA_LONG, 0);
                if (!atomicStarted) { // the server's word need not start at 0 on a reused fabric
                    atomicStarted = true;
                    atomicExpect = got;
                }
                if (got != atomicExpect) {
                    throw new IllegalStateException(name + ": FETCH_AND_ADD returned " + got + ", expected " + atomicExpect);
                }
                atomicExpect++;
            }
            progress();
        }
    }

    /** One timed READ or atomic to its completion (a method of its own, as {@link #writeRound}). */
    private long opRound() {
        long t0 = System.nanoTime();
        qp.postSend(swr);
        for (int looks = 1; !sendCq.poll(wc); looks++) {
            look(looks);
        }
        return System.nanoTime() - t0;
    }

    // ---- client: bandwidth -------------------------------------------------------------------

    private void bandwidth(int[] sizes, long iterations) {
        PerfReport report = o.report(name);
        MemorySegment copySrc = java.lang.foreign.Arena.ofAuto().allocate(sizes[sizes.length - 1], 64);
        MemorySegment copyDst = java.lang.foreign.Arena.ofAuto().allocate(sizes[sizes.length - 1], 64);
        copySrc.fill((byte) 0x5A);
        System.out.println(name + ": " + describe() + ", " + modeLine() + ", tx-depth " + txDepth + ", fabric " + o.fabric);
        System.out.printf(Locale.ROOT, "%8s %12s %18s %21s %15s %19s%n", "#bytes", "#iterations", "BW peak[MB/sec]",
                "BW average[MB/sec]", "MsgRate[Mpps]", "BW average[Gbit/s]");
        StringBuilder rowsJson = new StringBuilder();
        String lastJson = "";
        String floorLine = "";
        double lastRatio = 0;
        for (int size : sizes) {
            prepare(size);
            long warm = Math.max(1, Math.min(warmup, iterations / 10 + 1));
            FabricBandwidth.copies(copySrc, copyDst, size, warm);
            stream(size, warm);
            long per = Math.max(1, iterations / ROUNDS_BW);
            long ours = 0;
            long floor = 0;
            long total = 0;
            double peak = 0;
            if (report != null) {
                report.rates("Gbit/s", "ours", "copy-floor"); // with -a, the report keeps the last size
            }
            for (int r = 0; r < ROUNDS_BW; r++) {
                long k = r == ROUNDS_BW - 1 ? iterations - per * (ROUNDS_BW - 1) : per;
                if (k <= 0) {
                    continue;
                }
                long f = FabricBandwidth.copies(copySrc, copyDst, size, k);
                long t = stream(size, k);
                floor += f;
                ours += t;
                total += k;
                if (report != null) {
                    report.rate(0, k * (double) size * 8 / t);
                    report.rate(1, k * (double) size * 8 / f);
                }
                peak = Math.max(peak, k * (double) size / t * 1e9 / (1 << 20));
            }
            double avgMBs = total * (double) size / ours * 1e9 / (1 << 20);
            double gbit = total * (double) size * 8 / ours;
            double mpps = total * 1e3 / ours;
            double floorGbit = total * (double) size * 8 / floor;
            double floorMBs = total * (double) size / floor * 1e9 / (1 << 20);
            lastRatio = gbit / floorGbit;
            System.out.printf(Locale.ROOT, "%8d %12d %18.2f %21.2f %15.6f %19.2f%n", size, total, peak, avgMBs, mpps, gbit);
            floorLine = String.format(Locale.ROOT, "floor: single-thread MemorySegment.copy of %d bytes %.2f MB/sec (%.2f Gbit/s), "
                    + "ratio %.2f", size, floorMBs, floorGbit, lastRatio);
            if (all) {
                System.out.println("  " + floorLine);
            }
            lastJson = String.format(Locale.ROOT, "\"bytes\":%d,\"iterations\":%d,\"peak_mb_s\":%.2f,\"avg_mb_s\":%.2f,\"gbit_s\":%.3f,"
                    + "\"msgs_s\":%.1f,\"floor\":{\"mb_s\":%.2f,\"gbit_s\":%.3f,\"msgs_s\":%.1f},\"ratio\":%.3f", size, total, peak, avgMBs,
                    gbit, total * 1e9 / ours, floorMBs, floorGbit, total * 1e9 / floor, lastRatio);
            if (rowsJson.length() > 0) {
                rowsJson.append(',');
            }
            rowsJson.append('{').append(lastJson).append('}');
        }
        if (!all) {
            System.out.println(floorLine);
        }
        if (report != null) {
            report.write(false);
        }
        if (o.json) {
            System.out.printf(Locale.ROOT, "{\"test\":\"%s\",\"mode\":\"%s\",\"tx_depth\":%d,%s%s}%n", name, mode, txDepth, lastJson,
                    all ? ",\"rows\":[" + rowsJson + "]" : "");
        }
    }

    /** Posts {@code n} operations keeping at most --tx-depth outstanding; returns the nanoseconds to the last completion. */
    private long stream(int size, long n) {
        long before = op == Op.SEND ? command(SYNC, 0, 0, 0) : 0;
        int flags = inline(size, op) ? SendFlags.INLINE : 0;
        int mod = Math.min(cqMod, txDepth);
        long posted = 0;
        long completed = 0;
        long t0 = System.nanoTime();
        while (completed < n) {
            while (posted < n && posted - completed < txDepth) {
                swr.wrId = posted;
                swr.sendFlags((posted + 1) % mod == 0 || posted == n - 1 ? flags | SendFlags.SIGNALED : flags);
                qp.postSend(swr);
                posted++;
            }
            if (!sendCq.poll(wc)) {
                pump();
                continue;
            }
            check(wc);
            completed = wc.wrId + 1;
            progress();
        }
        long t = System.nanoTime() - t0;
        if (op == Op.SEND) {
            long got = command(SYNC, 0, 0, 0) - before;
            if (got != n) {
                throw new IllegalStateException(name + ": the server received " + got + " messages of " + n + " sent");
            }
        }
        return t;
    }

    private void close() {
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
