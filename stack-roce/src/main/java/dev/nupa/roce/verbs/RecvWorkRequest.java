package dev.nupa.roce.verbs;

/** A receive work request, in the manner of libibverbs' {@code struct ibv_recv_wr}; reusable like {@link SendWorkRequest}. */
public final class RecvWorkRequest {
    public long wrId;
    public final ScatterGather sg;

    public RecvWorkRequest() {
        this(4);
    }

    public RecvWorkRequest(int maxSge) {
        this.sg = new ScatterGather(maxSge);
    }

    public RecvWorkRequest wrId(long v) { this.wrId = v; return this; }

    /** Replaces the scatter list with one entry. */
    public RecvWorkRequest local(LocalRegion mr, long offset, int length) {
        sg.clear().add(mr, offset, length);
        return this;
    }
}
