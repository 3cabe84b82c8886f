package dev.nupa.roce.verbs;

/** Work completion opcodes, numbered like libibverbs' {@code enum ibv_wc_opcode}. */
public final class WcOpcode {
    public static final int SEND = 0;
    public static final int RDMA_WRITE = 1;
    public static final int RDMA_READ = 2;
    public static final int COMP_SWAP = 3;
    public static final int FETCH_ADD = 4;
    public static final int BIND_MW = 5;
    public static final int LOCAL_INV = 6;
    public static final int RECV = 128;
    public static final int RECV_RDMA_WITH_IMM = 129;

    private WcOpcode() {
    }

    public static String name(int opcode) {
        return switch (opcode) {
            case SEND -> "IBV_WC_SEND";
            case RDMA_WRITE -> "IBV_WC_RDMA_WRITE";
            case RDMA_READ -> "IBV_WC_RDMA_READ";
            case COMP_SWAP -> "IBV_WC_COMP_SWAP";
            case FETCH_ADD -> "IBV_WC_FETCH_ADD";
            case BIND_MW -> "IBV_WC_BIND_MW";
            case LOCAL_INV -> "IBV_WC_LOCAL_INV";
            case RECV -> "IBV_WC_RECV";
            case RECV_RDMA_WITH_IMM -> "IBV_WC_RECV_RDMA_WITH_IMM";
            default -> "IBV_WC_OPCODE_" + opcode;
        };
    }
}
