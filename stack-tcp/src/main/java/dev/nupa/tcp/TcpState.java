package dev.nupa.tcp;

/** The connection states of RFC 9293 section 3.3.2. */
public enum TcpState {
    CLOSED, LISTEN, SYN_SENT, SYN_RECEIVED, ESTABLISHED, FIN_WAIT_1, FIN_WAIT_2, CLOSE_WAIT, CLOSING, LAST_ACK, TIME_WAIT;

    /** ESTABLISHED and later: a three-way handshake completed (RFC 9293 3.3.2 "synchronized"). */
    public boolean synchronizedState() {
        return ordinal() >= ESTABLISHED.ordinal();
    }
}
