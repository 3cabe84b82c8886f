package dev.nupa.tcp;

import java.io.UncheckedIOException;
import java.net.NoRouteToHostException;
import java.util.EnumMap;
import java.util.Map;

import dev.nupa.ip.IpProtocolHandler;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.LoopGroup;
import dev.nupa.ip.LoopbackInterface;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.l2.Datapath;
import dev.nupa.l2.Link;

/**
 * TCP for one node: registered with the {@link Ipv4Stack} for protocol 6, it demultiplexes
 * segments to connections by (remote address, remote port, local port), answers SYNs for
 * listeners (with SYN cookies once a listener's SYN backlog is full, RFC 4987), resets segments for
 * which there is no connection (RFC 9293 3.10.7.1), builds and checksums outgoing segments, and
 * runs the connections' timers from the datapath loop. This class is the layer's face: its user calls,
 * tables and timers; the work is done by its parts, {@link SegmentDemux} (receiving), {@link ListenerHandshake},
 * {@link SegmentSender} (sending), {@link ConnectionPool}, {@link LocalPorts}, {@link LoopHandOff} and
 * {@link LostPeers}.
 *
 * <p><b>Threading.</b> The layer and its connections belong to the link's owner thread (see
 * {@link Link}'s threading), as IP does: segments, timers and user calls all run there, so nothing
 * is locked. A user call from another thread while the node's loop runs throws
 * IllegalStateException; sockets hand their calls over with {@link #execute}.
 *
 * <p><b>Several loops.</b> A node whose event loops share one address ({@link LoopGroup}) has a layer per
 * loop: the primary's ({@link #TcpLayer(Ipv4Stack, TcpConfig, long)}) listens, and the others'
 * ({@link #TcpLayer(Ipv4Stack, TcpLayer)}) share its buffer budget. A connection the primary accepted moves
 * to the loop its application runs on ({@link #handOff}); segments its peer still sends to the primary are
 * handed on to that loop, until the peer learns the loop's fabric node from the segments it gets
 * ({@link Segment#fromNode}). Connections a loop opens take their port from its share of the ephemeral
 * range, by which the primary knows where to hand their segments.
 */
public final class TcpLayer implements IpProtocolHandler, Datapath.Timer {
    /** Receives connections a listener accepted, once established; called on the owner thread. */
    @FunctionalInterface
    public interface Acceptor {
        void onAccept(TcpConnection connection);
    }

    /** One listening port. */
    static final class Listener {
        final int port;
        /** The one local address it accepts on (127.0.0.1, say), or 0 for all of the node's (0.0.0.0). */
        final int localIp;
        final int backlog;
        final TcpConfig config;
        final Acceptor acceptor;
        int halfOpen;

        Listener(int localIp, int port, int backlog, TcpConfig config, Acceptor acceptor) {
            this.localIp = localIp;
            this.port = port;
            this.backlog = backlog;
            this.config = config;
            this.acceptor = acceptor;
        }
    }

    /**
     * Closed connections kept for reuse by default; about 2.5 KB each (their buffers are pooled apart). As many as
     * may wait in TIME-WAIT, so churn that comes in bursts finds its connections again after a pause.
     */
    public static final int DEFAULT_CONNECTION_POOL_LIMIT = 16_384;
    /** Connections that may wait in TIME-WAIT at once by default (about 2.5 KB each; Linux: tcp_max_tw_buckets). */
    public static final int DEFAULT_TIME_WAIT_LIMIT = 16_384;

    private final Ipv4Stack ip;
    private final LoopGroup group;
    private final TcpConfig defaults;
    private final BufferBudget buffers;
    /** Told of connection milestones and RTT samples; null (the default): nothing is called. */
    TcpObserver observer;
    final ConnectionTable table = new ConnectionTable();
    /** The listeners by port. */
    private final Listener[] listeners = new Listener[65536];
    /** Connections in TIME-WAIT that their application let go of, as records rather than objects. */
    final TimeWaitTable timeWaitRecords = new TimeWaitTable();
    int timeWaitLimit = DEFAULT_TIME_WAIT_LIMIT;
    /** Connection objects waiting in TIME-WAIT. */
    int timeWaiting;
    /** The connections with a timer pending, by deadline (their hooks keep it). */
    final TimerQueue timers = new TimerQueue();
    final IsnGenerator isn = new IsnGenerator();
    private final long[] counters = new long[TcpCounter.values().length];

