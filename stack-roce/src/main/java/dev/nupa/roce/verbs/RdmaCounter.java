package dev.nupa.roce.verbs;

/** What an {@code RdmaContext} counts; read with {@code RdmaContext.counter}. */
public enum RdmaCounter {
    PACKETS_SENT,
    PACKETS_RECEIVED,
    /** Packets that failed {@code RocePacket.wrap} (truncated, unknown opcode, bad pad...). */
    MALFORMED,
    /** Packets for a QP number that does not exist here, or from a node that is not the QP's peer. */
    UNKNOWN_QP,
    /** Packets for a QP whose state does not take them (e.g. RESET, INIT, ERR). */
    WRONG_STATE,
    /** Requests ahead of the expected PSN: answered with a sequence-error NAK. */
    SEQUENCE_ERRORS,
    /** Requests behind the expected PSN: re-acknowledged or answered from saved state. */
    DUPLICATES,
    RNR_NAKS_SENT,
    NAKS_SENT,
    ACKS_SENT,
    RETRANSMITS,
    TIMEOUTS,
    RNR_NAKS_RECEIVED,
    NAKS_RECEIVED,
    /** Responses that match no outstanding request (late duplicates). */
    STRAY_RESPONSES,
    /** UD datagrams dropped: wrong Q_Key or no receive posted. */
    UD_DROPS,
    /** Sends refused by a full ring and retried later. */
    BACK_PRESSURED,
    /** RDMA WRITE, READ and atomic operations placed directly in a peer's window. */
    DIRECT_OPS,
    /** Direct operations whose checks failed and that went as packets instead. */
    DIRECT_FALLBACKS,
    /**
     * Direct operations that found their target region withdrawn as they began (its guard's stamp changed after
     * they checked it): sent as packets, which the responder refuses with REM_ACCESS_ERR.
     */
    DIRECT_REVOKED,
    /**
     * Deregistrations that found a peer's direct copy still in the region's window after the drain time (a requester
     * stalled or killed mid-copy): the window is held back, its memory not reused, until the copy ends.
     */
    DEREG_DRAIN_TIMEOUTS,
    /** SENDs placed directly in the receive the peer posted next. */
    DIRECT_SENDS,
    /** SENDs of DIRECT QPs that went as packets: no receive posted, a list of buffers, too long, no mirror. */
    DIRECT_SEND_FALLBACKS,
    CQ_OVERRUNS,
    /** RoCEv2 datagrams sent to IP peers (UDP 4791, ICRC computed). */
    ROCEV2_SENT,
    /** RoCEv2 datagrams received from IP peers whose ICRC held. */
    ROCEV2_RECEIVED,
    /** RoCEv2 datagrams dropped because their ICRC did not match (IBA annex A17.4.3, 7.8.1). */
    BAD_ICRC,
    /**
     * RC QPs put in ERR because the fabric's liveness declared their peer's node dead or restarted: the oldest request
     * in flight completes with IBV_WC_RETRY_EXC_ERR, the rest flushed (what rxe reports once its retries run out).
     */
    PEER_DOWN_QP_ERRORS,
    /** RoCEv2 datagrams the IP layer could not send (no route, full ring, too big for the way); the retry timer resends. */
    ROCEV2_SEND_FAILED,
    /** Asynchronous events dropped because the context's queue of them was full (nobody took them). */
    ASYNC_EVENTS_DROPPED,
    /** Memory window binds that failed their checks (IBV_WC_MW_BIND_ERR) and LOCAL_INVs that did (IBV_WC_LOC_QP_OP_ERR). */
    MW_BIND_ERRORS,
    /** SEND_WITH_INVs whose rkey this responder could not invalidate: NAKed as invalid requests (IBV_WC_REM_INV_REQ_ERR). */
    INVALIDATE_ERRORS,
    /** DCQCN (docs/rdma.md): CNPs sent for RoCEv2 datagrams that arrived with ECN CE (IBA annex A17.9). */
    CNPS_SENT,
    /** CNPs received from IP peers. */
    CNPS_RECEIVED,
    /** CNPs for a QP that does not exist or is not an RC QP connected to the CNP's sender: counted and dropped. */
    CNPS_UNKNOWN_QP,
    /** Rate decreases of QPs, one per CNP taken (DCQCN's reaction point). */
    RATE_DECREASES
}
