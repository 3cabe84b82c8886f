package dev.nupa.roce.verbs;

/**
 * One work completion, in the manner of libibverbs' {@code struct ibv_wc}: a caller-owned holder that
 * {@code CompletionQueue.poll} fills, so polling allocates nothing.
 */
public final class WorkCompletion {
    /** {@code wc_flags}: the completion carries immediate data. */
    public static final int WITH_IMM = 2;
    /** {@code wc_flags}: the first 40 bytes of a UD receive buffer hold a GRH (here zeroed; the fabric has none). */
    public static final int GRH = 1;
    /** {@code wc_flags}: a SEND_WITH_INV invalidated the rkey {@link #invalidatedRkey} (IBV_WC_WITH_INV). */
    public static final int WITH_INV = 8;

    public long wrId;
    /** One of {@link WcStatus}. */
    public int status;
    /** One of {@link WcOpcode}; valid for successful completions. */
    public int opcode;
    public int byteLen;
    /** Immediate data, host order, when {@link #wcFlags} has {@link #WITH_IMM}. */
    public int immData;
    public int qpNum;
    /** UD receives: the sender's QP number. */
    public int srcQp;
    /** UD receives: the sender's fabric address (what {@code slid} identifies on InfiniBand). */
    public int srcNode;
    public int wcFlags;

    /**
     * The rkey a SEND_WITH_INV invalidated when {@link #wcFlags} has {@link #WITH_INV}: libibverbs' {@code
     * wc.invalidated_rkey}, which shares its union with {@code imm_data}, as here.
     */
    public int invalidatedRkey() {
        return immData;
    }

    public boolean ok() {
        return status == WcStatus.SUCCESS;
    }

    public WorkCompletion copy() {
        WorkCompletion c = new WorkCompletion();
        c.wrId = wrId;
        c.status = status;
        c.opcode = opcode;
        c.byteLen = byteLen;
        c.immData = immData;
        c.qpNum = qpNum;
        c.srcQp = srcQp;
        c.srcNode = srcNode;
        c.wcFlags = wcFlags;
        return c;
    }

    @Override
    public String toString() {
        return "wc{wr_id=" + wrId + ", status=" + WcStatus.name(status) + ", opcode=" + WcOpcode.name(opcode) + ", byte_len="
                + byteLen + ", qp_num=" + qpNum + ((wcFlags & WITH_IMM) != 0 ? ", imm=0x" + Integer.toHexString(immData) : "")
                + ((wcFlags & WITH_INV) != 0 ? ", invalidated_rkey=0x" + Integer.toHexString(immData) : "")
                + (srcQp != 0 ? ", src_qp=" + srcQp + ", src_node=" + srcNode : "") + "}";
    }
}
