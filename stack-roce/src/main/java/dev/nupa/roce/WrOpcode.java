package dev.nupa.roce;

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

    static boolean valid(int opcode) {
        return opcode >= RDMA_WRITE && opcode <= ATOMIC_FETCH_AND_ADD;
    }

    static boolean isAtomic(int opcode) {
        return opcode == ATOMIC_CMP_AND_SWP || opcode == ATOMIC_FETCH_AND_ADD;
    }

    /** Operations whose response carries data back (they use the responder's read/atomic resources). */
    static boolean isReadOrAtomic(int opcode) {
        return opcode == RDMA_READ || isAtomic(opcode);
    }

    /** The operations a DIRECT QP places itself; SENDs and WRITE_WITH_IMM consume a receive, so they travel as packets. */
    static boolean placesDirectly(int opcode) {
        return opcode == RDMA_WRITE || opcode == RDMA_READ || isAtomic(opcode) || isSend(opcode);
    }

    static boolean isSend(int opcode) {
        return opcode == SEND || opcode == SEND_WITH_IMM;
    }


    static boolean isWrite(int opcode) {
        return opcode == RDMA_WRITE || opcode == RDMA_WRITE_WITH_IMM;
    }

    static boolean hasImm(int opcode) {
        return opcode == RDMA_WRITE_WITH_IMM || opcode == SEND_WITH_IMM;
    }

    static int completionOpcode(int opcode) {
        return switch (opcode) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WcOpcode.RDMA_WRITE;
            case SEND, SEND_WITH_IMM -> WcOpcode.SEND;
            case RDMA_READ -> WcOpcode.RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> WcOpcode.COMP_SWAP;
            default -> WcOpcode.FETCH_ADD;
        };
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
