package dev.nupa.node.perftest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

import dev.nupa.l2.Datapath;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.cm.RdmaCm;
import io.vertx.core.Promise;

/**
 * One side of rping (rdma-core's librdmacm example) on a connected RC QP, as a timer of the node's datapath. Each
 * ping: the client SENDs where its source buffer is ({@code be64 addr, be32 rkey, be32 size}: 16 bytes), the server
 * READs it and SENDs 16 bytes of "go ahead"; the client SENDs where its sink buffer is, the server WRITEs the text
 * it read there (up to its NUL) and says go ahead again. The client fills its source with {@code "rdma-ping-N: "} and
 * a run of letters, and with {@code validate} checks that the sink came back the same. Runs on the datapath thread.
 */
final class RpingSession implements Datapath.Timer {
    static final int INFO = 16;
    static final int MIN_SIZE = 26; // rping's RPING_MIN_BUFSIZE: "2147483647" and "rdma-ping-%d: ", each with its NUL
    private static final ValueLayout.OfLong BE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    // the region: what we receive, what we send, the source the peer reads, the sink the peer writes
    private static final long RECV = 0;
    private static final long SEND = INFO;
    private static final long START = 2 * INFO;
    private static final int WR_READ = 1;
    private static final int WR_WRITE = 2;
    private static final int WR_SEND = 3;

    private enum Step { ADVERTISE_START, AWAIT_READ_GO, AWAIT_WRITE_GO, AWAIT_READ_ADV, AWAIT_READ, AWAIT_WRITE_ADV, AWAIT_WRITE }

    private final boolean server;
    private final int size;
    private final long count;
    private final boolean verbose;
    private final boolean validate;
    private final Consumer<String> out;
    private final Datapath datapath;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final MemoryRegion mr;
    private final MemorySegment mem;
    private final long rdma; // the sink's offset
    final QueuePair qp;
    private final WorkCompletion wc = new WorkCompletion();
    private final SendWorkRequest swr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private Step step;
    private long pings;
    private int letter = 'A';
    private boolean running;
    private Promise<Long> done;

