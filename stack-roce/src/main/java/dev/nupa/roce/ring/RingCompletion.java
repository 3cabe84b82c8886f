package dev.nupa.roce.ring;

import dev.nupa.roce.verbs.WcStatus;

/** A completion taken from a work ring; reused from poll to poll, so polling allocates nothing. */
public final class RingCompletion {
    public long wrId;
    /** libibverbs' {@code enum ibv_wc_status} ({@link WcStatus}). */
    public int status;
    /** The WQE's opcode ({@link WorkRingLayout#OP_WRITE} ...). */
    public int opcode;
    public int byteLen;
    /** The low 32 bits of the WQE's position in the submission ring. */
    public int sqPosition;

    public boolean ok() {
        return status == WcStatus.SUCCESS;
    }

    @Override
    public String toString() {
        return "completion{wrId=" + wrId + ", " + WcStatus.name(status) + ", opcode=" + opcode + ", byteLen=" + byteLen + "}";
    }
}
