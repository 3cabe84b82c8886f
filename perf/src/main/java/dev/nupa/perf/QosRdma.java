package dev.nupa.perf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;

/**
 * {@code nupa perf qos --rdma}: the same three phases as the UDP test with RC queue pairs (packet mode) in place of
 * datagrams. The ping-pong is a SEND each way between the client's node and the server on QPs of service level
 * {@code --sl}. The bulk stream is RDMA WRITEs of {@code --bulk-size} bytes at level {@code --bulk-sl} into one buffer
 * of the server, whose responder places each packet, posted by {@code --bulk-senders} more nodes of the client
 * process, each in a thread of its own ({@link Bulk}): a requester's work per byte is the responder's (a copy each), so
 * one sender does not outrun its receiver, and the receiver's bulk ring fills only when several send into it, as in
 * an incast. A QP's level picks the receiver's ring through the sender's {@code ServiceLevels}, as a datagram's DSCP
 * does. The sides swap QP numbers, the senders' node addresses, the buffer's rkey and address over the UDP control
 * port ({@link #hello}, {@link #answer}).
 */
final class QosRdma {
    /** Bulk WRITEs kept posted: many more packets than a ring has slots. */
    static final int BULK_DEPTH = 128;
    private static final int PING_DEPTH = 64;
    private static final int SIGNAL_EVERY = 32;
    /** Bulk WRITE size by default: 16 packets at path MTU 4096. */
    static final int DEFAULT_BULK = 64 << 10;
    /** The largest bulk message (the fresh fabric gives each node window space for one). */
    static final int MAX_BULK = 256 << 10;
    /** Bulk senders at most. */
    static final int MAX_SENDERS = 8;

    private final RdmaContext ctx;
    private final CompletionQueue pingCq;
    private final CompletionQueue bulkCq;
    private final MemoryRegion mr;
    private final QueuePair ping;
    private final QueuePair[] bulk;
    private final int pathMtu;
    private final WorkCompletion wc = new WorkCompletion();
    private final SendWorkRequest pingWr = new SendWorkRequest();
    private final SendWorkRequest bulkWr = new SendWorkRequest();
    private final RecvWorkRequest recvWr = new RecvWorkRequest();
    private int bulkOutstanding;
    private long bulkPosted;
    private long pingsPosted;

