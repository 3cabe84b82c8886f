package dev.nupa.roce.verbs;

/**
 * Queue pair attributes, in the manner of libibverbs' {@code struct ibv_qp_attr}: a mutable holder that
 * {@code QueuePair.modify} reads the masked fields of and {@code QueuePair.query} fills. Setters return
 * {@code this} so a transition reads as one expression.
 *
 * <p>The address vector names the peer: a fabric node ({@link #destNode}), or an IPv4 address
 * ({@link #destIp}: the GID ::ffff:a.b.c.d of RoCEv2) reached through the node's IP layer. There is one
 * port (1) and one partition key (index 0, the default P_Key 0xFFFF).
 */
public final class QpAttr {
    public QpState qpState = QpState.RESET;
    public QpState curQpState = QpState.RESET;
    /** Path MTU in bytes: 256, 512, 1024, 2048 or 4096 (IBA 9.1: the IB MTUs). */
    public int pathMtu = 4096;
    public int qkey;
    public int rqPsn;
    public int sqPsn;
    public int destQpNum;
    public int qpAccessFlags;
    public int pkeyIndex;
    public int portNum = 1;
    /** The peer's fabric address: the address vector's destination. */
    public int destNode = -1;
    /** The peer's IPv4 address, for a RoCEv2 peer in place of {@link #destNode} (which stays -1); 0: none. */
    public int destIp;
    /**
     * The address vector's service level ({@code ibv_ah_attr.sl}, 0..15, IBA 7.6.5): it picks the ring of the peer this
     * QP's packets go to, higher levels served first (docs/link-layer.md, "Service levels"). Set with {@link QpAttrMask#AV}.
     */
    public int sl;
    /** Outstanding READ/atomic requests this QP may have at the responder (initiator depth). */
    public int maxRdAtomic = 1;
    /** READ/atomic requests this QP accepts outstanding as a responder (responder resources). */
    public int maxDestRdAtomic = 1;
    /** RNR NAK timer code this responder asks for (0..31, IBA 9.7.5.2.8 table 45: 12 is 0.64 ms, 0 is 655.36 ms). */
    public int minRnrTimer = 12;
    /** Local ACK timeout: 4.096 us * 2^timeout; 0 waits forever (IBA 9.7.6.1.3). */
    public int timeout = 14;
    public int retryCnt = 7;
    /** RNR retries; 7 means retry forever (IBA 9.7.5.2.8). */
    public int rnrRetry = 7;
    public boolean sqdAsyncNotify;

    public QpAttr qpState(QpState s) { this.qpState = s; return this; }
    public QpAttr pathMtu(int v) { this.pathMtu = v; return this; }
    public QpAttr qkey(int v) { this.qkey = v; return this; }
    public QpAttr rqPsn(int v) { this.rqPsn = v; return this; }
    public QpAttr sqPsn(int v) { this.sqPsn = v; return this; }
    public QpAttr destQpNum(int v) { this.destQpNum = v; return this; }
    public QpAttr qpAccessFlags(int v) { this.qpAccessFlags = v; return this; }
    public QpAttr pkeyIndex(int v) { this.pkeyIndex = v; return this; }
    public QpAttr portNum(int v) { this.portNum = v; return this; }
    public QpAttr destNode(int v) { this.destNode = v; return this; }
    public QpAttr destIp(int v) { this.destIp = v; return this; }
    public QpAttr sl(int v) { this.sl = v; return this; }
    public QpAttr maxRdAtomic(int v) { this.maxRdAtomic = v; return this; }
    public QpAttr maxDestRdAtomic(int v) { this.maxDestRdAtomic = v; return this; }
    public QpAttr minRnrTimer(int v) { this.minRnrTimer = v; return this; }
    public QpAttr timeout(int v) { this.timeout = v; return this; }
    public QpAttr retryCnt(int v) { this.retryCnt = v; return this; }
    public QpAttr rnrRetry(int v) { this.rnrRetry = v; return this; }
}
