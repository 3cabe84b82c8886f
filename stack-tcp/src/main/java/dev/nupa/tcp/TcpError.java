package dev.nupa.tcp;

/** Why a connection ended other than by an orderly close; the message is what a user is told. */
public enum TcpError {
    REFUSED("connection refused (the peer answered the SYN with a reset: nothing listens on that port)"),
    RESET("connection reset by peer"),
    /** No route to the network, or an ICMP net unreachable while opening (ENETUNREACH). */
    NETWORK_UNREACHABLE("Network is unreachable"),
    /** The host's fabric node is not up, or an ICMP host unreachable while opening (EHOSTUNREACH). */
    HOST_UNREACHABLE("No route to host"),
    /** An ICMP protocol unreachable while opening: the host does not speak TCP (ENOPROTOOPT). */
    PROTOCOL_UNREACHABLE("Protocol not available"),
    TIMED_OUT("connection timed out (no acknowledgment after the retransmissions allowed)"),
    USER_TIMEOUT("user timeout: data stayed unacknowledged longer than the user timeout"),
    KEEPALIVE("connection timed out (keep-alive probes unanswered)"),
    ABORTED("connection aborted by this end"),
    /** Closed by its application with received data unread: reset (Linux's TCPAbortOnClose). */
    CLOSED_WITH_UNREAD_DATA("connection reset by this end: it was closed with received data unread"),
    /** Data came after its application had closed: reset (RFC 1122 4.2.2.13; Linux's TCPAbortOnData). */
    DATA_AFTER_CLOSE("connection reset by this end: data arrived after it was closed"),
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

    /**
     * The error an ICMP destination unreachable of {@code code} means to a connection still opening, or null for a
     * soft error that does not end it; as Linux's icmp_err_convert table (port unreachable: refused, RFC 1122
     * 4.2.3.9; fragmentation needed and the TOS codes 11, 12 are not fatal).
     */
    public static TcpError forUnreachable(int code) {
        return switch (code) {
            case 0, 6, 9 -> NETWORK_UNREACHABLE; // net, net unknown, net administratively prohibited
            // host, unknown, isolated, prohibited, precedence; source route failed (5) too, which Linux reports as
            // EOPNOTSUPP: a fabric has no source routes to fail
            case 1, 5, 7, 8, 10, 13, 14, 15 -> HOST_UNREACHABLE;
            case 2 -> PROTOCOL_UNREACHABLE;
            case 3 -> REFUSED;
            default -> null;
        };
    }
}