    // The layer's parts (see the class comment); the per-segment path calls them as final classes.
    final SegmentSender sender;
    final ConnectionPool pool;
    final LoopHandOff loopHandOff;
    private final SegmentDemux demux;
    private final LocalPorts ports;
    private final LostPeers lostPeers;
    /** The earliest time any connection asked to be polled (its deadline after its last call). */
    private volatile long nextDeadline = Long.MAX_VALUE;

    /**
     * TCP over {@code ip}; connections get {@code defaults} unless a call says otherwise. Registers protocol 6.
     * The connections' buffers may hold 256 MiB together, or 3/4 of the JVM's native memory bound if less (see the other constructor).
     */
    public TcpLayer(Ipv4Stack ip, TcpConfig defaults) {
        this(ip, defaults, BufferBudget.jvmDefault());
    }

    /**
     * As {@link #TcpLayer(Ipv4Stack, TcpConfig)}, with the connections' send and receive buffers together
     * bounded to {@code bufferMemoryLimit} bytes (Linux's tcp_mem): past it, data that arrives is dropped
     * unacknowledged (counted as {@link TcpCounter#BUFFER_SHORTAGES}; the peer sends it again) and a write
     * throws {@link BufferUnavailableException}. A buffer takes its memory when first used and gives it back
     * when its connection closes, or in TIME-WAIT once read, into a pool for the next connections; memory
     * that leaves the pool is freed at once. Past 2/3 of the bound (Linux's tcp_mem pressure mark) a buffer
     * that empties gives its memory back and send buffers get no new memory, so peers that never read pin at
     * most that much and data that arrives still finds room. The default bound (256 MiB, or 3/4 of the JVM's
     * native memory bound if less) is per layer: several nodes in one JVM should each be given a share.
     */
    public TcpLayer(Ipv4Stack ip, TcpConfig defaults, long bufferMemoryLimit) {
        this(ip, defaults, new BufferBudget(bufferMemoryLimit), new LoopFlows());
        if (ip.loop() != 0) {
            throw new IllegalArgumentException("the TCP layer of loop " + ip.loop() + " of " + ip.loopGroup()
                    + " shares its primary's: build it with new TcpLayer(ip, primaryLayer)");
        }
    }

    /**
     * The layer of a node's event loop other than the primary ({@link LoopGroup}): its defaults, buffer budget
     * and moved connections are {@code primary}'s. It does not listen; its connections take ports from its
     * loop's share of the ephemeral range.
     */
    public TcpLayer(Ipv4Stack ip, TcpLayer primary) {
        this(ip, primary.defaults, primary.buffers, primary.loopHandOff.flows);
        if (ip.loop() == 0 || primary.ip.loop() != 0 || ip.loopGroup() != primary.ip.loopGroup()) {
            throw new IllegalArgumentException("a layer shares the budget of its node's primary loop (loop 0 of the same"
                    + " group), not " + primary + " for loop " + ip.loop() + " of " + ip.loopGroup());
        }
    }

    private TcpLayer(Ipv4Stack ip, TcpConfig defaults, BufferBudget buffers, LoopFlows flows) {
        this.buffers = buffers;
        this.ip = ip;
        this.group = ip.loopGroup();
        this.defaults = defaults;
        this.loopHandOff = new LoopHandOff(this, ip, flows);
        this.sender = new SegmentSender(this, ip);
        this.pool = new ConnectionPool(this, buffers);
        this.demux = new SegmentDemux(this, listeners);
        this.ports = new LocalPorts(this, listeners);
        this.lostPeers = new LostPeers(this);
        ip.register(Ipv4Header.PROTOCOL_TCP, this);
        ip.neighbors().addNodeLostListener(lostPeers::onNodeLost);
    }

    public Ipv4Stack ip() {
        return ip;
    }

    public TcpConfig defaults() {
        return defaults;
    }