    /**
     * A node's verbs: a ping QP and {@code bulkQps} bulk QPs (the server's: one per sender; a sender's: one), in INIT,
     * and one region for the bulk buffer and the ping buffers.
     */
    QosRdma(PerfNode pn, int size, int bulkSize, int bulkQps) {
        ctx = RdmaContext.open(pn.link, 16, 64, System::nanoTime);
        ProtectionDomain pd = ctx.allocPd();
        pingCq = ctx.createCq(4 * PING_DEPTH);
        bulkCq = ctx.createCq(BULK_DEPTH);
        int slot = Math.max(size, 64);
        // the bulk buffer (the peer WRITEs into it, or we WRITE from it), a ping receive buffer, a ping send buffer
        mr = pd.allocMr(bulkSize + 2L * slot, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        int mtu = 4096;
        while (mtu > 256 && mtu + 64 > pn.link.mtu()) {
            mtu >>= 1;
        }
        pathMtu = mtu;
        ping = ctx.createQp(pd, QpInitAttr.rc(pingCq, pingCq).withMode(TransferMode.PACKET).withCapacity(PING_DEPTH, PING_DEPTH));
        bulk = new QueuePair[bulkQps];
        for (int i = 0; i < bulkQps; i++) {
            bulk[i] = ctx.createQp(pd, QpInitAttr.rc(bulkCq, bulkCq).withMode(TransferMode.PACKET).withCapacity(BULK_DEPTH, 1));
        }
        for (QueuePair qp : all()) {
            qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                    QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
        }
        recvWr.local(mr, bulkSize, slot);
        for (int i = 0; i < PING_DEPTH; i++) {
            ping.postRecv(recvWr);
        }
        pingWr.opcode(WrOpcode.SEND).local(mr, bulkSize + (long) slot, size);
        bulkWr.opcode(WrOpcode.RDMA_WRITE).local(mr, 0, bulkSize);
    }

    private QueuePair[] all() {
        QueuePair[] a = java.util.Arrays.copyOf(bulk, bulk.length + 1);
        a[bulk.length] = ping;
        return a;
    }

    /**
     * The client's HELLO after its op byte: its ping QP's number and, per bulk sender, the sender's bulk QP number and
     * node; returns the message's length.
     */
    int hello(MemorySegment m, int[] senderQpns, int[] senderNodes) {
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 1, ping.qpNum());
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 5, senderQpns.length);
        for (int i = 0; i < senderQpns.length; i++) {
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 9 + 8L * i, senderQpns[i]);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 13 + 8L * i, senderNodes[i]);
        }
        return 9 + 8 * senderQpns.length;
    }

    /** The server's answer after its op byte: its ping QP, its buffer's rkey and address, its bulk QPs; the length. */
    int answer(MemorySegment m) {
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 1, ping.qpNum());
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 5, mr.rkey());
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, 9, mr.addr());
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 17, bulk.length);
        for (int i = 0; i < bulk.length; i++) {
            m.set(ValueLayout.JAVA_INT_UNALIGNED, 21 + 4L * i, bulk[i].qpNum());
        }
        return 21 + 4 * bulk.length;
    }

    /** Server: connects the ping QP to the client's node and each bulk QP to its sender, as the HELLO {@code m} says. */
    void connectServer(int clientNode, MemorySegment m, long off, int len, int pingSl, int bulkSl) {
        int n = len >= 9 ? m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 5) : -1;
        if (n != bulk.length || len < 9 + 8 * n) {
            throw new IllegalStateException("qos --rdma: a HELLO for " + n + " bulk senders, this server has " + bulk.length);
        }
        connect(ping, clientNode, m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 1), pingSl);
        for (int i = 0; i < n; i++) {
            connect(bulk[i], m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 13 + 8L * i), m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 9 + 8L * i),
                    bulkSl);
        }
    }

    /** Client: connects the ping QP to the server's, as the server's answer {@code m} says. */
    void connectPing(int serverNode, MemorySegment m, long off, int pingSl) {
        connect(ping, serverNode, m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 1), pingSl);
    }

    /** Bulk sender {@code index}: connects its bulk QP to the server's and aims its WRITEs at the server's buffer. */
    void connectBulk(int serverNode, MemorySegment m, int index, int bulkSl) {
        bulkWr.remote(m.get(ValueLayout.JAVA_LONG_UNALIGNED, 9), m.get(ValueLayout.JAVA_INT_UNALIGNED, 5));
        connect(bulk[0], serverNode, m.get(ValueLayout.JAVA_INT_UNALIGNED, 21 + 4L * index), bulkSl);
    }

    private void connect(QueuePair qp, int peerNode, int peerQpn, int sl) {
        qp.modify(new QpAttr().qpState(QpState.RTR).destNode(peerNode).sl(sl).pathMtu(pathMtu).destQpNum(peerQpn).rqPsn(0)
                        .maxDestRdAtomic(1).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
        qp.modify(new QpAttr().qpState(QpState.RTS).sqPsn(0).timeout(17).retryCnt(7).rnrRetry(7).maxRdAtomic(1),
                QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT | QpAttrMask.RNR_RETRY
                        | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    int bulkQpn() {
        return bulk[0].qpNum();
    }

    void poll(long now) {
        ctx.poll(now);
    }

    /** Server: answers each ping it received with a SEND of the same size. */
    void serve() {
        while (pingCq.poll(wc)) {
            check(wc);
            if (wc.opcode == WcOpcode.RECV) {
                ping.postRecv(recvWr);
                postPing();
            }
        }
    }

    /** A ping (or pong): a SEND on the ping QP, signalled every {@link #SIGNAL_EVERY}th so its queue drains. */
    void postPing() {
        pingWr.sendFlags(++pingsPosted % SIGNAL_EVERY == 0 ? SendFlags.SIGNALED : 0);
        ping.postSend(pingWr);
    }

    /** Client: takes the ping QP's completions; true once a pong arrived. */
    boolean pong() {
        boolean got = false;
        while (pingCq.poll(wc)) {
            check(wc);
            if (wc.opcode == WcOpcode.RECV) {
                ping.postRecv(recvWr);
                got = true;
            }
        }
        return got;
    }

    /** Posts one bulk WRITE unless {@link #BULK_DEPTH} are outstanding (its signalled completions taken first). */
    boolean sendBulk() {
        while (bulkCq.poll(wc)) {
            check(wc);
            bulkOutstanding -= SIGNAL_EVERY;
        }
        if (bulkOutstanding + SIGNAL_EVERY > BULK_DEPTH) {
            return false;
        }
        bulkWr.sendFlags(++bulkPosted % SIGNAL_EVERY == 0 ? SendFlags.SIGNALED : 0);
        bulk[0].postSend(bulkWr);
        bulkOutstanding++;
        return true;
    }

    /**
     * Bulk sender: waits (polling, at most 5 s) until every WRITE posted has completed, so its node leaves with nothing
     * in flight: a last, signalled WRITE of no bytes completes after all before it (RC completes in order).
     */
    void drainBulk(PerfNode pn) {
        if (bulkPosted % SIGNAL_EVERY == 0 && bulkOutstanding <= 0) {
            return;
        }
        bulk[0].postSend(new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).wrId(1).sendFlags(SendFlags.SIGNALED)
                .local(mr, 0, 0).remote(bulkWr.remoteAddr, bulkWr.rkey));
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            long now = System.nanoTime();
            pn.link.poll(16, now);
            ctx.poll(now);
            while (bulkCq.poll(wc)) {
                check(wc);
                if (wc.wrId == 1) {
                    return;
                }
            }
        }
        throw new IllegalStateException("qos --rdma: a bulk sender's WRITEs did not complete within 5 s of the end");
    }

    private static void check(WorkCompletion w) {
        if (w.status != WcStatus.SUCCESS) {
            throw new IllegalStateException("qos --rdma: a work request completed with " + WcStatus.name(w.status) + ": " + w);
        }
    }

    void close() {
        ctx.close();
    }

    /**
     * One of the client's bulk senders: a node of its own at {@code address}, whose thread (the owner of its verbs)
     * connects its bulk QP, the server's {@code index}th, once the server's answer comes and then keeps WRITEs posted
     * while {@link #on} is set.
     */
    static final class Bulk implements AutoCloseable {
        final int index;
        final int address;
        volatile boolean on;
        volatile boolean stop;
        /** WRITEs posted while on, written by the bulk thread. */
        volatile long posted;
        /** The bulk QP's number, once the thread has opened its node. */
        final CompletableFuture<Integer> opened = new CompletableFuture<>();
        private final CompletableFuture<byte[]> answer = new CompletableFuture<>();
        private final CompletableFuture<Void> ended = new CompletableFuture<>();

        Bulk(PerfOptions o, int index, int address, int size, int bulkSize, int bulkSl) {
            this.index = index;
            this.address = address;
            Thread.ofPlatform().name("qos-bulk-" + index).daemon().start(() -> run(o, size, bulkSize, bulkSl));
        }

        /** The server's answer, as the control datagram carried it. */
        void answered(byte[] description) {
            answer.complete(description);
        }

        private void run(PerfOptions o, int size, int bulkSize, int bulkSl) {
            PerfNode pn = null;
            QosRdma side = null;
            try {
                pn = new PerfNode(o, address);
                side = new QosRdma(pn, size, bulkSize, 1);
                opened.complete(side.bulkQpn());
                byte[] d = answer.get(60, TimeUnit.SECONDS);
                side.connectBulk(o.serverAddress, MemorySegment.ofArray(d), index, bulkSl);
                long n = 0;
                while (!stop) {
                    long now = System.nanoTime();
                    pn.link.poll(16, now);
                    side.poll(now);
                    if (on && side.sendBulk()) {
                        posted = ++n;
                    }
                }
                side.drainBulk(pn);
                ended.complete(null);
            } catch (Exception | Error e) {
                opened.completeExceptionally(e);
                ended.completeExceptionally(e);
            } finally {
                if (side != null) {
                    side.close();
                }
                if (pn != null) {
                    pn.close();
                }
            }
        }

        /** Stops the thread and rethrows what ended it early, if anything did. */
        @Override
        public void close() {
            stop = true;
            try {
                ended.get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException("qos --rdma: the bulk sender failed: " + e.getCause().getMessage(), e.getCause());
            } catch (Exception e) {
                throw new IllegalStateException("qos --rdma: the bulk sender did not stop: " + e, e);
            }
        }
    }
}
