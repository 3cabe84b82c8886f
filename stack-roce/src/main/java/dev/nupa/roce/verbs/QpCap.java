package dev.nupa.roce.verbs;

/**
 * A queue pair's capacities, as libibverbs' {@code struct ibv_qp_cap}: work requests each queue holds, scatter/gather
 * entries per request, and bytes a send may carry inline. Checked by the context when it creates the QP.
 */
public record QpCap(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
}
