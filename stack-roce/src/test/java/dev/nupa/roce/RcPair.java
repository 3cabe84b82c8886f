package dev.nupa.roce;

import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WrOpcode;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.TransferMode;

/** Two nodes with one connected RC QP each and a 64 KiB window-backed region on each side. */
public final class RcPair implements AutoCloseable {
    public static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    public final RdmaFixture fx;
    public final RdmaContext a;
    public final RdmaContext b;
    public final ProtectionDomain pdA;
    public final ProtectionDomain pdB;
    public final CompletionQueue cqA;
    public final CompletionQueue cqB;
    public final QueuePair qa;
    public final QueuePair qb;
    public final MemoryRegion mrA;
    public final MemoryRegion mrB;

    public RcPair(TransferMode mode, int mtu) {
        this(new RdmaFixture(), mode, mtu);
    }

    public RcPair(RdmaFixture fx, TransferMode mode, int mtu) {
        this(fx, mode, mtu, 7, 7);
    }

    public RcPair(RdmaFixture fx, TransferMode mode, int mtu, int retry, int rnrRetry) {
        this(fx, fx.node(1), fx.node(2), mode, mtu, retry, rnrRetry);
    }

    /** Over nodes the caller opened: packet mode, MTU 1024, retry and RNR retry 7. */
    public RcPair(RdmaFixture fx, RdmaContext a, RdmaContext b) {
        this(fx, a, b, TransferMode.PACKET, 1024, 7, 7);
    }

    private RcPair(RdmaFixture fx, RdmaContext a, RdmaContext b, TransferMode mode, int mtu, int retry, int rnrRetry) {
        this.fx = fx;
        this.a = a;
        this.b = b;
        pdA = a.allocPd();
        pdB = b.allocPd();
        cqA = a.createCq(4096);
        cqB = b.createCq(4096);
        qa = a.createQp(pdA, QpInitAttr.rc(cqA, cqA).withMode(mode).withCapacity(1024, 1024));
        qb = b.createQp(pdB, QpInitAttr.rc(cqB, cqB).withMode(mode).withCapacity(1024, 1024));
        RdmaFixture.connect(qa, qb, mtu, 0x100, 0xFFFFF0, retry, rnrRetry);
        mrA = pdA.allocMr(64 * 1024, ALL);
        mrB = pdB.allocMr(64 * 1024, ALL);
    }

    /** Another RC QP on node a that completes into {@code cq}, connected to a new QP on node b (on {@link #cqB}). */
    public QueuePair qpOn(CompletionQueue cq) {
        QueuePair q = a.createQp(pdA, QpInitAttr.rc(cq, cq));
        QueuePair peer = b.createQp(pdB, QpInitAttr.rc(cqB, cqB));
        RdmaFixture.connect(q, peer, 1024);
        return q;
    }

    /** Posts signalled 8-byte WRITEs from {@link #mrA} to {@link #mrB} on {@code q}, wr_ids {@code from} up to {@code to}. */
    public void signaledWrites(QueuePair q, int from, int to) {
        SendWorkRequest w = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(mrA, 0, 8).remote(mrB.addr(), mrB.rkey());
        for (int i = from; i < to; i++) {
            q.postSend(w.wrId(i));
        }
    }

    @Override
    public void close() {
        fx.close();
    }
}
