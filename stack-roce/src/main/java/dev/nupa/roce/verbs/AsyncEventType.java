package dev.nupa.roce.verbs;

/**
 * The kinds of asynchronous event ({@code enum ibv_event_type}, IBV_EVENT_*) the stack raises, with libibverbs' values.
 * The QP errors are IBA 11.6.3.1's affiliated asynchronous errors, the others its affiliated (11.6.3.3) and unaffiliated
 * events; see ibv_get_async_event(3).
 */
public enum AsyncEventType {
    /** IBV_EVENT_CQ_ERR: a completion did not fit the queue (overrun, IBA 11.4.2.1). Names the CQ. */
    CQ_ERR(0),
    /** IBV_EVENT_QP_FATAL: the QP went to ERR for an error no completion of its own explains to its peer. Names the QP. */
    QP_FATAL(1),
    /** IBV_EVENT_QP_REQ_ERR: the responder found an invalid request (IBA 11.6.3.1) and NAKed it. Names the QP. */
    QP_REQ_ERR(2),
    /** IBV_EVENT_QP_ACCESS_ERR: the responder found an access violation (rkey, bounds, rights) and NAKed it. Names the QP. */
    QP_ACCESS_ERR(3),
    /** IBV_EVENT_PORT_ACTIVE: the port became ACTIVE. Names the port. */
    PORT_ACTIVE(9),
    /** IBV_EVENT_PORT_ERR: the port left ACTIVE (the node left the fabric). Names the port. */
    PORT_ERR(10),
    /** IBV_EVENT_SRQ_LIMIT_REACHED: fewer receives than the armed limit are left in the SRQ. Names the SRQ. */
    SRQ_LIMIT_REACHED(15),
    /** IBV_EVENT_QP_LAST_WQE_REACHED: a QP of an SRQ entered ERR and takes no more receives from it (IBA 11.6.3.3). */
    QP_LAST_WQE_REACHED(16);

    /** libibverbs' value of the constant. */
    public final int value;

    AsyncEventType(int value) {
        this.value = value;
    }
}
