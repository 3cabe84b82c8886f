package dev.nupa.roce.verbs;

/**
 * A send work request, in the manner of libibverbs' {@code struct ibv_send_wr}, built once and
 * posted as often as needed: {@code QueuePair.postSend} copies it into the send queue, so a reused
 * request allocates nothing. Setters return {@code this}.
 */
public final class SendWorkRequest {
    public long wrId;
    /** One of {@link WrOpcode}. */
    public int opcode = WrOpcode.SEND;
    /** {@link SendFlags} bits. */
    public int sendFlags;
    public final ScatterGather sg;
    /** Immediate data (host order) for the *_WITH_IMM opcodes. */
    public int immData;
    /** RDMA and atomic: the remote address and key. */
    public long remoteAddr;
    public int rkey;
    /** Atomics: the value compared (CMP_AND_SWP) or added (FETCH_AND_ADD). */
    public long compareAdd;
    /** CMP_AND_SWP: the value swapped in. */
    public long swap;
    /** LOCAL_INV and SEND_WITH_INV: the rkey to invalidate (libibverbs' {@code invalidate_rkey}). */
    public int invalidateRkey;
    /**
     * BIND_MW ({@code wr.bind_mw}): the window's new rkey (its index with the key byte the consumer chose, {@code
     * MemoryWindow.incRkey}), the region, the range and the window's access.
     */
    public int bindRkey;
    public LocalRegion bindMr;
    public long bindAddr;
    public long bindLength;
    public int bindAccess;
    /** UD: the destination's fabric address, QP number and Q_Key (a Q_Key with its top bit set means "use the QP's own"). */
    public int udDestNode = -1;
    /** UD to an IP peer (RoCEv2): its IPv4 address, in place of {@link #udDestNode}; 0 when the peer is a fabric node. */
    public int udDestIp;
    public int udRemoteQpn;
    public int udRemoteQkey;

    public SendWorkRequest() {
        this(4);
    }

    public SendWorkRequest(int maxSge) {
        this.sg = new ScatterGather(maxSge);
    }

    public SendWorkRequest wrId(long v) { this.wrId = v; return this; }
    public SendWorkRequest opcode(int v) { this.opcode = v; return this; }
    public SendWorkRequest sendFlags(int v) { this.sendFlags = v; return this; }
    public SendWorkRequest immData(int v) { this.immData = v; return this; }
    public SendWorkRequest remote(long addr, int rkey) { this.remoteAddr = addr; this.rkey = rkey; return this; }
    public SendWorkRequest invalidate(int rkey) { this.invalidateRkey = rkey; return this; }
    /** BIND_MW: binds the window whose index {@code rkey} holds to {@code [addr, addr + length)} of {@code mr}. */
    public SendWorkRequest bindMw(int rkey, LocalRegion mr, long addr, long length, int access) {
        this.bindRkey = rkey;
        this.bindMr = mr;
        this.bindAddr = addr;
        this.bindLength = length;
        this.bindAccess = access;
        return this;
    }
    public SendWorkRequest compareAdd(long v) { this.compareAdd = v; return this; }
    public SendWorkRequest swap(long v) { this.swap = v; return this; }
    public SendWorkRequest ud(int destNode, int remoteQpn, int remoteQkey) {
        this.udDestNode = destNode;
        this.udDestIp = 0;
        this.udRemoteQpn = remoteQpn;
        this.udRemoteQkey = remoteQkey;
        return this;
    }
    /** UD to the IP peer {@code destIp} (an IPv4 address as an int), as RoCEv2; the context needs its IP layer attached. */
    public SendWorkRequest udIp(int destIp, int remoteQpn, int remoteQkey) {
        this.udDestNode = -1;
        this.udDestIp = destIp;
        this.udRemoteQpn = remoteQpn;
        this.udRemoteQkey = remoteQkey;
        return this;
    }
    /** Replaces the gather list with one entry. */
    public SendWorkRequest local(LocalRegion mr, long offset, int length) {
        sg.clear().add(mr, offset, length);
        return this;
    }
}
