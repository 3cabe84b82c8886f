package dev.nupa.roce.verbs;

/** Queue pair states (IBA 10.3.1), in the order of libibverbs' {@code enum ibv_qp_state}. */
public enum QpState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERR
}
