package dev.nupa.tcp;

/** Why a connection ended other than by an orderly close; the message is what a user is told. */
public enum TcpError {
    REFUSED("connection refused (the peer answered the SYN with a reset: nothing listens on that port)"),
    RESET("connection reset by peer"),
    TIMED_OUT("connection timed out (no acknowledgment after the retransmissions allowed)"),
    USER_TIMEOUT("user timeout: data stayed unacknowledged longer than the user timeout"),
    KEEPALIVE("connection timed out (keep-alive probes unanswered)"),
    ABORTED("connection aborted by this end"),
    /** Never seen by a user: a half-open passive connection whose handshake a SYN cookie completed instead. */
    SUPERSEDED("handshake superseded: the peer completed it with the SYN cookie sent for an earlier copy of its SYN"),
    FIN_WAIT_2_TIMEOUT("connection reset by this end: it had closed, and the peer did not close its side within the"
            + " FIN-WAIT-2 timeout");

    private final String message;

    TcpError(String message) {
        this.message = message;
    }

    public String message() {
        return message;
    }
}