    /** The bound on the connections' buffer memory together, in bytes. */
    public long bufferMemoryLimit() {
        return buffers.limit();
    }

    /** The buffer memory the connections hold now, in bytes. */
    public long bufferMemoryUsed() {
        return buffers.used();
    }

    /** The buffer memory waiting in the layer's pool for the next connections, in bytes (within the bound). */
    public long bufferMemoryPooled() {
        return buffers.pooled();
    }

    // ---- user calls (the owner thread) ------------------------------------------------------

    /** Runs {@code task} on the owner thread: at once when the caller is it, else handed over ({@link Link#execute}). */
    public void execute(Runnable task) {
        ip.link().execute(task);
    }

    /**
     * Listens on {@code port}; {@code backlog} bounds half-open connections (beyond it, SYN cookies
     * answer). Throws IllegalStateException naming the port if it is taken.
     */
    public void listen(int port, int backlog, TcpConfig config, Acceptor acceptor) {
        listen(0, port, backlog, config, acceptor);
    }

    /**
     * As {@link #listen(int, int, TcpConfig, Acceptor)}, accepting only connections to {@code localIp}, one of the
     * node's addresses (0: all of them), as a socket bound to 127.0.0.1 hears only its node's own connections. One
     * listener per port: a second address on a port that listens is refused (Linux would take both).
     */
    public void listen(int localIp, int port, int backlog, TcpConfig config, Acceptor acceptor) {
        ip.link().checkOwner();
        if (localIp != 0 && !ip.isLocal(localIp)) {
            throw new IllegalArgumentException("cannot listen on " + Ipv4Address.toString(localIp) + ": it is not an address"
                    + " of this node (" + Ipv4Address.toString(ip.address()) + ", 127.0.0.0/8); listen on one of them or on 0.0.0.0");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("TCP port " + port + " is outside 1..65535");
        }
        if (backlog < 1) {
            throw new IllegalArgumentException("listen backlog must be at least 1, got " + backlog);
        }
        if (ip.loop() != 0) {
            throw new IllegalStateException("TCP listens on its node's first event loop, which peers send to; this is loop "
                    + ip.loop() + " of " + group + " (Vert.x binds servers there itself)");
        }
        if (listeners[port] != null) {
            throw new IllegalStateException("TCP port " + port + " is already listening on "
                    + Ipv4Address.toString(ip.address()) + "; close that server or choose another port");
        }
        listeners[port] = new Listener(localIp, port, backlog, config, acceptor);
        group.setTcpListening(port, true);
    }

    /** Whether {@code port} has a listener. */
    public boolean isListening(int port) {
        return port >= 1 && port <= 65535 && listeners[port] != null;
    }

    public void unlisten(int port) {
        ip.link().checkOwner();
        listeners[port] = null;
        group.setTcpListening(port, false);
    }

    /**
     * Ends at once every connection to fabric node {@code node}, or to one of the {@code addresses} it held, because
     * that node died or restarted: its state is gone, so nothing will ever answer. A connection still opening
     * (SYN-SENT) fails with "No route to host" (EHOSTUNREACH), as Linux's tcp_v4_err ends a connect on a hard ICMP
     * error; any other, SYN-RECEIVED included, is reset ("connection reset by peer"), as Linux's tcp_reset then
     * tcp_done; no segment is sent. Their buffers go back to the budget. TIME-WAIT is left to run out: it holds no
     * buffers and keeps old duplicates of a restarted peer out. Owner thread; returns how many it ended.
     */
    public int endConnectionsTo(int node, int[] addresses) {
        return lostPeers.endConnectionsTo(node, addresses);
    }

    // ---- moving connections between the node's loops ---------------------------------------

    /**
     * Hands connection {@code c} to {@code to}, the layer of another event loop of this node, where its
     * application runs (a Vert.x child channel registered there). From now on only that loop touches it: it
     * takes it in at its next segment or {@link #adoptArrivals}, and segments for it that reach this loop are
     * handed on. On this layer's owner thread; {@code c} must be an established connection an application has.
     */
    public void handOff(TcpConnection c, TcpLayer to) {
        loopHandOff.handOff(c, to);
    }

