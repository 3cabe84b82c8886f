package dev.nupa.roce;

import dev.nupa.roce.verbs.QpCap;
import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.TransferMode;

/**
 * What a queue pair is created with ({@code struct ibv_qp_init_attr}): its type, completion queues,
 * optional shared receive queue, capacities, and how RDMA payloads move ({@link TransferMode}).
 * {@code sqSigAll} makes every send request signaled.
 */
public record QpInitAttr(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, SharedReceiveQueue srq, int maxSendWr,
        int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData, boolean sqSigAll, TransferMode mode) {

    /** An RC QP in packet mode with 128 send and receive requests, 4 entries per list and 256 bytes inline. */
    public static QpInitAttr rc(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new QpInitAttr(QpType.RC, sendCq, recvCq, null, 128, 128, 4, 4, 256, false, TransferMode.PACKET);
    }

    public static QpInitAttr ud(CompletionQueue sendCq, CompletionQueue recvCq) {
        return new QpInitAttr(QpType.UD, sendCq, recvCq, null, 128, 128, 4, 4, 256, false, TransferMode.PACKET);
    }

    /** The capacities asked for, as {@code ibv_qp_init_attr}'s {@code cap}. */
    public QpCap cap() {
        return new QpCap(maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData);
    }

    public QpInitAttr withMode(TransferMode m) {
        return new QpInitAttr(type, sendCq, recvCq, srq, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll, m);
    }

    public QpInitAttr withSrq(SharedReceiveQueue s) {
        return new QpInitAttr(type, sendCq, recvCq, s, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll, mode);
    }

    public QpInitAttr withCapacity(int sendWr, int recvWr) {
        return new QpInitAttr(type, sendCq, recvCq, srq, sendWr, recvWr, maxSendSge, maxRecvSge, maxInlineData, sqSigAll, mode);
    }

    public QpInitAttr withSqSigAll(boolean all) {
        return new QpInitAttr(type, sendCq, recvCq, srq, maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, all, mode);
    }
}
