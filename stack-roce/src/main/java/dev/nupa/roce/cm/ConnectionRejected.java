package dev.nupa.roce.cm;

import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.wire.CmMad;

/** A connect or accept the peer answered with a REJ (IBA 12.6.7), with the peer's reason (IBA table 112). */
public final class ConnectionRejected extends RdmaException {
    private final int reason;

    ConnectionRejected(String message, int reason) {
        super(message);
        this.reason = reason;
    }

    /** The REJ's reason code: 8 (invalid service ID) is rdma_cm's "no listener on that port". */
    public int reason() {
        return reason;
    }

    /** Whether nothing listens on the port (yet): the one rejection worth trying again. */
    public boolean refused() {
        return reason == CmMad.REJECT_INVALID_SERVICE_ID;
    }
}
