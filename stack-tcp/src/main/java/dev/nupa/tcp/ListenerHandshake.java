package dev.nupa.tcp;

/**
 * The handshakes of a layer's listeners (RFC 9293 3.10.7.2): a SYN opens a connection in SYN-RECEIVED, or, once
 * the listener's backlog of half-open connections is full, is answered with a SYN cookie and nothing kept
 * (RFC 4987 3.6); the ACK that returns a valid cookie opens the connection then. As Linux's tcp_conn_request
 * and cookie_v4_check. Owner thread.
 */
final class ListenerHandshake {
    private final TcpLayer layer;
    private final SynCookies cookies = new SynCookies();
    private final Segment synAck = new Segment();

    ListenerHandshake(TcpLayer layer) {
        this.layer = layer;
    }

    /**
     * A SYN for listener {@code l} at {@code localIp}: a connection in SYN-RECEIVED answers it, or, past the
     * listener's backlog, a SYN-ACK whose ISN is a cookie and nothing is kept.
     */
    void syn(TcpLayer.Listener l, int localIp, int remoteIp, int remotePort, Segment syn, long now) {
        layer.count(TcpCounter.SYNS_RECEIVED);
        if (l.halfOpen >= l.backlog) {
            // RFC 4987 3.6: no state; the ISN carries what the ACK must prove.
            layer.count(TcpCounter.SYN_BACKLOG_FULL);
            int ownMss = layer.mssTo(l.config, remoteIp);
            int mss = Math.min(ownMss, syn.mss > 0 ? syn.mss : 536);
            // Linux's cookie_init_timestamp: window scale and SACK-permitted ride in the TSval's low
            // bits; without a timestamp in the SYN the connection goes without them (tcp_conn_request).
            boolean timestamps = l.config.timestamps() && syn.timestamps;
            int options = timestamps
                    ? SynCookies.options(l.config.windowScaling() ? syn.windowScale : -1, l.config.sack() && syn.sackPermitted)
                    : SynCookies.NO_TIMESTAMPS;
            int cookie = cookies.encode(now, localIp, l.port, remoteIp, remotePort, syn.seq, mss, options);
            Segment out = synAck.clear();
            out.flags = Segment.SYN | Segment.ACK;
            out.seq = cookie;
            out.ack = syn.seq + 1;
            out.window = Math.min(l.config.receiveBuffer(), 65_535); // RFC 7323 2.2: never scaled in a SYN
            out.mss = ownMss;
            if (timestamps) {
                long base = cookies.timestampBase(localIp, l.port, remoteIp, remotePort);
                out.timestamps = true;
                out.tsVal = SynCookies.timestampValue(TcpConnection.timestampClock(now, base), options);
                out.tsEcr = syn.tsVal;
                if (SynCookies.windowShift(options) >= 0) {
                    out.windowScale = l.config.receiveWindowShift(); // RFC 7323 2.2: only if the SYN offered one
                }
                out.sackPermitted = SynCookies.sackPermitted(options);
            }
            layer.sender.send(-1, localIp, remoteIp, remotePort, l.port, out);
            layer.count(TcpCounter.SYN_COOKIES_SENT);
            return;
        }
        TcpConnection c = layer.pool.open(localIp, l.port, remoteIp, remotePort, l.config, l, null);
        l.halfOpen++;
        layer.table.put(ConnectionTable.key(remoteIp, remotePort, l.port), c);
        c.accept(syn, layer.isn.isn(now, localIp, l.port, remoteIp, remotePort), now);
    }

    /**
     * The ACK completing a handshake answered with a SYN cookie: a valid cookie opens the connection,
     * with the options its TSecr echoes (Linux's cookie_timestamp_decode; the MAC covers them). A valid
     * cookie supersedes {@code halfOpen}, the same peer's SYN-RECEIVED connection, if there is one.
     */
    boolean acceptCookie(TcpLayer.Listener l, int localIp, int remoteIp, int remotePort, Segment ack, long now,
            TcpConnection halfOpen) {
        int options = SynCookies.optionsFromEcho(ack.timestamps, ack.tsEcr);
        int mss = cookies.decode(now, localIp, l.port, remoteIp, remotePort, ack.seq, ack.ack - 1, options);
        if (mss <= 0) {
            layer.count(TcpCounter.SYN_COOKIES_REJECTED);
            return false;
        }
        layer.count(TcpCounter.SYN_COOKIES_ACCEPTED);
        if (halfOpen != null) {
            halfOpen.supersede(); // leaves the table and the backlog (ConnectionHooks.onClosed)
        }
        l.halfOpen++; // balanced by onEstablished
        TcpConnection c = layer.pool.open(localIp, l.port, remoteIp, remotePort, l.config, l, null);
        layer.table.put(ConnectionTable.key(remoteIp, remotePort, l.port), c);
        ack.mss = mss; // the SYN's options as the cookie restored them (TcpConnection.acceptCookie)
        ack.windowScale = SynCookies.windowShift(options);
        ack.sackPermitted = SynCookies.sackPermitted(options);
        c.acceptCookie(ack, ack.ack - 1, ack.seq - 1, cookies.timestampBase(localIp, l.port, remoteIp, remotePort),
                now);
        return true;
    }
}
