package dev.nupa.roce.verbs;

/** Send work request opcodes, numbered like libibverbs' {@code enum ibv_wr_opcode}. */
public final class WrOpcode {
    public static final int RDMA_WRITE = 0;
    public static final int RDMA_WRITE_WITH_IMM = 1;
    public static final int SEND = 2;
    public static final int SEND_WITH_IMM = 3;
    public static final int RDMA_READ = 4;
    public static final int ATOMIC_CMP_AND_SWP = 5;
    public static final int ATOMIC_FETCH_AND_ADD = 6;
    /** Invalidates the memory window {@code invalidateRkey} names, locally, in order on the send queue. */
    public static final int LOCAL_INV = 7;
    /** Binds a type 2 memory window (the {@code bind*} fields), in order on the send queue (IBA 10.6.7.2.2). */
    public static final int BIND_MW = 8;
    /** A SEND that invalidates {@code invalidateRkey} at the responder (IBA 9.4.1.1, an IETH). */
    public static final int SEND_WITH_INV = 9;

    private WrOpcode() {
    }

    public static String name(int opcode) {
        return switch (opcode) {
            case RDMA_WRITE -> "IBV_WR_RDMA_WRITE";
            case RDMA_WRITE_WITH_IMM -> "IBV_WR_RDMA_WRITE_WITH_IMM";
            case SEND -> "IBV_WR_SEND";
            case SEND_WITH_IMM -> "IBV_WR_SEND_WITH_IMM";
            case RDMA_READ -> "IBV_WR_RDMA_READ";
            case ATOMIC_CMP_AND_SWP -> "IBV_WR_ATOMIC_CMP_AND_SWP";
            case ATOMIC_FETCH_AND_ADD -> "IBV_WR_ATOMIC_FETCH_AND_ADD";
            case LOCAL_INV -> "IBV_WR_LOCAL_INV";
            case BIND_MW -> "IBV_WR_BIND_MW";
            case SEND_WITH_INV -> "IBV_WR_SEND_WITH_INV";
            default -> "opcode " + opcode;
        };
    }
}