    /** Takes in the connections other loops handed to this one; on the owner thread, before using one of them. */
    public void adoptArrivals() {
        loopHandOff.adoptArrivals();
    }

    // ---- opening connections (the owner thread) ---------------------------------------------

    /**
     * The MSS a connection to {@code remoteIp} advertises. Linux derives it from the route's interface: to the node's
     * own addresses that is the loopback interface (MTU 65,535), so such a connection carries segments of up to 65,495
     * bytes (as far as its buffers hold them) rather than the link's. A config whose MSS is not the link's default
     * (MTU - 40) keeps it on every route, as Linux keeps TCP_MAXSEG. A node of several loops sends to itself through
     * its rings, so there the link's MSS holds.
     */
    int mssTo(TcpConfig config, int remoteIp) {
        int linkMss = TcpConfig.mssFor(ip.link().mtu());
        if (config.mss() != linkMss || !ip.viaLoopbackInterface(remoteIp)) {
            return config.mss();
        }
        return Math.max(linkMss, Math.min(TcpConfig.mssFor(LoopbackInterface.MTU), Math.min(config.sendBuffer(), config.receiveBuffer())));
    }

    /**
     * Opens a connection to {@code remoteIp}:{@code remotePort} from an ephemeral port; the SYN leaves at once.
     * Without a route, or when the next hop's fabric node is not up, it fails at once as Linux's connect(2) does
     * (ENETUNREACH, EHOSTUNREACH): an {@link UncheckedIOException} around the {@link NoRouteToHostException} and
     * message Java's sockets give.
     */
    public TcpConnection connect(int remoteIp, int remotePort, TcpConfig config, TcpConnection.Events events, long now) {
        return connect(0, 0, remoteIp, remotePort, config, events, now);
    }

    /**
     * As {@link #connect(int, int, TcpConfig, TcpConnection.Events, long)}, from {@code localIp} (0: the address of
     * the interface it leaves through) and {@code localPort} (0: an ephemeral one), as after bind(2). A local address
     * the node does not hold, or a port that listens or has a connection, throws {@link IllegalArgumentException} (see
     * {@link #checkBindable}).
     */
    public TcpConnection connect(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config,
                                 TcpConnection.Events events, long now) {
        ip.link().checkOwner();
        if (localIp != 0 || localPort != 0) {
            checkBindable(localIp, localPort);
        }
        if (remotePort < 1 || remotePort > 65535) {
            throw new IllegalArgumentException("TCP port " + remotePort + " is outside 1..65535");
        }
        int reach = ip.reachability(remoteIp);
        if (reach != SendStatus.OK) {
            count(TcpCounter.CONNECTS_UNREACHABLE);
            TcpError why = reach == SendStatus.NO_ROUTE ? TcpError.NETWORK_UNREACHABLE : TcpError.HOST_UNREACHABLE;
            throw new UncheckedIOException(new NoRouteToHostException(why.message() + ": " + Ipv4Address.toString(remoteIp)
                    + ":" + remotePort + " (" + SendStatus.describe(reach) + ")"));
        }
        int local = localPort != 0 ? localPort : ports.ephemeral(remoteIp, remotePort);
        if (localIp == 0) {
            localIp = ip.sourceFor(remoteIp); // RFC 1122 3.3.4.3: the address of the interface it leaves through
        }
        TcpConnection c = pool.open(localIp, local, remoteIp, remotePort, config, null, events);
        table.put(ConnectionTable.key(remoteIp, remotePort, local), c);
        count(TcpCounter.CONNECTIONS_OPENED);
        c.connect(isn.isn(now, localIp, local, remoteIp, remotePort), now); // its timers reach us through its hooks
        return c;
    }

    /**
     * Throws {@link IllegalArgumentException} with Linux's words when a connection may not leave from {@code localIp}
     * (0: any) and {@code localPort} (0: an ephemeral one): the address is not the node's (EADDRNOTAVAIL), the port
     * listens or has a connection (EADDRINUSE), or, with several loops, the port is not this loop's to receive on.
     */
    public void checkBindable(int localIp, int localPort) {
        ports.checkBindable(localIp, localPort);
    }

