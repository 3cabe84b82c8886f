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
            default -> "opcode " + opcode;
        };
    }
}