    /** The QP in INIT with its one receive posted, so the peer's first SEND finds it (rping posts it before connecting). */
    RpingSession(RdmaContext ctx, Datapath datapath, boolean server, int size, long count, boolean verbose, boolean validate,
                 Consumer<String> out) {
        this.server = server;
        this.size = size;
        this.count = count;
        this.verbose = verbose;
        this.validate = validate;
        this.out = out;
        this.datapath = datapath;
        this.rdma = START + size;
        pd = ctx.allocPd();
        cq = ctx.createCq(64);
        mr = pd.allocMr(START + 2L * size, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
        mem = mr.memory();
        mem.fill((byte) 0);
        qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET).withCapacity(16, 2));
        RdmaCm.toInit(qp);
        rwr.wrId(0).local(mr, RECV, INFO);
        qp.postRecv(rwr);
        step = server ? Step.AWAIT_READ_ADV : Step.ADVERTISE_START;
    }

    /** Begins once the connection is made; {@code done} gets the pings done, or the reason they stopped. */
    void start(Promise<Long> done) {
        this.done = done;
        running = true;
        datapath.addTimer(this);
    }

    /** The peer disconnected: a server's run ends there (rping's server serves one client), a client's is cut short. */
    void peerLeft() {
        if (!running) {
            return;
        }
        if (server) {
            finish(null);
        } else {
            finish(new IllegalStateException("the rping server disconnected after " + pings + " of " + count + " pings"));
        }
    }

    @Override
    public long poll(long now) {
        if (!running) {
            return Long.MAX_VALUE;
        }
        try {
            if (step == Step.ADVERTISE_START) {
                advertiseStart();
            }
            while (running && cq.poll(wc)) {
                onCompletion();
            }
        } catch (RuntimeException e) {
            finish(e);
        }
        return running ? now : Long.MAX_VALUE;
    }

    private void onCompletion() {
        if (wc.status != WcStatus.SUCCESS) {
            throw new IllegalStateException("rping: a work request completed with " + WcStatus.name(wc.status) + " after " + pings
                    + " pings");
        }
        if (wc.opcode == WcOpcode.RECV) {
            if (wc.byteLen != INFO) {
                throw new IllegalStateException("rping: the peer sent " + wc.byteLen + " bytes where rping sends " + INFO);
            }
            onReceive();
            return;
        }
        if (wc.wrId == WR_READ && step == Step.AWAIT_READ) {
            if (verbose) {
                out.accept("server ping data: " + text(rdma));
            }
            goAhead(Step.AWAIT_WRITE_ADV);
        } else if (wc.wrId == WR_WRITE && step == Step.AWAIT_WRITE) {
            pings++;
            goAhead(Step.AWAIT_READ_ADV);
        }
    }

    private void onReceive() {
        long addr = mem.get(BE64, RECV);
        int rkey = mem.get(BE32, RECV + 8);
        int len = mem.get(BE32, RECV + 12);
        qp.postRecv(rwr); // rping keeps one receive posted
        switch (step) {
            case AWAIT_READ_GO -> {
                info(rdma);
                send(Step.AWAIT_WRITE_GO);
            }
            case AWAIT_WRITE_GO -> {
                if (validate && mem.asSlice(START, size).mismatch(mem.asSlice(rdma, size)) != -1) {
                    throw new IllegalStateException("rping: ping " + pings + " came back different: " + text(rdma));
                }
                if (verbose) {
                    out.accept("ping data: " + text(rdma));
                }
                pings++;
                step = Step.ADVERTISE_START;
                if (pings == count) {
                    finish(null);
                }
            }
            case AWAIT_READ_ADV -> {
                if (len < 1 || len > size) {
                    throw new IllegalStateException("rping: the client's buffer is " + len + " bytes; this server's holds " + size
                            + " (start it with -S " + Math.max(len, MIN_SIZE) + ")");
                }
                swr.wrId(WR_READ).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED).local(mr, rdma, len).remote(addr, rkey);
                qp.postSend(swr);
                step = Step.AWAIT_READ;
            }
            case AWAIT_WRITE_ADV -> {
                int n = Math.min(len, textLength(rdma) + 1); // rping writes the text with its NUL
                swr.wrId(WR_WRITE).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED).local(mr, rdma, n).remote(addr, rkey);
                qp.postSend(swr);
                step = Step.AWAIT_WRITE;
            }
            default -> throw new IllegalStateException("rping: a SEND from the peer came out of turn (" + step + ")");
        }
    }

    /** The client's next ping: the source filled as rping fills it, then where it is. */
    private void advertiseStart() {
        byte[] head = ("rdma-ping-" + pings + ": ").getBytes(StandardCharsets.US_ASCII);
        int n = Math.min(head.length, size);
        MemorySegment.copy(head, 0, mem, ValueLayout.JAVA_BYTE, START, n);
        int c = letter;
        for (int i = n; i < size; i++) {
            mem.set(ValueLayout.JAVA_BYTE, START + i, (byte) c);
            c = c == 'z' ? 'A' : c + 1;
        }
        letter = letter == 'z' ? 'A' : letter + 1;
        mem.set(ValueLayout.JAVA_BYTE, START + size - 1, (byte) 0);
        mem.asSlice(rdma, size).fill((byte) 0);
        info(START);
        send(Step.AWAIT_READ_GO);
    }

    private void info(long buffer) {
        mem.set(BE64, SEND, mr.addr() + buffer);
        mem.set(BE32, SEND + 8, mr.rkey());
        mem.set(BE32, SEND + 12, size);
    }

    private void goAhead(Step next) {
        mem.asSlice(SEND, INFO).fill((byte) 0); // rping's server sends its send buffer unformatted: zeros
        send(next);
    }

    private void send(Step next) {
        swr.wrId(WR_SEND).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mr, SEND, INFO);
        qp.postSend(swr);
        step = next;
    }

    private int textLength(long at) {
        int n = 0;
        while (n < size && mem.get(ValueLayout.JAVA_BYTE, at + n) != 0) {
            n++;
        }
        return n;
    }

    private String text(long at) {
        byte[] b = new byte[textLength(at)];
        MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, at, b, 0, b.length);
        return new String(b, StandardCharsets.US_ASCII);
    }

    private void finish(RuntimeException failure) {
        running = false;
        datapath.removeTimer(this);
        if (failure != null) {
            done.tryFail(failure);
        } else {
            done.tryComplete(pings);
        }
    }

    /** Gives the QP, queue and region back; on the datapath thread, after the run. */
    void close() {
        running = false;
        datapath.removeTimer(this);
        qp.close();
        cq.close();
        mr.close();
        pd.close();
    }
}
