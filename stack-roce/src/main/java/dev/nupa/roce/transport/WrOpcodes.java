package dev.nupa.roce.transport;

import static dev.nupa.roce.verbs.WrOpcode.*;

import dev.nupa.roce.verbs.WcOpcode;

/** What the transport asks of a send work request's opcode ({@code dev.nupa.roce.verbs.WrOpcode}). */
public final class WrOpcodes {
    private WrOpcodes() {
    }

    public static boolean valid(int opcode) {
        return opcode >= RDMA_WRITE && opcode <= SEND_WITH_INV;
    }

    /** Work requests executed on this side alone (IBA 10.6.7.2.2, 10.6.7.2.4): nothing goes on the wire. */
    public static boolean isLocal(int opcode) {
        return opcode == BIND_MW || opcode == LOCAL_INV;
    }

    public static boolean isAtomic(int opcode) {
        return opcode == ATOMIC_CMP_AND_SWP || opcode == ATOMIC_FETCH_AND_ADD;
    }

    /** Operations whose response carries data back (they use the responder's read/atomic resources). */
    public static boolean isReadOrAtomic(int opcode) {
        return opcode == RDMA_READ || isAtomic(opcode);
    }

    /**
     * The operations a DIRECT QP places itself: WRITE, READ, atomics, SEND and SEND_WITH_IMM. WRITE_WITH_IMM and
     * SEND_WITH_INV travel as packets (the responder does the invalidation).
     */
    public static boolean placesDirectly(int opcode) {
        return opcode == RDMA_WRITE || opcode == RDMA_READ || isAtomic(opcode) || isSend(opcode);
    }

    public static boolean isSend(int opcode) {
        return opcode == SEND || opcode == SEND_WITH_IMM;
    }

    public static boolean isWrite(int opcode) {
        return opcode == RDMA_WRITE || opcode == RDMA_WRITE_WITH_IMM;
    }

    public static boolean hasImm(int opcode) {
        return opcode == RDMA_WRITE_WITH_IMM || opcode == SEND_WITH_IMM;
    }

    /** The work completion opcode ({@link WcOpcode}) of a send request's completion. */
    public static int completionOpcode(int opcode) {
        return switch (opcode) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WcOpcode.RDMA_WRITE;
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> WcOpcode.SEND;
            case BIND_MW -> WcOpcode.BIND_MW;
            case LOCAL_INV -> WcOpcode.LOCAL_INV;
            case RDMA_READ -> WcOpcode.RDMA_READ;
            case ATOMIC_CMP_AND_SWP -> WcOpcode.COMP_SWAP;
            default -> WcOpcode.FETCH_ADD;
        };
    }
}
