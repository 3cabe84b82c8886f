package dev.nupa.node.perftest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

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
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;

/**
 * perftest's side channel with {@code -R}: an RC connection of its own, made through the CM, on which each message is
 * one SEND of exactly its size into the peer's one posted receive of {@link #RECEIVE} bytes, the client first and
 * strictly in turn (perftest re-posts its receive after each message, so a second SEND in a row would meet none).
 * The QP and its completions belong to the datapath thread; the Futures complete on the caller's context.
 */
final class PerftestCmChannel implements PerftestSideChannel, Datapath.Timer {
    /** perftest's receive: sizeof(struct pingpong_dest). */
    static final int RECEIVE = 56;

    private final boolean server;
    private final RdmaCm cm;
    private final Datapath datapath;
    private final Context context;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final MemoryRegion mr;
    private final MemorySegment mem;
    final QueuePair qp;
    private final WorkCompletion wc = new WorkCompletion();
    private final SendWorkRequest swr = new SendWorkRequest();
    private final RecvWorkRequest rwr = new RecvWorkRequest();
    private Promise<Buffer> pending;
    private Buffer outgoing;
    private Buffer received; // the peer's message for the exchange under way
    private Buffer early; // the peer's next message, come before our last SEND's completion
    private boolean posted;
    private boolean sent;
    private boolean closed;

    /** On the datapath thread: the QP in INIT with its receive posted, ready for the CM to connect or accept. */
    PerftestCmChannel(RdmaContext ctx, RdmaCm cm, Datapath datapath, boolean server, Context context) {
        this.server = server;
        this.cm = cm;
        this.datapath = datapath;
        this.context = context;
        pd = ctx.allocPd();
        cq = ctx.createCq(16);
        mr = pd.allocMr(2 * RECEIVE, Access.LOCAL_WRITE);
        mem = mr.memory();
        qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET).withCapacity(4, 2));
        RdmaCm.toInit(qp);
        rwr.wrId(1).local(mr, 0, RECEIVE);
        qp.postRecv(rwr);
        datapath.addTimer(this);
    }

    @Override
    public boolean rdmaCm() {
        return true;
    }

    /** The client sends, then takes the answer; the server takes the message, then answers (perftest's order). */
    @Override
    public Future<Buffer> exchange(Buffer mine) {
        if (mine.length() > RECEIVE) {
            return Future.failedFuture(new IllegalArgumentException("a " + mine.length() + "-byte message does not fit perftest's "
                    + RECEIVE + "-byte receive on its rdma_cm side channel"));
        }
        Promise<Buffer> p = Promise.promise();
        datapath.execute(() -> {
            if (closed) {
                context.runOnContext(v -> p.fail(new IllegalStateException("the perftest side channel is closed")));
                return;
            }
            pending = p;
            outgoing = mine;
            posted = false;
            sent = false;
            received = early;
            early = null;
            if (!server || received != null) {
                send();
            }
        });
        return p.future();
    }

    private void send() {
        MemorySegment.copy(outgoing.getBytes(), 0, mem, ValueLayout.JAVA_BYTE, RECEIVE, outgoing.length());
        swr.wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mr, RECEIVE, outgoing.length());
        qp.postSend(swr);
        posted = true;
    }

    @Override
    public long poll(long now) {
        if (closed) {
            return Long.MAX_VALUE;
        }
        while (cq.poll(wc)) {
            if (wc.status != WcStatus.SUCCESS) {
                fail(new IllegalStateException("the perftest side channel's " + (wc.opcode == WcOpcode.RECV ? "receive" : "SEND")
                        + " completed with " + WcStatus.name(wc.status)));
                return Long.MAX_VALUE;
            }
            if (wc.opcode == WcOpcode.RECV) {
                byte[] b = new byte[wc.byteLen];
                MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, 0, b, 0, b.length);
                if (pending != null && received == null) {
                    received = Buffer.buffer(b);
                } else if (early == null) {
                    early = Buffer.buffer(b); // the next exchange's: the peer had our answer before its ACK reached us
                } else {
                    fail(new IllegalStateException("the perftest peer sent two messages ahead on the side channel; perftest sends in turn"));
                    return Long.MAX_VALUE;
                }
                qp.postRecv(rwr); // the next message's receive, before ours answers
                if (server && pending != null && !posted) {
                    send();
                }
            } else {
                sent = true;
            }
            // After each completion: the peer's next message may follow in the same batch, and must wait for its turn.
            if (pending != null && sent && received != null) {
                Promise<Buffer> p = pending;
                Buffer r = received;
                pending = null;
                received = null;
                context.runOnContext(v -> p.complete(r));
            }
        }
        return now + 20_000; // a look every 20 us while the channel lives: messages are few
    }

    private void fail(RuntimeException e) {
        Promise<Buffer> p = pending;
        pending = null;
        if (p != null) {
            context.runOnContext(v -> p.fail(e));
        }
    }

    /** Nothing follows the last exchange with {@code -R} (no "done"): the connection goes when the QP does. */
    @Override
    public Future<Void> finish() {
        return Future.succeededFuture();
    }

    /** Disconnects (DREQ) and gives the QP, queue and region back. */
    @Override
    public void close() {
        datapath.execute(() -> {
            if (closed) {
                return;
            }
            closed = true;
            datapath.removeTimer(this);
            fail(new IllegalStateException("the perftest side channel was closed"));
            try {
                cm.release(qp);
            } finally {
                qp.close();
                cq.close();
                mr.close();
                pd.close();
            }
        });
    }
}
