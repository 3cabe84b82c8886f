package dev.nupa.tcp;

/**
 * A connection's glue to its {@link TcpLayer}: forwards the connection's events to its application's handler
 * and keeps the layer's tables, timers, listener backlogs, TIME-WAIT count and pool right as the connection
 * lives and ends. Reused with its connection; on the layer's loop only.
 */
final class ConnectionHooks implements TcpConnection.Events {
    private final TcpLayer layer;
    TcpLayer.Listener listener;
    TcpConnection.Events user;
    boolean counted;
    /** Whether an application has the connection (from connect, or once a listener accepted it). */
    boolean claimed;
    /** Whether it counts among the connections waiting in TIME-WAIT. */
    boolean waiting;

    ConnectionHooks(TcpLayer layer) {
        this.layer = layer;
    }

    void begin(TcpLayer.Listener listener, TcpConnection.Events user) {
        this.listener = listener;
        this.user = user;
        this.counted = false;
        this.claimed = listener == null;
        this.waiting = false;
    }

    @Override
    public boolean onTimeWait(TcpConnection c) {
        if (layer.timeWaiting + layer.timeWaitRecords.size() >= layer.timeWaitLimit) {
            layer.count(TcpCounter.TIME_WAIT_OVERFLOWS);
            return false;
        }
        layer.timeWaiting++;
        waiting = true;
        return true;
    }

    @Override
    public void onRttSample(TcpConnection c, long ns) {
        TcpObserver o = layer.observer;
        if (o != null) {
            o.rttSample(c, ns);
        }
    }

    @Override
    public void onEstablished(TcpConnection c) {
        TcpObserver o = layer.observer;
        if (o != null) {
            o.established(c, listener == null, c.openedAt, layer.clock());
        }
        if (listener != null && !counted) {
            counted = true;
            claimed = true;
            listener.halfOpen--;
            layer.count(TcpCounter.CONNECTIONS_ACCEPTED);
            listener.acceptor.onAccept(c);
        }
        if (user != null) {
            user.onEstablished(c);
        }
    }

    @Override
    public void onReadable(TcpConnection c) {
        if (user != null) {
            user.onReadable(c);
        }
    }

    @Override
    public void onWritable(TcpConnection c) {
        if (user != null) {
            user.onWritable(c);
        }
    }

    @Override
    public void onPeerClosed(TcpConnection c) {
        if (user != null) {
            user.onPeerClosed(c);
        }
    }

    @Override
    public void onBufferShortage(TcpConnection c) {
        layer.count(TcpCounter.BUFFER_SHORTAGES);
    }

    @Override
    public void onDeadlineMoved(TcpConnection c, long deadline) {
        layer.timers.schedule(c, deadline);
        layer.deadlineMoved(deadline); // its timers are polled in time, whoever called into it
    }

    @Override
    public void onClosed(TcpConnection c, TcpError error) {
        TcpObserver o = layer.observer;
        if (o != null) {
            long now = layer.clock();
            o.closed(c, error, c.closingAt == TcpControlBlock.NEVER ? now : c.closingAt, now);
        }
        if (waiting) {
            waiting = false;
            layer.timeWaiting--;
        }
        long key = ConnectionTable.key(c.remoteIp(), c.remotePort(), c.localPort());
        layer.table.remove(key, c);
        layer.timers.remove(c);
        layer.loopHandOff.forget(key); // a connection that moved here: the primary no longer hands its segments on
        if (listener != null && !counted) {
            counted = true;
            listener.halfOpen--;
        }
        layer.count(error == TcpError.SUPERSEDED ? TcpCounter.HANDSHAKES_SUPERSEDED
                : error == null ? TcpCounter.CONNECTIONS_CLOSED : TcpCounter.CONNECTIONS_FAILED);
        if (error == TcpError.FIN_WAIT_2_TIMEOUT) {
            layer.count(TcpCounter.FIN_WAIT_2_TIMEOUTS);
        } else if (error == TcpError.CLOSED_WITH_UNREAD_DATA) {
            layer.count(TcpCounter.ABORTS_ON_CLOSE);
        } else if (error == TcpError.DATA_AFTER_CLOSE) {
            layer.count(TcpCounter.ABORTS_ON_DATA);
        }
        if (!claimed) {
            c.releaseUnclaimed(); // no application ever had it: the layer lets go for it
        }
        if (user != null) {
            user.onClosed(c, error);
        }
    }

    @Override
    public void onReleased(TcpConnection c) {
        layer.pool.release(c); // reusable from the layer's next entry (ConnectionPool.recycleReleased)
        if (user != null) {
            user.onReleased(c);
        }
    }
}