    // ---- settings, and what the layer holds (for tools and tests) ---------------------------

    /**
     * Told, on the datapath thread, how many closed connections the layer let go after they went unused for
     * {@link ConnectionPool#IDLE_NS}: their objects are garbage now, which the embedding may want collected.
     */
    public void setPoolReleaseHandler(java.util.function.IntConsumer handler) {
        pool.setReleaseHandler(handler);
    }

    /**
     * How many closed connections the layer keeps for reuse (default {@value #DEFAULT_CONNECTION_POOL_LIMIT});
     * 0 keeps none. A connection is reused only after it closed and its application closed or aborted it.
     */
    public void setConnectionPoolLimit(int limit) {
        ip.link().checkOwner();
        if (limit < 0) {
            throw new IllegalArgumentException("connection pool limit " + limit + " is negative; give 0 or more");
        }
        pool.setLimit(limit);
    }

    /**
     * Sets (or, with null, removes) the observer of this layer's connections: their openings, closings and RTT samples
     * (for metrics and traces). On the layer's loop.
     */
    public void setObserver(TcpObserver observer) {
        this.observer = observer;
    }

    /** The layer's clock (the link's). */
    long clock() {
        return ip.link().now();
    }

    /**
     * How many connections may wait in TIME-WAIT at once (default {@value #DEFAULT_TIME_WAIT_LIMIT}); beyond it a
     * connection closes once the peer's FIN is acknowledged, without the wait, and {@link TcpCounter#TIME_WAIT_OVERFLOWS}
     * counts it, as Linux does past tcp_max_tw_buckets. 0: no connection waits.
     */
    public void setTimeWaitLimit(int limit) {
        ip.link().checkOwner();
        if (limit < 0) {
            throw new IllegalArgumentException("TIME-WAIT limit " + limit + " is negative; give 0 or more");
        }
        timeWaitLimit = limit;
    }

    /** How many closed connections wait for reuse now. */
    public int pooledConnections() {
        return pool.size();
    }

    /** Sets the user's event handler of a connection the layer created (accepted ones start without). */
    public void setEvents(TcpConnection c, TcpConnection.Events events) {
        ip.link().checkOwner();
        ((ConnectionHooks) c.events()).user = events;
    }

    /** How many connections the layer holds, in any state; from another thread it asks the owner (blocking). */
    public int connections() {
        if (!ip.link().isOwner()) {
            return ip.link().call(this::connections); // the table is the owner's: a plain read elsewhere may be stale
        }
        return table.size() + timeWaitRecords.size();
    }

    /** How many connections are in each state now (for tools and leak checks). */
    public Map<TcpState, Integer> states() {
        if (!ip.link().isOwner()) {
            return ip.link().call(this::states); // the table is the owner's: read it there
        }
        Map<TcpState, Integer> m = new EnumMap<>(TcpState.class);
        for (TcpConnection c : table.all()) {
            m.merge(c.state(), 1, Integer::sum);
        }
        if (timeWaitRecords.size() > 0) {
            m.merge(TcpState.TIME_WAIT, timeWaitRecords.size(), Integer::sum);
        }
        return m;
    }

    /**
     * A connection as tools list it ({@link #list}), with the bytes waiting to be read ({@code recvQueue}) and
     * sent but not yet acknowledged or not yet sent ({@code sendQueue}), as ss(8) shows Recv-Q and Send-Q.
     */
    public record ConnectionView(int localIp, int localPort, int remoteIp, int remotePort, TcpState state, int recvQueue,
                                 int sendQueue) {
    }

    /**
     * Up to {@code limit} of the layer's connection objects, as they are now (the compact TIME-WAIT records are
     * counted by {@link #states}, not listed); from another thread it asks the owner (blocking).
     */
    public java.util.List<ConnectionView> list(int limit) {
        if (!ip.link().isOwner()) {
            return ip.link().call(() -> list(limit));
        }
        java.util.List<ConnectionView> l = new java.util.ArrayList<>();
        for (TcpConnection c : table.all()) {
            if (l.size() == limit) {
                break;
            }
            l.add(new ConnectionView(c.localIp(), c.localPort(), c.remoteIp(), c.remotePort(), c.state(), c.readable(),
                    c.unacknowledged()));
        }
        return l;
    }

