package dev.nupa.roce;

/** Two nodes with one connected RC QP each and a 64 KiB window-backed region on each side. */
final class RcPair implements AutoCloseable {
    static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    final RdmaFixture fx;
    final RdmaContext a;
    final RdmaContext b;
    final ProtectionDomain pdA;
    final ProtectionDomain pdB;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final QueuePair qa;
    final QueuePair qb;
    final MemoryRegion mrA;
    final MemoryRegion mrB;

    RcPair(TransferMode mode, int mtu) {
        this(new RdmaFixture(), mode, mtu);
    }

    RcPair(RdmaFixture fx, TransferMode mode, int mtu) {
        this(fx, mode, mtu, 7, 7);
    }

    RcPair(RdmaFixture fx, TransferMode mode, int mtu, int retry, int rnrRetry) {
        this.fx = fx;
        a = fx.node(1);
        b = fx.node(2);
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

    @Override
    public void close() {
        fx.close();
    }
}
