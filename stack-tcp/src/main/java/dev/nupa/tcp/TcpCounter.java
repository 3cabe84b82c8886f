package dev.nupa.tcp;

/** What a {@link TcpLayer} counts ({@link TcpLayer#counter}, {@link TcpLayer#counters}). */
public enum TcpCounter {
    SEGMENTS_IN, SEGMENTS_OUT, SEND_DEFERRED, SEND_FAILURES, BAD_SEGMENTS, BAD_CHECKSUMS, NO_CONNECTION, RESETS_SENT, SYNS_RECEIVED,
    SYN_BACKLOG_FULL, SYN_COOKIES_SENT, SYN_COOKIES_ACCEPTED, SYN_COOKIES_REJECTED,
    /** Half-open connections dropped because the peer completed the handshake with a cookie instead. */
    HANDSHAKES_SUPERSEDED,
    CONNECTIONS_OPENED, CONNECTIONS_ACCEPTED, CONNECTIONS_CLOSED, CONNECTIONS_FAILED,
    /** Connections closed fully by their application and reset after waiting too long in FIN-WAIT-2. */
    FIN_WAIT_2_TIMEOUTS,
    /** Connections reset because their application closed them with received data unread (Linux's TCPAbortOnClose). */
    ABORTS_ON_CLOSE,
    /** Connections reset because data arrived after their application closed them (Linux's TCPAbortOnData). */
    ABORTS_ON_DATA,
    /** Connects refused at once: no route, or the next hop's fabric node is not up (ENETUNREACH, EHOSTUNREACH). */
    CONNECTS_UNREACHABLE,
    /** Connections still opening that an ICMP destination unreachable ended (RFC 1122 4.2.3.9). */
    ICMP_ABORTS,
    /**
     * Connections ended because the fabric's liveness declared their peer's node dead or restarted
     * ({@link TcpLayer#endConnectionsTo}): reset, or "No route to host" while opening.
     */
    PEER_DOWN_RESETS,
    /** Resets kept to send again because the next hop's ring was full ({@code PendingResets}). */
    RESETS_QUEUED,
    /** Resets dropped because the queue of those waiting for ring room was full. */
    RESETS_DROPPED,
    /** ICMP errors about no connection of this layer, or soft errors (RFC 1122 4.2.3.9): counted, nothing else. */
    ICMP_ERRORS_IGNORED,
    /** ICMP errors quoting a sequence number outside [SND.UNA, SND.NXT] (RFC 5927 4.1; Linux's OutOfWindowIcmps). */
    ICMP_OUT_OF_WINDOW,
    /** Data segments dropped unacknowledged for want of receive-buffer memory ({@link TcpLayer#bufferMemoryLimit}). */
    BUFFER_SHORTAGES,
    /** Connections opened on the object of one closed earlier, with nothing allocated ({@link TcpLayer#setConnectionPoolLimit}). */
    CONNECTIONS_REUSED,
    /** Connections closed without waiting in TIME-WAIT, since {@link TcpLayer#setTimeWaitLimit} were waiting (Linux's TCPTimeWaitOverflow). */
    TIME_WAIT_OVERFLOWS,
    /** Ephemeral ports taken over from a connection in TIME-WAIT toward the same peer and port (RFC 6191). */
    TIME_WAIT_REUSED,
    /** SYNs that reopened a four-tuple waiting in TIME-WAIT (RFC 6191, RFC 1122 4.2.2.13). */
    TIME_WAIT_REOPENED,
    /** Connections that went on waiting in TIME-WAIT as a compact record ({@link TimeWaitTable}). */
    TIME_WAIT_RECORDS,
    /** Connections this layer handed to another event loop of the node ({@link TcpLayer#handOff}). */
    CONNECTIONS_MOVED_OUT,
    /** Connections this layer took over from another event loop of the node. */
    CONNECTIONS_MOVED_IN,
    /** Segments for a connection on another event loop of the node, handed on to it. */
    SEGMENTS_HANDED_ON
}