    public long counter(TcpCounter c) {
        return counters[c.ordinal()];
    }

    public Map<TcpCounter, Long> counters() {
        Map<TcpCounter, Long> m = new EnumMap<>(TcpCounter.class);
        for (TcpCounter c : TcpCounter.values()) {
            m.put(c, counters[c.ordinal()]);
        }
        return m;
    }

    void count(TcpCounter c) {
        counters[c.ordinal()]++;
    }

    // ---- receiving (datapath thread) -------------------------------------------------------

    @Override
    public void onDatagram(Ipv4Header ipHeader, long now) {
        demux.receive(ipHeader, now);
    }

    /**
     * An ICMP error about a segment this layer sent (RFC 1122 4.2.3.9, RFC 5927): a hard error ends a connection
     * still opening (SYN-SENT, SYN-RECEIVED) with the matching error, as Linux's tcp_v4_err does; for a synchronized
     * connection it is only counted (a soft error: the retransmission timer decides). The quoted sequence number
     * must lie in [SND.UNA, SND.NXT], or the error is counted and ignored (RFC 5927 4.1: a blind attack).
     */
    @Override
    public void onIcmpError(int type, int code, int info, Ipv4Header quoted, long now) {
        demux.onIcmpError(type, code, info, quoted, now);
    }

    // ---- timers ----------------------------------------------------------------------------

    /** Runs the connections' timers that are due; returns the earliest next deadline. Datapath thread. */
    @Override
    public long poll(long now) {
        if (pool.hasReleased()) {
            pool.recycleReleased();
        }
        if (lostPeers.pending()) {
            lostPeers.endLost();
        }
        if (sender.hasPendingResets()) {
            sender.sendPendingResets();
        }
        if (pool.checkDue(now)) {
            long at = pool.trimIdle(now);
            if (at != 0) {
                deadlineMoved(at);
            }
        }
        if (now < nextDeadline) {
            return nextDeadline;
        }
        timeWaitRecords.expire(now);
        // Only the due connections, earliest first: each poll re-queues its connection at its next
        // deadline through its hooks, or takes it out (no timer left, or closed).
        while (timers.earliest() <= now) {
            TcpConnection c = timers.first();
            long due = timers.earliest();
            c.poll(now);
            if (timers.first() == c && timers.earliest() == due) {
                break; // it asked for the same time again: the datapath calls back at once, as it asked
            }
        }
        nextDeadline = Math.min(timers.earliest(), timeWaitRecords.nextExpiry());
        if (sender.hasPendingResets()) {
            nextDeadline = Math.min(nextDeadline, now + TcpConnection.BLOCKED_RETRY_NS);
        }
        if (pool.checkAt() != 0) {
            nextDeadline = Math.min(nextDeadline, pool.checkAt());
        }
        return nextDeadline;
    }

    /**
     * After a user call into {@code c}: its timers may have moved earlier. Connections
     * the layer made tell it themselves ({@link TcpConnection.Events#onDeadlineMoved}); this remains for
     * callers that want to be explicit.
     */
    public void touched(TcpConnection c) {
        deadlineMoved(c.deadline());
    }

    /** A connection's deadline moved to {@code d}: if that is the earliest, the datapath polls the timers then. */
    void deadlineMoved(long d) {
        if (d < nextDeadline) {
            nextDeadline = d;
            wake();
        }
    }

    /** Given how to tell the datapath loop that a deadline moved earlier (its {@code timersChanged}). */
    public void setTimerWakeup(Runnable wakeup) {
        this.timerWakeup = wakeup;
    }

    private volatile Runnable timerWakeup = () -> { };

    /** Wakes the datapath loop to poll the layer (from any thread). */
    void wake() {
        timerWakeup.run();
    }

    // ---- sending ---------------------------------------------------------------------------

    /** Resets waiting for ring room now. */
    public int pendingResets() {
        return sender.pendingResets();
    }

    @Override
    public String toString() {
        return "TcpLayer[" + Ipv4Address.toString(ip.address()) + ", " + table.size() + " connections]";
    }
}
