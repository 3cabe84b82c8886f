package dev.nupa.tcp;

import java.lang.foreign.MemorySegment;

/**
 * One TCP connection as a sans-IO state machine (RFC 9293): fed segments with {@link #onSegment},
 * asked for its output and timers with {@link #poll}, given data with {@link #write} and asked for
 * it with {@link #read}. It reads no clock (every entry takes {@code now}, nanoseconds) and does no
 * I/O: segments leave through {@link Output}, user-visible changes through {@link Events}. Not
 * thread-safe: its owner serializes the calls.
 *
 * <p>What it implements: the RFC 9293 state machine with simultaneous open and close, half-close and
 * TIME-WAIT, and a bounded FIN-WAIT-2 once the application has closed fully (as Linux's
 * tcp_fin_timeout); the acceptability test of 3.10.7.4; MSS; RFC 7323 window scaling, timestamps and
 * PAWS; RFC 2018 SACK (blocks sent from the out-of-order ranges); with a SACK peer, RFC 6675
 * conservative loss recovery on a {@link SackScoreboard} (IsLost, SetPipe, NextSeg rules 1 to 4, the
 * RTO rule of 5.1, a reneging check); without one, RFC 5681 fast retransmit with RFC 6582 NewReno
 * recovery; both over a pluggable {@link CongestionControl}; the RFC 6298 retransmission timer with
 * Karn's rule; delayed ACK and Nagle; zero-window probing; receiver and sender silly-window
 * avoidance; keep-alive; user timeout; RFC 5961 challenge ACKs for in-window RSTs and SYNs.
 */
public final class TcpConnection {
    /** Where segments leave. The payload of an outgoing segment is {@code payloadLength} bytes of {@code payload} at {@code payloadOffset}. */
    @FunctionalInterface
    public interface Output {
        /**
         * Sends {@code segment}; returns false if it could not leave now (the fabric ring is full):
         * the connection then keeps it unsent and tries again shortly ({@link #BLOCKED_RETRY_NS}), so
         * back-pressure on the lossless fabric never turns into loss and a retransmission timeout.
         */
        boolean transmit(TcpConnection connection, Segment segment);
    }

    /** How soon a segment the output could not take is tried again. */
    public static final long BLOCKED_RETRY_NS = 200_000L;

    /** What the owner hears about; called from within the calls into the connection. */
    public interface Events {
        default void onEstablished(TcpConnection c) {
        }

        default void onReadable(TcpConnection c) {
        }

        default void onWritable(TcpConnection c) {
        }

        /** The peer sent FIN: no more data will come (half-close, RFC 9293 3.6). */
        default void onPeerClosed(TcpConnection c) {
        }

        /** The connection is gone: {@code error} null for an orderly close. */
        default void onClosed(TcpConnection c, TcpError error) {
        }

        /** Data arrived that no buffer memory could be had for: it was dropped unacknowledged (see {@link BufferBudget}). */
        default void onBufferShortage(TcpConnection c) {
        }

        /**
         * The connection's {@link #deadline()} moved, earlier or later, to {@code deadline} ({@link Long#MAX_VALUE}:
         * no timer pending), whoever called into it: an owner that polls many connections' timers learns here
         * when to poll this one.
         */
        default void onDeadlineMoved(TcpConnection c, long deadline) {
        }

        /** The connection enters TIME-WAIT; false: skip the wait (RFC 9293 3.6 2*MSL), close at the next poll. */
        default boolean onTimeWait(TcpConnection c) {
            return true;
        }

        /**
         * The connection is closed and its application let go of it ({@link #close} or {@link #abort}):
         * nothing may call it any more, so its owner may reuse the object ({@link #generation}). Once.
         */
        default void onReleased(TcpConnection c) {
        }
    }

    private static final Events NO_EVENTS = new Events() {
    };

    /** RFC 5961 section 7: at most this many challenge ACKs per second. */
    static final int CHALLENGE_ACKS_PER_SECOND = 1000;
    private static final long NEVER = Long.MAX_VALUE;
    /** The least time between SYN-ACKs sent again for duplicate SYNs (Linux's tcp_invalid_ratelimit, 500 ms). */
    static final long DUP_SYN_INTERVAL_NS = 500_000_000L;
    private static final long SECOND = 1_000_000_000L;
    /** RFC 7323 5.5: a timestamp older than 24 days is not trusted for PAWS. */
    private static final long PAWS_IDLE_NS = 24L * 24 * 3600 * SECOND;

    // Not final: a layer reuses a closed connection's object, arrays and buffers for the next one
    // (reuse), so opening a connection allocates nothing; generation tells the lives apart.
    private int localIp;
    private int localPort;
    private int remoteIp;
    private int remotePort;
    private int generation;
    private TcpConfig config;
    private Output output;
    private Events events;
    /** The fabric node the peer's segments come from, learned from them; -1: where IP's route leads. */
    private int via;
    private final ByteRing sendBuf;
    private final ByteRing recvBuf;
    private Assembler outOfOrder;
    private RttEstimator rtt;
    private CongestionControl cc;
    private final Segment tx = new Segment();
    private SackScoreboard scoreboard;

    private TcpState state = TcpState.CLOSED;
    private TcpError error;

    // Send sequence space (RFC 9293 3.3.1).
    private int iss;
    private int sndUna;
    private int sndNxt;
    private int sndMax;
    private int sndWnd;
    private int sndWl1;
    private int sndWl2;
    private int sndShift;
    private int maxSndWnd;
    /** Sequence number of the first byte in the send buffer. */
    private int bufSeq;
    private boolean finQueued;
    private boolean finSent;
    private int sendMss;

    // Receive sequence space.
    private int irs;
    private int rcvNxt;
    private int rcvShift;
    /** The right edge of the window last advertised: never moved left (RFC 9293 3.8.6.2.2). */
    private int rcvAdvertised;
    private boolean finReceived;

    // Options agreed.
    private boolean tsOk;
    private int tsRecent;
    private long tsRecentAt;
    private int lastAckSent;
    private boolean sackOk;
    private boolean scalingOk;
    private long tsBase;

    // Timers (absolute times, NEVER when off).
    private long rtoAt;
    private long delayedAckAt;
    private long persistAt;
    private long keepAliveAt;
    private long timeWaitAt;
    private long finWait2At;
    private long unackedSince;
    private int retries;
    private int keepAliveProbes;
    private int persistBackoff;

    // RTT timing of one segment at a time when there are no timestamps (Karn: never a retransmitted one).
    private boolean timing;
    private int timedSeq;
    private long timedAt;

    // Loss recovery: RFC 6675 with a SACK peer, RFC 5681 and RFC 6582 NewReno without.
    /** DupAcks: with SACK, ACKs that SACKed new octets (RFC 6675 section 2); else RFC 5681's. */
    private int dupAcks;
    private boolean inRecovery;
    /**
     * One past the last octet sent when recovery began or the timer last expired: RFC 6582's
     * "recover" + 1 and RFC 6675's RecoveryPoint + 1 (HighData + 1).
     */
    private int recover;
    /** RFC 6675 HighRxt + 1: the end of the highest retransmission of this recovery. */
    private int highRxt;
    /** RFC 6675 RescueRxt + 1: rule 4 may rescue once SND.UNA reaches it. */
    private int rescueRxt;
    /** New data sent by limited transmit since the last cumulative ACK (RFC 6675 (4.2): not in FlightSize). */
    private int limitedTransmit;

    /** The application closed fully ({@link #close}), not only its sending side ({@link #shutdownOutput}). */
    private boolean appClosed;
    /** The application let go ({@link #close} or {@link #abort}): once closed, the object may be reused. */
    private boolean appReleased;
    private boolean releaseAnnounced;

    private boolean ackNow;
    private int unackedSegments;
    private long dupSynAnsweredAt;
    private final ChallengeAckLimit challengeLimit = new ChallengeAckLimit();
    private long lastActivity;

    // Counters of this connection (read by tools; single writer: the owner).
    private long retransmits;
    private long fastRetransmits;
    private long timeouts;
    private long challengeAcksSent;
    private long pawsDrops;
    private long outOfOrderSegments;
    private long bufferDrops;

    public TcpConnection(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, Output output,
                         Events events) {
        this(localIp, localPort, remoteIp, remotePort, config, output, events, BufferBudget.UNLIMITED);
    }

    /** A connection whose buffers count against {@code budget} (its layer's). */
    TcpConnection(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, Output output,
                  Events events, BufferBudget budget) {
        this.output = output;
        this.sendBuf = new ByteRing(config.sendBuffer(), budget);
        this.recvBuf = new ByteRing(config.receiveBuffer(), budget);
        begin(localIp, localPort, remoteIp, remotePort, config, events);
    }

    /**
     * Makes this closed and released object a new connection, in CLOSED as a new one is; its layer calls
     * it. The generation moves on, so a holder of the old connection that checks it ({@link #generation})
     * finds out instead of acting on the new one.
     */
    void reuse(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, Events events) {
        if (state != TcpState.CLOSED || !appReleased) {
            throw new IllegalStateException("a TCP connection is reused only once closed and released, not " + this);
        }
        generation++;
        sendBuf.reset(config.sendBuffer());
        recvBuf.reset(config.receiveBuffer());
        begin(localIp, localPort, remoteIp, remotePort, config, events);
    }

    /** Everything a new connection starts with; the constructor and {@link #reuse} share it. */
    private void begin(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, Events events) {
        this.localIp = localIp;
        this.localPort = localPort;
        this.remoteIp = remoteIp;
        this.remotePort = remotePort;
        this.config = config;
        this.events = events != null ? events : NO_EVENTS;
        this.via = -1;
        int ranges = config.maxOutOfOrderRanges();
        if (outOfOrder == null || outOfOrder.capacity() != ranges) {
            outOfOrder = new Assembler(ranges);
            scoreboard = new SackScoreboard(ranges);
        } else {
            outOfOrder.clear();
            scoreboard.clear();
        }
        // 1 us granularity: the datapath loop polls timers far more often than every millisecond.
        if (rtt == null || rtt.minRto() != config.minRtoNs() || rtt.maxRto() != config.maxRtoNs()) {
            rtt = new RttEstimator(RttEstimator.DEFAULT_INITIAL_RTO_NS, config.minRtoNs(), config.maxRtoNs(), 1_000L);
        } else {
            rtt.clear();
        }
        if (cc == null || !cc.name().equalsIgnoreCase(config.congestionControl())) {
            cc = CongestionControls.create(config.congestionControl(), config.mss());
        } else {
            cc.reset(config.mss(), CongestionControls.initialWindow(config.mss()));
        }
        tx.clear();
        state = TcpState.CLOSED;
        error = null;
        iss = sndUna = sndNxt = sndMax = sndWnd = sndWl1 = sndWl2 = sndShift = maxSndWnd = bufSeq = 0;
        finQueued = finSent = false;
        sendMss = Math.min(536, config.mss()); // RFC 9293 3.7.1: 536 until the peer says otherwise
        irs = rcvNxt = rcvShift = rcvAdvertised = 0;
        finReceived = false;
        tsOk = sackOk = scalingOk = false;
        tsRecent = lastAckSent = 0;
        tsRecentAt = tsBase = 0;
        rtoAt = delayedAckAt = persistAt = keepAliveAt = timeWaitAt = finWait2At = unackedSince = NEVER;
        retries = keepAliveProbes = persistBackoff = 0;
        timing = false;
        timedSeq = 0;
        timedAt = 0;
        dupAcks = recover = highRxt = rescueRxt = limitedTransmit = 0;
        inRecovery = false;
        appClosed = appReleased = releaseAnnounced = false;
        ackNow = false;
        unackedSegments = 0;
        dupSynAnsweredAt = NEVER;
        challengeLimit.clear();
        lastActivity = 0;
        retransmits = fastRetransmits = timeouts = challengeAcksSent = pawsDrops = outOfOrderSegments = bufferDrops = 0;
        deadline = blockedRetryAt = NEVER;
        timerIndex = -1;
    }

    public int localIp() {
        return localIp;
    }

    public int localPort() {
        return localPort;
    }

    public int remoteIp() {
        return remoteIp;
    }

    public int remotePort() {
        return remotePort;
    }

    /**
     * Which life of this object the connection is: its layer reuses the object of a connection that is
     * closed and released (see {@link Events#onReleased}). A holder that may outlive the connection keeps
     * the generation it got and checks it with {@link #checkGeneration}.
     */
    public int generation() {
        return generation;
    }

    /** Throws IllegalStateException, naming the remedy, unless this object is still the connection of {@code generation}. */
    public void checkGeneration(int generation) {
        if (this.generation != generation) {
            throw new IllegalStateException("this TCP connection was closed and released, and its object now serves"
                    + " another connection; keep no reference to a connection after closing it");
        }
    }

    /** Package-private: the layer keeps its own hooks here; users set theirs with {@link TcpLayer#setEvents}. */
    void setEvents(Events events) {
        this.events = events;
    }

    Events events() {
        return events;
    }

    /** The fabric node to send to, learned from the peer's segments ({@link Segment#fromNode}); -1: IP's route. */
    int via() {
        return via;
    }

    /** Moves this connection to another layer of its node (another event loop): its output and hooks are that layer's. */
    void moveTo(Output output, Events events) {
        this.output = output;
        this.events = events;
    }

    public TcpState state() {
        return state;
    }

    /** Why the connection failed, or null. */
    public TcpError error() {
        return error;
    }

    public TcpConfig config() {
        return config;
    }

    /** The MSS used for sending: the least of the peer's and ours. */
    public int sendMss() {
        return sendMss;
    }

    public CongestionControl congestionControl() {
        return cc;
    }

    public long retransmits() {
        return retransmits;
    }

    public long fastRetransmits() {
        return fastRetransmits;
    }

    public long timeouts() {
        return timeouts;
    }

    public long challengeAcks() {
        return challengeAcksSent;
    }

    public long pawsDrops() {
        return pawsDrops;
    }

    public long outOfOrderSegments() {
        return outOfOrderSegments;
    }

    /** Data segments dropped because no memory could be had for the receive buffer. */
    public long bufferDrops() {
        return bufferDrops;
    }

    public long smoothedRttNs() {
        return rtt.srtt();
    }

    // ---- opening ---------------------------------------------------------------------------

    /** Active open (RFC 9293 3.10.1): sends SYN with initial sequence number {@code iss}. */
    public void connect(int iss, long now) {
        requireState(TcpState.CLOSED, "connect");
        initSend(iss, now);
        state = TcpState.SYN_SENT;
        poll(now);
    }

    /**
     * Passive open for a SYN that reached a listener (RFC 9293 3.10.7.2): the connection starts in
     * SYN-RECEIVED and answers with SYN-ACK.
     */
    public void accept(Segment syn, int iss, long now) {
        requireState(TcpState.CLOSED, "accept");
        initSend(iss, now);
        irs = syn.seq;
        rcvNxt = syn.seq + 1;
        via = syn.fromNode;
        negotiate(syn, now);
        sndWnd = syn.window; // never scaled in a SYN (RFC 7323 2.2)
        sndWl1 = syn.seq;
        sndWl2 = iss;
        state = TcpState.SYN_RECEIVED;
        poll(now);
    }

    /**
     * Passive open completed by a valid SYN cookie (RFC 4987 3.6): no SYN-RECEIVED state existed, so
     * the connection starts ESTABLISHED. The SYN's options, as the cookie restored them, stand in
     * {@code ack}'s MSS, window-scale and SACK-permitted fields (as Linux's cookie_v4_check fills its
     * parsed options); timestamps are on when the ACK carries one. {@code tsBase} is the base of the
     * clock the SYN-ACK's TSval was read from, so this end's TSvals go on from it.
     */
    public void acceptCookie(Segment ack, int iss, int irs, long tsBase, long now) {
        requireState(TcpState.CLOSED, "accept");
        initSend(iss, now);
        this.tsBase = tsBase;
        this.irs = irs;
        rcvNxt = irs + 1;
        via = ack.fromNode;
        sndUna = iss + 1;
        sndNxt = iss + 1;
        sndMax = iss + 1;
        lastAckSent = rcvNxt; // the SYN-ACK acknowledged the SYN: TS.Recent follows from here (RFC 7323 4.3)
        negotiate(ack, now);
        sndWnd = ack.window << sndShift;
        sndWl1 = ack.seq;
        sndWl2 = ack.ack;
        maxSndWnd = sndWnd;
        rcvAdvertised = rcvNxt + Math.min(recvBuf.free(), 65_535);
        establish();
        onSegment(ack, now); // data may ride on the ACK
    }

    private void initSend(int iss, long now) {
        this.iss = iss;
        sndUna = iss;
        sndNxt = iss;
        sndMax = iss;
        bufSeq = iss + 1;
        recover = iss;
        rcvShift = config.windowScaling() ? config.receiveWindowShift() : 0;
        tsBase = now;
        lastActivity = now;
        cc.reset(sendMss, initialWindow(sendMss));
    }

    private static int initialWindow(int mss) {
        return CongestionControls.initialWindow(mss);
    }

    /** Options of the peer's SYN: MSS, and the ones that count only if both ends offer them. */
    private void negotiate(Segment syn, long now) {
        sendMss = Math.min(config.mss(), syn.mss > 0 ? syn.mss : 536);
        scalingOk = config.windowScaling() && syn.windowScale >= 0;
        if (scalingOk) {
            sndShift = Math.min(14, syn.windowScale); // RFC 7323 2.3: larger shifts are used as 14
        } else {
            sndShift = 0; // RFC 7323 2.2: both ends must offer it, else neither scales
            rcvShift = 0;
        }
        tsOk = config.timestamps() && syn.timestamps;
        if (tsOk) {
            tsRecent = syn.tsVal;
            tsRecentAt = now;
        }
        sackOk = config.sack() && syn.sackPermitted;
        cc.reset(sendMss, initialWindow(sendMss));
    }

    // ---- the user side ---------------------------------------------------------------------

    /**
     * Queues up to {@code length} bytes for sending; returns how many fit the send buffer. Sends what it can at once.
     * Throws {@link BufferUnavailableException}, taking nothing, when the send buffer's memory cannot be had.
     */
    public int write(MemorySegment src, long offset, int length, long now) {
        int n = queue(src, offset, length);
        if (n > 0) {
            poll(now);
        }
        return n;
    }

    /**
     * Queues as {@link #write} does, without sending: a caller with several buffers to write at once (a
     * gathering write) queues them all, then calls {@link #poll} once, so they leave as full segments
     * rather than one small segment each.
     */
    public int queue(MemorySegment src, long offset, int length) {
        if (finQueued || !(state == TcpState.ESTABLISHED || state == TcpState.CLOSE_WAIT || state == TcpState.SYN_SENT
                || state == TcpState.SYN_RECEIVED)) {
            throw new IllegalStateException("cannot write in state " + state
                    + (finQueued ? " after close() or shutdownOutput()" : "") + ": the connection is not open for sending");
        }
        return sendBuf.write(src, offset, length);
    }

    /** Bytes that {@link #write} accepts now. */
    public int writable() {
        return finQueued ? 0 : sendBuf.free();
    }

    /** Bytes queued and not yet acknowledged. */
    public int unacknowledged() {
        return sendBuf.size();
    }

    /** Bytes ready for {@link #read}. */
    public int readable() {
        return recvBuf.size();
    }

    /** Whether the peer has closed its side and every byte it sent has been read. */
    public boolean atEnd() {
        return finReceived && recvBuf.size() == 0;
    }

    /** Takes up to {@code length} received bytes; a window update goes out when the window opened enough. */
    public int read(MemorySegment dst, long offset, int length, long now) {
        int n = recvBuf.peek(0, dst, offset, length);
        recvBuf.consume(n);
        if (n > 0 && state.synchronizedState() && windowUpdateWorthSending()) {
            ackNow = true; // never delay a window update that matters
            poll(now);
        }
        return n;
    }

    /**
     * Closes this end for sending (RFC 9293 3.10.4, half-close): FIN follows the data already
     * queued; reading goes on until the peer closes too, and FIN-WAIT-2 lasts as long as the peer
     * keeps its side open (RFC 9293 sets no bound).
     */
    public void shutdownOutput(long now) {
        switch (state) {
            case CLOSED, TIME_WAIT, LAST_ACK, CLOSING, FIN_WAIT_1, FIN_WAIT_2 -> {
                return;
            }
            case LISTEN, SYN_SENT -> {
                finish(null);
                return;
            }
            default -> {
            }
        }
        finQueued = true;
        poll(now);
    }

    /**
     * Closes fully: as {@link #shutdownOutput}, and the application reads no more, so waiting in
     * FIN-WAIT-2 for the peer's FIN ends after {@link TcpConfig#finWait2TimeoutNs()} with a reset and
     * {@link TcpError#FIN_WAIT_2_TIMEOUT} (Linux's tcp_fin_timeout for orphaned sockets). After an
     * earlier {@link #shutdownOutput} that left the connection in FIN-WAIT-2, the wait starts now.
     */
    public void close(long now) {
        appClosed = true;
        appReleased = true;
        if (state == TcpState.FIN_WAIT_2) {
            startFinWait2Timer(now);
            poll(now);
        } else {
            shutdownOutput(now);
        }
        announceRelease();
    }

    /** Aborts (RFC 9293 3.10.5): RST to the peer if synchronized, everything dropped. */
    public void abort(long now) {
        appReleased = true;
        if (state == TcpState.SYN_RECEIVED || state.synchronizedState() && state != TcpState.TIME_WAIT) {
            sendRst(sndNxt, 0, false);
        }
        finish(TcpError.ABORTED);
        announceRelease();
    }

    /**
     * Ends TIME-WAIT now, for a new connection on the same four-tuple (RFC 6191; Linux's tcp_tw_reuse): only
     * with timestamps, whose PAWS check (RFC 7323 5) keeps old duplicates out. Returns whether it ended.
     */
    boolean endTimeWaitForReuse() {
        if (state != TcpState.TIME_WAIT || !tsOk) {
            return false;
        }
        finish(null);
        return true;
    }

    /** Whether it waits in TIME-WAIT and its application let go of it: its layer may keep a record instead. */
    boolean waitsReleased() {
        return state == TcpState.TIME_WAIT && appReleased;
    }

    /**
     * Leaves TIME-WAIT to a record in {@code table} under {@code key} (its layer's), with what an answer to a
     * stray segment needs, and closes: the object is free for another connection. An ACK still owed leaves
     * now. Returns the record's slot.
     */
    int moveToTimeWaitRecord(TimeWaitTable table, long key, long now) {
        int wnd = Math.min(Math.max(0, rcvAdvertised - rcvNxt) >>> rcvShift, 65_535);
        int slot = table.add(key, sndNxt, rcvNxt, wnd, tsOk, tsRecent, tsBase, timeWaitAt, config.timeWaitNs());
        if (ackNow || delayedAckAt != NEVER || blockedRetryAt != NEVER) {
            Segment s = header(Segment.ACK, sndNxt);
            emit(s, now);
        }
        finish(null);
        return slot;
    }

    /** Its layer lets go of a connection no application ever had (a handshake that failed before it was accepted). */
    void releaseUnclaimed() {
        appReleased = true;
        announceRelease();
    }

    /** {@link Events#onReleased}, once, when the connection is both closed and let go of by its application. */
    private void announceRelease() {
        if (appReleased && state == TcpState.CLOSED && !releaseAnnounced) {
            releaseAnnounced = true;
            events.onReleased(this);
        }
    }

    /**
     * Drops a SYN-RECEIVED connection without a word to the peer: the peer completed the handshake with
     * a SYN cookie sent for an earlier copy of its SYN (TcpLayer), so this one will never be acknowledged.
     */
    void supersede() {
        finish(TcpError.SUPERSEDED);
    }

    /** Whether {@code ack} is the one ACK that completes this SYN-RECEIVED connection's handshake (RFC 9293 3.10.7.4). */
    boolean completesHandshake(int ack) {
        return Seq.gt(ack, sndUna) && Seq.le(ack, sndMax);
    }

    // ---- segment arrival (RFC 9293 3.10.7) ---------------------------------------------------

    /** Processes one incoming segment. Hostile or stale segments are dropped (and maybe answered), never thrown on. */
    public void onSegment(Segment in, long now) {
        lastActivity = now;
        keepAliveProbes = 0;
        switch (state) {
            case CLOSED, LISTEN -> {
                return; // the owner answers these (RST from the layer)
            }
            case SYN_SENT -> synSent(in, now);
            default -> synchronizedOrSynReceived(in, now);
        }
        if (state != TcpState.CLOSED) {
            poll(now);
        }
    }

    private void synSent(Segment in, long now) {
        boolean ack = in.has(Segment.ACK);
        if (ack && (Seq.le(in.ack, iss) || Seq.gt(in.ack, sndMax))) {
            if (!in.has(Segment.RST)) {
                sendRst(in.ack, 0, false);
            }
            return;
        }
        if (in.has(Segment.RST)) {
            if (ack) {
                finish(TcpError.REFUSED);
            }
            return;
        }
        if (!in.has(Segment.SYN)) {
            return;
        }
        irs = in.seq;
        rcvNxt = in.seq + 1;
        rcvAdvertised = rcvNxt + Math.min(recvBuf.free(), 65_535); // what our SYN offered, now anchored
        negotiate(in, now);
        if (ack) {
            via = in.fromNode;
            ackAdvance(in.ack, now);
            sndWnd = in.window; // SYN: never scaled
            sndWl1 = in.seq;
            sndWl2 = in.ack;
            maxSndWnd = Math.max(maxSndWnd, sndWnd);
            establish();
            ackNow = true;
        } else {
            // Simultaneous open (RFC 9293 3.5, figure 8): answer SYN-ACK from SYN-RECEIVED.
            sndNxt = iss;
            state = TcpState.SYN_RECEIVED;
            sndWnd = in.window;
            sndWl1 = in.seq;
        }
    }

    private void synchronizedOrSynReceived(Segment in, long now) {
        if (state == TcpState.SYN_RECEIVED && in.has(Segment.SYN) && in.seq == irs) {
            if (!in.has(Segment.ACK) && !in.has(Segment.RST)) {
                // The peer's SYN again: our SYN-ACK was lost or is slow. Answer it now, as Linux does
                // (tcp_check_req), at most once per DUP_SYN_INTERVAL_NS, rather than leave the peer to
                // wait for our retransmission timer (RFC 9293 would only ACK it, which a SYN-SENT peer drops).
                if (dupSynAnsweredAt == NEVER || now - dupSynAnsweredAt >= DUP_SYN_INTERVAL_NS) {
                    dupSynAnsweredAt = now;
                    sndNxt = iss; // transmit() sends the SYN-ACK again; no back-off, not counted as a timeout
                    timing = false; // Karn: an RTT sample of the handshake would now be ambiguous
                    retransmits++;
                }
                return;
            }
            // Simultaneous open (RFC 9293 figure 8): the peer's SYN-ACK repeats the SYN we already
            // have; only its new part, the ACK, is processed (3.10.7.4: "straddle" the boundary).
            in.flags &= ~Segment.SYN;
            in.seq++;
        }
        int len = in.segmentLength();
        // RFC 7323 5.3 (PAWS), before the window check.
        if (tsOk && in.timestamps && !in.has(Segment.RST) && tsRecentAt != NEVER && Seq.lt(in.tsVal, tsRecent)
                && now - tsRecentAt < PAWS_IDLE_NS) {
            pawsDrops++;
            ackNow = true;
            return;
        }
        if (!acceptable(in.seq, len)) {
            if (rcvAdvertised == rcvNxt && in.has(Segment.ACK) && !in.has(Segment.RST) && !in.has(Segment.SYN)
                    && Seq.ge(in.seq, rcvNxt) && state.synchronizedState()) {
                // RFC 9293 3.10.7.4: with a zero receive window no segment is acceptable, "but special
                // allowance should be made to accept valid ACKs": take the acknowledgment, not the data.
                processAck(in, now);
            }
            if (!in.has(Segment.RST)) {
                ackNow = true; // RFC 9293 3.10.7.4: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>
                if (state == TcpState.TIME_WAIT && in.has(Segment.FIN)) {
                    timeWaitAt = now + config.timeWaitNs(); // a retransmitted FIN: restart 2 MSL
                }
            }
            return;
        }
        if (in.has(Segment.RST)) {
            // RFC 5961 3.2: only an exact match resets; in-window otherwise draws a challenge ACK.
            if (in.seq != rcvNxt) {
                challengeAck(now);
                return;
            }
            boolean quiet = state == TcpState.CLOSING || state == TcpState.LAST_ACK || state == TcpState.TIME_WAIT;
            finish(quiet ? null : TcpError.RESET);
            return;
        }
        if (in.has(Segment.SYN)) {
            challengeAck(now); // RFC 5961 4.2: a SYN in a synchronized state
            return;
        }
        if (!in.has(Segment.ACK)) {
            return;
        }
        if (state == TcpState.SYN_RECEIVED) {
            if (completesHandshake(in.ack)) {
                ackAdvance(in.ack, now);
                sndWnd = in.window << sndShift;
                sndWl1 = in.seq;
                sndWl2 = in.ack;
                maxSndWnd = Math.max(maxSndWnd, sndWnd);
                establish();
            } else {
                sendRst(in.ack, 0, false);
                return;
            }
        } else if (!processAck(in, now)) {
            return;
        }
        if (in.fromNode >= 0) {
            via = in.fromNode; // an acceptable segment with a valid ACK: the peer's loop answers from there
        }
        if (in.urgentPointer != 0 && in.has(Segment.URG)) {
            // RFC 6093: urgent data is delivered inline like any other; nothing to do.
        }
        if (in.payloadLength > 0 && (state == TcpState.ESTABLISHED || state == TcpState.FIN_WAIT_1
                || state == TcpState.FIN_WAIT_2)) {
            receiveText(in, now);
        }
        if (tsOk && in.timestamps && Seq.le(in.seq, lastAckSent) && Seq.lt(lastAckSent, in.seq + Math.max(1, len))) {
            tsRecent = in.tsVal; // RFC 7323 4.3
            tsRecentAt = now;
        }
        if (in.has(Segment.FIN) && in.seq + in.payloadLength == rcvNxt && !finReceived) {
            receiveFin(now);
        }
    }

    /** The acceptability test of RFC 9293 3.10.7.4 (the table of four cases). */
    private boolean acceptable(int seq, int len) {
        int wnd = Math.max(0, rcvAdvertised - rcvNxt);
        if (len == 0) {
            return wnd == 0 ? seq == rcvNxt : Seq.le(rcvNxt, seq) && Seq.lt(seq, rcvNxt + wnd);
        }
        if (wnd == 0) {
            return false;
        }
        return Seq.le(rcvNxt, seq) && Seq.lt(seq, rcvNxt + wnd)
                || Seq.le(rcvNxt, seq + len - 1) && Seq.lt(seq + len - 1, rcvNxt + wnd);
    }

    /** ACK processing in a synchronized state; returns false when the segment is to be dropped. */
    private boolean processAck(Segment in, long now) {
        int ack = in.ack;
        if (Seq.gt(ack, sndMax)) {
            ackNow = true; // acknowledges something not yet sent (RFC 9293 3.10.7.4 fifth check)
            return false;
        }
        if (Seq.lt(ack, sndUna - Math.max(maxSndWnd, 1))) {
            challengeAck(now); // RFC 5961 5.2: far too old
            return false;
        }
        int flightBefore = sndMax - sndUna;
        boolean advanced = Seq.gt(ack, sndUna);
        if (advanced) {
            int acked = ack - sndUna;
            long rttNs = rttSample(in, ack, now);
            ackAdvance(ack, now);
            dupAcks = 0; // RFC 6675 section 5, RFC 5681 3.2: a cumulative ACK resets DupAcks
            limitedTransmit = 0;
            if (inRecovery) {
                if (Seq.ge(ack, recover)) {
                    // RFC 6675 (A), RFC 6582 3.2 step 3: a full acknowledgment ends recovery; the
                    // scoreboard above SND.UNA stays.
                    inRecovery = false;
                    cc.onExitRecovery(now);
                } else if (!sackOk) {
                    retransmitFirstUnacknowledged(now); // RFC 6582 3.2 step 3: a partial ACK
                }
                // With SACK, (B) and (C) follow in transmit(): SetPipe, then NextSeg while cwnd allows.
            } else {
                cc.onAck(now, acked, rttNs, flightBefore);
            }
        }
        int newlySacked = sackOk && in.sackBlocks > 0 ? recordSack(in) : 0;
        if (advanced && !scoreboard.isEmpty() && scoreboard.left(0) == sndUna) {
            reneged(now);
        }
        if (sackOk) {
            // RFC 6675 section 2: an ACK is a duplicate when it SACKs octets not SACKed before,
            // whatever else it carries.
            if (newlySacked > 0 && !inRecovery) {
                dupAcks++;
                // RFC 6675 section 5 (1) and (2); 5.1: not again before SND.UNA reaches RecoveryPoint + 1.
                if ((dupAcks >= SackScoreboard.DUP_THRESH || scoreboard.isLost(sndUna, maxPayload()))
                        && Seq.ge(sndUna, recover)) {
                    enterSackRecovery(now);
                }
                // Otherwise (3): limited transmit, governed by pipe, in transmit().
            }
        } else if (!advanced && ack == sndUna && in.segmentLength() == 0 && flightBefore > 0
                && (in.window << sndShift) == sndWnd && !in.has(Segment.FIN)) {
            // RFC 5681 section 2: a duplicate acknowledgment.
            dupAcks++;
            if (dupAcks == SackScoreboard.DUP_THRESH && !inRecovery && Seq.gt(ack, recover)) { // RFC 6582 3.2 step 2
                inRecovery = true;
                recover = sndMax;
                fastRetransmits++;
                cc.onEnterRecovery(now, flightBefore);
                retransmitFirstUnacknowledged(now);
            }
        }
        // Window update (RFC 9293 3.10.7.4: SND.WL1 / SND.WL2 rule).
        if (Seq.lt(sndWl1, in.seq) || sndWl1 == in.seq && Seq.le(sndWl2, ack)) {
            sndWnd = in.window << sndShift;
            sndWl1 = in.seq;
            sndWl2 = ack;
            maxSndWnd = Math.max(maxSndWnd, sndWnd);
            if (sndWnd > 0) {
                persistAt = NEVER;
                persistBackoff = 0;
            }
        }
        switch (state) {
            case FIN_WAIT_1 -> {
                if (finAcked()) {
                    state = TcpState.FIN_WAIT_2;
                    if (appClosed) {
                        startFinWait2Timer(now);
                    }
                }
            }
            case CLOSING -> {
                if (finAcked()) {
                    enterTimeWait(now);
                }
            }
            case LAST_ACK -> {
                if (finAcked()) {
                    finish(null);
                    return false;
                }
            }
            default -> {
            }
        }
        return true;
    }

    /** The sequence number of our FIN: fixed once close() was called, since no data is added after it. */
    private int finSeq() {
        return bufSeq + sendBuf.size();
    }

    private boolean finAcked() {
        return finQueued && finSent && Seq.gt(sndUna, finSeq());
    }

    /** SND.UNA moves to {@code ack}: free acknowledged bytes, restart or stop the retransmission timer. */
    private void ackAdvance(int ack, long now) {
        if (Seq.gt(ack, bufSeq)) {
            int dataAcked = Math.min(ack - bufSeq, sendBuf.size());
            sendBuf.consume(dataAcked);
            bufSeq += dataAcked;
            if (dataAcked > 0) {
                events.onWritable(this);
            }
        }
        sndUna = ack;
        if (Seq.lt(sndNxt, sndUna)) {
            sndNxt = sndUna;
        }
        scoreboard.dropBelow(ack);
        retries = 0;
        persistBackoff = 0;
        if (sndUna == sndMax) {
            rtoAt = NEVER;
            unackedSince = NEVER;
        } else {
            rtoAt = now + rtt.rto(); // RFC 6298 5.3
            unackedSince = now;
        }
    }

    /** An RTT sample from the timestamp echo (RFC 7323 4) or the one timed segment (Karn); -1 if none. */
    private long rttSample(Segment in, int ack, long now) {
        // One timed segment per round trip (RFC 6298 3); timestamps tick in milliseconds (RFC 7323
        // 5.4), far too coarse for fabric round trips of microseconds, so they serve PAWS only.
        long sample = -1;
        if (timing && Seq.gt(ack, timedSeq)) {
            sample = now - timedAt;
            timing = false;
        }
        if (sample >= 0) {
            rtt.sample(sample);
        }
        return sample;
    }

    private void establish() {
        state = TcpState.ESTABLISHED;
        events.onEstablished(this);
    }

    private void receiveText(Segment in, long now) {
        int seq = in.seq;
        long off = in.payloadOffset;
        int len = in.payloadLength;
        if (Seq.lt(seq, rcvNxt)) { // trim what we already have
            int skip = rcvNxt - seq;
            if (skip >= len) {
                ackNow = true; // a pure duplicate: tell the sender where we are
                return;
            }
            seq += skip;
            off += skip;
            len -= skip;
        }
        if (appClosed) {
            // RFC 1122 4.2.2.13: new data for an application that has closed is answered with a reset
            // (nobody will read it), so the sender learns at once that it went nowhere.
            sendRst(sndNxt, 0, false);
            finish(TcpError.ABORTED);
            return;
        }
        int window = recvBuf.free();
        int at = seq - rcvNxt;
        if (at >= window) {
            ackNow = true;
            return;
        }
        len = Math.min(len, window - at); // trim what lies beyond the window
        if (!recvBuf.reserve()) {
            // No memory for the receive buffer (the layer's budget or the JVM's bound): the data is dropped
            // unacknowledged, as if lost on the way. The peer's retransmission timer sends it again, and it
            // lands once other connections have given memory back; a shortage that outlasts the peer's
            // retries ends the connection there with a timeout, so the sender is told.
            bufferDrops++;
            events.onBufferShortage(this);
            return;
        }
        if (at == 0) {
            recvBuf.writeAt(0, in.payload, off, len);
            int more = outOfOrder.advance(len); // bytes held beyond the new RCV.NXT that are now in order
            int gained = len + more;
            recvBuf.commit(gained);
            rcvNxt += gained;
            if (more > 0 || !outOfOrder.isEmpty()) {
                ackNow = true; // a hole filled: acknowledge at once (RFC 5681 4.2)
            } else if (++unackedSegments >= 2 || config.delayedAckNs() == 0) {
                ackNow = true; // every second full segment at once (RFC 1122 4.2.3.2)
            } else if (delayedAckAt == NEVER) {
                delayedAckAt = now + config.delayedAckNs();
            }
            events.onReadable(this);
        } else {
            outOfOrderSegments++;
            if (outOfOrder.add(at, at + len)) {
                recvBuf.writeAt(at, in.payload, off, len);
            }
            ackNow = true; // RFC 5681 4.2: out-of-order data gets an immediate (duplicate) ACK
        }
    }

    private void receiveFin(long now) {
        finReceived = true;
        rcvNxt++;
        ackNow = true;
        switch (state) {
            case SYN_RECEIVED, ESTABLISHED -> state = TcpState.CLOSE_WAIT;
            case FIN_WAIT_1 -> {
                if (finAcked()) {
                    enterTimeWait(now);
                } else {
                    state = TcpState.CLOSING;
                }
            }
            case FIN_WAIT_2 -> enterTimeWait(now);
            default -> {
            }
        }
        events.onPeerClosed(this);
    }

    private void enterTimeWait(long now) {
        state = TcpState.TIME_WAIT;
        // Our FIN is acknowledged and no data is taken from here on: the buffers' memory goes back to the
        // layer now, not after the 2*MSL wait (the receive buffer once the application has read it).
        sendBuf.release();
        recvBuf.release();
        // The owner may refuse the wait (its bound on connections in TIME-WAIT is reached, as Linux's
        // tcp_max_tw_buckets): the connection then closes 1 ns on, so the poll that sends the ACK of the
        // peer's FIN, at now, still finds it in TIME-WAIT.
        timeWaitAt = now + (events.onTimeWait(this) ? config.timeWaitNs() : 1);
        finWait2At = NEVER;
        rtoAt = NEVER;
        persistAt = NEVER;
        keepAliveAt = NEVER;
    }

    /**
     * FIN-WAIT-2 of an application that closed fully is bounded (Linux's tcp_fin_timeout; RFC 9293
     * 3.10.4 lets a half-closed connection wait there for ever, and it does).
     */
    private void startFinWait2Timer(long now) {
        long timeout = config.finWait2TimeoutNs();
        if (timeout > 0 && finWait2At == NEVER) {
            finWait2At = now + Math.min(timeout, NEVER - 1 - now); // a huge timeout saturates, never wraps
        }
    }

    private void challengeAck(long now) {
        if (challengeLimit.tryTake(now)) {
            challengeAcksSent++;
            ackNow = true;
        }
    }

    // ---- loss recovery (sender side) ---------------------------------------------------------

    /** RFC 6675 Update(): records the ACK's SACK blocks; returns the octets SACKed for the first time. */
    private int recordSack(Segment in) {
        int dataEnd = sentDataEnd();
        int added = 0;
        for (int i = 0; i < in.sackBlocks; i++) {
            int l = in.sackLeft[i];
            int r = in.sackRight[i];
            // RFC 2018, RFC 6675: only what lies above SND.UNA and was sent counts; a D-SACK (RFC
            // 2883) below SND.UNA, a block beyond SND.MAX and one claiming our FIN do not.
            if (!Seq.lt(l, r) || Seq.le(r, sndUna) || Seq.gt(r, dataEnd)) {
                continue;
            }
            added += scoreboard.add(Seq.max(l, sndUna), r);
        }
        return added;
    }

    /** One past the last data octet sent: SND.MAX, less the FIN once that was sent. */
    private int sentDataEnd() {
        return finSent ? sndMax - 1 : sndMax;
    }

    /**
     * The cumulative ACK stopped at, or inside, data the peer had SACKed: it discarded what it had
     * SACKed (reneging, RFC 2018 section 8). The scoreboard is no longer trusted (RFC 6675 5.1 keeps
     * it across a timeout only with such a check) and the retransmission timer fires at once, which
     * sends everything from SND.UNA again (as Linux's tcp_check_sack_reneging, without its delay).
     */
    private void reneged(long now) {
        scoreboard.clear();
        rtoAt = now;
    }

    /** RFC 6675 section 5 step (4): fast retransmit and entry into loss recovery. */
    private void enterSackRecovery(long now) {
        inRecovery = true;
        recover = sndMax; // (4.1) RecoveryPoint = HighData
        fastRetransmits++;
        // (4.2) cwnd and ssthresh from FlightSize, less what limited transmit sent.
        cc.onEnterRecovery(now, Math.max(0, sndMax - sndUna - limitedTransmit));
        limitedTransmit = 0;
        // (4.3) Retransmit the segment at HighACK + 1 (up to the first SACKed octet); HighRxt and
        // RescueRxt both mark its end. (4.4) and (4.5), SetPipe and step (C), run in transmit().
        int length = Math.min(maxPayload(), scoreboard.nextSackedAbove(sndUna, sentDataEnd()) - sndUna);
        highRxt = sndUna + retransmit(sndUna, length, now); // unmoved if the output refused it: NextSeg finds it
        rescueRxt = sndUna + length;
    }

    /** RFC 6582 3.2 steps 2 and 3: NewReno retransmits the first unacknowledged segment. */
    private void retransmitFirstUnacknowledged(long now) {
        retransmit(sndUna, maxPayload(), now);
    }

    /**
     * RFC 6675 NextSeg() and the sending of its segment (step (C.1) to (C.3)); returns the octets
     * sent, 0 when there is nothing to send. {@code room} is cwnd - pipe, at least one SMSS.
     */
    private int sendNextSegment(int room, long now) {
        int smss = maxPayload();
        boolean hole = scoreboard.findHole(sndUna, Seq.max(highRxt, sndUna), smss);
        // Rule 1: the first unSACKed octet above HighRxt, below the highest SACKed one, that IsLost.
        if (hole && scoreboard.holeLost()) {
            return retransmitHole(now);
        }
        // Rule 2: new data, if any and the receive window allows.
        int n = sendData(now, room);
        if (n > 0) {
            return n;
        }
        // Rule 3: as rule 1, lost or not.
        if (hole) {
            return retransmitHole(now);
        }
        // Rule 4: once per recovery, after SND.UNA passed RescueRxt, rescue the highest unSACKed
        // octets; HighRxt stays (C.2).
        if (Seq.ge(sndUna, rescueRxt)) {
            return rescue(now);
        }
        return 0;
    }

    /** NextSeg rules 1 and 3: up to one SMSS of the hole found, which moves HighRxt (C.2). */
    private int retransmitHole(long now) {
        int start = scoreboard.holeStart();
        int sent = retransmit(start, Math.min(maxPayload(), scoreboard.holeEnd() - start), now);
        if (sent > 0) {
            highRxt = start + sent;
        }
        return sent;
    }

    /**
     * NextSeg rule 4: one segment ending at the highest unSACKed octet sent, when that lies above
     * every SACKed one (a lost tail no SACK will reveal). Unsacked octets below the highest SACKed
     * one are rules 1 and 3's, which have sent them already when rule 4 is reached, so they are not
     * sent a third time.
     */
    private int rescue(long now) {
        int count = scoreboard.count();
        int from = count == 0 ? sndUna : scoreboard.right(count - 1);
        int to = sentDataEnd();
        if (!Seq.lt(from, to)) {
            return 0;
        }
        int start = Seq.max(from, to - maxPayload());
        int sent = retransmit(start, to - start, now);
        if (sent > 0) {
            rescueRxt = recover; // RescueRxt = RecoveryPoint: no second rescue in this recovery
        }
        return sent;
    }

    /** Sends {@code max} octets again from {@code seq}; returns how many left. */
    private int retransmit(int seq, int max, long now) {
        if (max <= 0) {
            return 0;
        }
        int sent = transmitFrom(seq, max, now, true);
        if (sent > 0) {
            retransmits++;
        }
        return sent;
    }

    /**
     * RFC 6675 SetPipe(): in SACK recovery, the scoreboard's count. Outside it, the unSACKed octets
     * sent: SetPipe's count whenever nothing IsLost, which holds outside recovery unless a recovery
     * may not begin yet; going back after a timeout, what lies beyond SND.NXT counts as lost (5.1).
     * Without SACK this is FlightSize (SND.NXT - SND.UNA). Package-private for tests.
     */
    int pipe() {
        if (inRecovery && sackOk) {
            return scoreboard.pipe(sndUna, sndMax, highRxt, maxPayload());
        }
        int sent = sndNxt - sndUna;
        return scoreboard.isEmpty() ? sent : sent - scoreboard.sackedBytes(sndUna, sndNxt);
    }

    // ---- output and timers -------------------------------------------------------------------

    /**
     * Runs due timers and sends what may be sent now (data within the windows, FIN, ACKs). Returns
     * the time it wants to be polled next ({@link Long#MAX_VALUE}: only when something happens).
     */
    public long poll(long now) {
        long d = pollTimers(now);
        long before = deadline;
        deadline = d;
        if (d != before) {
            events.onDeadlineMoved(this, d); // whoever called: a user call needs no touched()
        }
        return d;
    }

    /** The time the last {@link #poll} asked to be polled again. */
    public long deadline() {
        return deadline;
    }

    private long deadline;
    /** Its place in its layer's {@link TimerQueue}, -1 when not queued; the queue keeps it. */
    int timerIndex = -1;

    private long pollTimers(long now) {
        if (state == TcpState.CLOSED) {
            return NEVER;
        }
        if (now >= timeWaitAt) {
            finish(null);
            return NEVER;
        }
        if (now >= finWait2At) {
            sendRst(sndNxt, 0, false); // the peer, likely still in CLOSE-WAIT, learns it is gone
            finish(TcpError.FIN_WAIT_2_TIMEOUT);
            return NEVER;
        }
        if (config.userTimeoutNs() > 0 && unackedSince != NEVER && now - unackedSince >= config.userTimeoutNs()) {
            sendRst(sndNxt, 0, false);
            finish(TcpError.USER_TIMEOUT);
            return NEVER;
        }
        if (now >= rtoAt) {
            if (!retransmitTimeout(now)) {
                return NEVER;
            }
        }
        if (now >= delayedAckAt) {
            ackNow = true;
        }
        blockedRetryAt = NEVER; // transmit() below tries again; a new refusal sets it anew
        if (now >= persistAt) {
            probeZeroWindow(now);
        }
        if (now >= keepAliveAt && !keepAlive(now)) {
            return NEVER;
        }
        transmit(now);
        scheduleKeepAlive(now);
        return Math.min(Math.min(Math.min(rtoAt, delayedAckAt), blockedRetryAt),
                Math.min(Math.min(persistAt, keepAliveAt), Math.min(timeWaitAt, finWait2At)));
    }

    /** RFC 6298 5.4-5.7; returns false if the connection was dropped. */
    private boolean retransmitTimeout(long now) {
        boolean handshake = state == TcpState.SYN_SENT || state == TcpState.SYN_RECEIVED;
        int limit = handshake ? config.synRetries() : config.maxRetries();
        if (retries >= limit) {
            if (state.synchronizedState()) {
                sendRst(sndNxt, 0, false);
            }
            finish(TcpError.TIMED_OUT);
            return false;
        }
        retries++;
        timeouts++;
        rtt.backOff();
        timing = false; // Karn: a retransmitted segment is never timed
        if (!handshake) {
            cc.onRetransmitTimeout(now, sndMax - sndUna);
            // RFC 6675 5.1: recovery ends, RecoveryPoint = HighData, and no new recovery before
            // SND.UNA reaches it (RFC 6582 section 4 likewise). HighRxt starts over. The scoreboard
            // stays (RFC 6675 5.1, RFC 2018 erratum 1610), guarded by the reneging check.
            inRecovery = false;
            recover = sndMax;
            highRxt = sndUna;
            dupAcks = 0;
            limitedTransmit = 0;
        }
        // Go back to the first unacknowledged octet; sendData() skips what the peer SACKed (5.1:
        // "filling in" the holes it reports).
        sndNxt = sndUna;
        retransmits++;
        rtoAt = now + rtt.rto();
        return true;
    }

    private void transmit(long now) {
        if (state == TcpState.SYN_SENT || state == TcpState.SYN_RECEIVED) {
            if (sndNxt == iss) {
                sendSyn(now);
            }
            if (!ackNow || state == TcpState.SYN_SENT) {
                return;
            }
        }
        boolean sent = false;
        if (state.synchronizedState() && state != TcpState.TIME_WAIT) {
            int pipe = pipe();
            if (inRecovery && sackOk) {
                // RFC 6675 step (C): while cwnd - pipe >= 1 SMSS, NextSeg(); (C.4) pipe grows by what left.
                while (cc.cwnd() - pipe >= maxPayload()) {
                    int n = sendNextSegment(cc.cwnd() - pipe, now);
                    if (n <= 0) {
                        break;
                    }
                    pipe += n;
                    sent = true;
                }
            } else {
                while (true) {
                    int n = sendData(now, cc.cwnd() - pipe);
                    if (n <= 0) {
                        break;
                    }
                    pipe += n;
                    sent = true;
                }
            }
            if (finQueued && sndNxt == finSeq()) {
                sent |= sendFin(now); // all data out, FIN not (or, after going back, no longer)
            }
        }
        if (!sent && (ackNow || windowUpdateWorthSending() && state.synchronizedState())) {
            sendAck(now);
        }
    }

    /**
     * Sends one segment at SND.NXT: new data, or data sent before when going back after a timeout
     * (skipping what the peer SACKed), if the receive window, {@code cwndRoom} (cwnd - pipe), Nagle
     * and SWS avoidance allow; returns its length.
     */
    private int sendData(long now, int cwndRoom) {
        boolean goingBack = Seq.lt(sndNxt, sndMax);
        if (goingBack && !scoreboard.isEmpty()) {
            sndNxt = Seq.min(scoreboard.skipSacked(sndNxt), sentDataEnd()); // RFC 6675 5.1: only the holes
            goingBack = Seq.lt(sndNxt, sndMax);
        }
        int offset = sndNxt - bufSeq;
        int unsent = sendBuf.size() - offset;
        if (unsent <= 0) {
            return 0;
        }
        int inFlight = sndNxt - sndUna;
        int room = Math.min(sndWnd - inFlight, cwndRoom);
        if (sndWnd == 0 || room <= 0) {
            if (sndWnd == 0 && inFlight == 0 && persistAt == NEVER) {
                persistAt = now + rtt.rto(); // RFC 9293 3.8.6.1: probe a zero window
            }
            return 0;
        }
        int segmentMax = maxPayload();
        int n = Math.min(Math.min(unsent, segmentMax), room);
        if (goingBack) {
            // Resent data stops at the next SACKed range and is not held by Nagle; a piece cut short by
            // the windows waits while something is in flight (SWS avoidance, RFC 9293 3.8.6.2.1).
            int piece = Math.min(Math.min(unsent, segmentMax), scoreboard.nextSackedAbove(sndNxt, sndMax) - sndNxt);
            if (room < piece && inFlight > 0) {
                return 0;
            }
            return transmitFrom(sndNxt, Math.min(piece, room), now, false);
        }
        // Nagle (RFC 9293 3.7.4) and sender SWS avoidance (3.8.6.2.1): hold a small segment while data is in flight.
        if (n < segmentMax && n < unsent && n < maxSndWnd / 2) {
            return 0; // RFC 9293 3.8.6.2.1: wait for a full segment or half the largest window
        }
        if (n < segmentMax && !config.noDelay() && inFlight > 0 && !finQueued) {
            return 0;
        }
        int sent = transmitFrom(sndNxt, n, now, false);
        if (!inRecovery && dupAcks > 0) {
            limitedTransmit += sent; // RFC 6675 (3): limited transmit, left out of FlightSize at (4.2)
        }
        return sent;
    }

    /**
     * Sends up to {@code max} bytes of buffered data starting at {@code seq} (a piece that does not
     * wrap the ring); FIN rides along when it is the end and queued. Returns the bytes sent.
     */
    private int transmitFrom(int seq, int max, long now, boolean retransmission) {
        int at = seq - bufSeq;
        int n = Math.min(max, sendBuf.contiguous(at));
        if (n <= 0) {
            return 0;
        }
        Segment s = header(Segment.ACK, seq);
        s.payload = sendBuf.segment();
        s.payloadOffset = sendBuf.offsetOf(at);
        s.payloadLength = n;
        if (at + n == sendBuf.size()) {
            s.flags |= Segment.PSH | (finQueued ? Segment.FIN : 0); // FIN rides on the last data
        }
        if (!emit(s, now)) {
            return 0;
        }
        int end = seq + n + (s.has(Segment.FIN) ? 1 : 0);
        if (s.has(Segment.FIN)) {
            finSent = true;
            finState();
        }
        if (!retransmission) {
            if (Seq.gt(end, sndNxt)) {
                sndNxt = end;
            }
            if (!timing && Seq.ge(seq, sndMax)) {
                timing = true; // time this one (RFC 6298 and Karn: new data only)
                timedSeq = seq;
                timedAt = now;
            }
        } else if (timing && Seq.le(seq, timedSeq) && Seq.lt(timedSeq, end)) {
            timing = false; // Karn (RFC 6298 3): the timed segment was sent again; its ACK is ambiguous
        }
        if (Seq.gt(end, sndMax)) {
            sndMax = end;
        }
        if (rtoAt == NEVER) {
            rtoAt = now + rtt.rto();
        }
        if (unackedSince == NEVER) {
            unackedSince = now;
        }
        return n;
    }

    /** Data bytes per segment: the MSS less the options every segment carries (RFC 6691). */
    private int maxPayload() {
        return sendMss - (tsOk ? 12 : 0);
    }

    private boolean sendFin(long now) {
        Segment s = header(Segment.ACK | Segment.FIN, sndNxt);
        if (!emit(s, now)) {
            return false;
        }
        finSent = true;
        sndNxt++;
        if (Seq.gt(sndNxt, sndMax)) {
            sndMax = sndNxt;
        }
        finState();
        if (rtoAt == NEVER) {
            rtoAt = now + rtt.rto();
        }
        return true;
    }

    private void finState() {
        if (state == TcpState.ESTABLISHED) {
            state = TcpState.FIN_WAIT_1;
        } else if (state == TcpState.CLOSE_WAIT) {
            state = TcpState.LAST_ACK;
        }
    }

    private void sendSyn(long now) {
        boolean synAck = state == TcpState.SYN_RECEIVED;
        Segment s = header(synAck ? Segment.SYN | Segment.ACK : Segment.SYN, iss);
        s.mss = config.mss();
        if (synAck ? scalingOk : config.windowScaling()) {
            s.windowScale = rcvShift; // RFC 7323 2.2: a SYN-ACK carries it only if the SYN did
        }
        s.sackPermitted = config.sack() && (!synAck || sackOk);
        if (config.timestamps() && (!synAck || tsOk)) {
            s.timestamps = true;
            s.tsVal = tsValue(now);
            s.tsEcr = synAck ? tsRecent : 0;
        }
        s.window = Math.min(recvBuf.free(), 65_535); // RFC 7323 2.2: the window in a SYN is never scaled
        rcvAdvertised = rcvNxt + s.window;
        if (!emitRaw(s, now)) {
            return;
        }
        sndNxt = iss + 1;
        if (Seq.gt(sndNxt, sndMax)) {
            sndMax = sndNxt;
        }
        if (rtoAt == NEVER) {
            rtoAt = now + rtt.rto();
        }
    }

    /**
     * A pure ACK carries SND.MAX, not SND.NXT: after going back to retransmit, SND.NXT lies below
     * what the peer has already received, and an ACK numbered there would fail the peer's
     * acceptability test and be dropped unread; if both ends had gone back, each would answer the
     * other's ACK with another (an ACK storm, seen in TcpNodeTest). Linux's tcp_acceptable_seq does
     * the same.
     */
    private void sendAck(long now) {
        emit(header(Segment.ACK, ackSeq()), now);
    }

    /**
     * The sequence number of a pure ACK (Linux's tcp_acceptable_seq): SND.MAX if it lies inside the
     * peer's window, else the window's end, so that a peer whose window is zero (RCV.NXT = SND.UNA
     * here) finds the ACK exactly at RCV.NXT. Found by a stalled pipeTo echo: ACKs numbered past a
     * zero window were dropped unread, and with them the acknowledgments the peer was waiting for.
     */
    private int ackSeq() {
        int windowEnd = sndUna + sndWnd;
        // A scaled window is rounded down to a multiple of 2^shift: SND.MAX within that rounding of the
        // window's end is inside the peer's real window (Linux makes the same allowance).
        if (Seq.le(sndMax, windowEnd) || sndMax - windowEnd < (1 << sndShift)) {
            return sndMax;
        }
        return windowEnd;
    }

    private void probeZeroWindow(long now) {
        persistAt = NEVER;
        int offset = sndNxt - bufSeq;
        if (sndWnd == 0 && sendBuf.size() - offset > 0 && state.synchronizedState()) {
            // RFC 9293 3.8.6.1: one byte beyond the window; its ACK carries the window.
            transmitFrom(sndNxt, 1, now, false);
            persistBackoff = Math.min(persistBackoff + 1, 16);
            persistAt = now + Math.min(config.maxRtoNs(), rtt.rto() << persistBackoff);
        }
    }

    private void scheduleKeepAlive(long now) {
        if (config.keepAliveIdleNs() > 0 && state == TcpState.ESTABLISHED && keepAliveProbes == 0) {
            keepAliveAt = lastActivity + config.keepAliveIdleNs();
        }
    }

    /** RFC 1122 4.2.3.6: a segment with SEG.SEQ = SND.NXT - 1 and no data draws an ACK. Returns false if the connection was dropped. */
    private boolean keepAlive(long now) {
        if (state != TcpState.ESTABLISHED || config.keepAliveIdleNs() == 0) {
            keepAliveAt = NEVER;
            return true;
        }
        if (keepAliveProbes >= config.keepAliveProbes()) {
            sendRst(sndNxt, 0, false);
            finish(TcpError.KEEPALIVE);
            return false;
        }
        keepAliveProbes++;
        emit(header(Segment.ACK, ackSeq() - 1), now);
        keepAliveAt = now + config.keepAliveIntervalNs();
        return true;
    }

    /**
     * Whether opening the advertised window now moves its right edge by enough to tell the peer (RFC 9293 3.8.6.2.2).
     * Never after the peer's FIN: nothing more can come, and an update would reach a peer that may have closed
     * (its reset in answer would end this end's TIME-WAIT; Linux sends none either).
     */
    private boolean windowUpdateWorthSending() {
        if (finReceived) {
            return false;
        }
        int newRight = rcvNxt + recvBuf.free();
        int gain = newRight - rcvAdvertised;
        return gain >= Math.min(config.receiveBuffer() / 2, sendMss) && rcvAdvertised - rcvNxt < sendMss * 2;
    }

    /** The window to advertise: the free buffer, kept from shrinking the right edge, moved only in useful steps. */
    private int windowToAdvertise() {
        int free = recvBuf.free();
        int right = rcvNxt + free;
        int current = rcvAdvertised - rcvNxt;
        if (Seq.gt(right, rcvAdvertised)) {
            int gain = right - rcvAdvertised;
            // Receiver SWS avoidance: grow only by min(buffer/2, MSS) steps.
            if (gain >= Math.min(config.receiveBuffer() / 2, sendMss) || current <= 0) {
                rcvAdvertised = right;
            }
        }
        return Math.max(0, rcvAdvertised - rcvNxt);
    }

    private Segment header(int flags, int seq) {
        Segment s = tx.clear();
        s.flags = flags;
        s.seq = seq;
        s.ack = rcvNxt;
        return s;
    }

    /** Fills window and options of a non-SYN segment and sends it. */
    private boolean emit(Segment s, long now) {
        int wnd = windowToAdvertise();
        s.window = Math.min(wnd >>> rcvShift, 65_535);
        if (tsOk) {
            s.timestamps = true;
            s.tsVal = tsValue(now);
            s.tsEcr = tsRecent;
        }
        if (sackOk && !outOfOrder.isEmpty()) {
            int max = tsOk ? 3 : 4; // RFC 2018 3: 3 blocks fit beside timestamps
            if (s.payloadLength > 0) {
                // Options count against the MSS (RFC 6691): only as many blocks as the segment has room for.
                int room = sendMss - s.payloadLength - (tsOk ? 12 : 0) - 4;
                max = Math.min(max, Math.max(0, room / 8));
            }
            s.sackBlocks = max == 0 ? 0 : outOfOrder.sackBlocks(rcvNxt, s.sackLeft, s.sackRight, max);
        }
        return emitRaw(s, now);
    }

    private boolean emitRaw(Segment s, long now) {
        if (!output.transmit(this, s)) {
            blockedRetryAt = now + BLOCKED_RETRY_NS;
            return false;
        }
        if (s.has(Segment.ACK)) {
            lastAckSent = s.ack;
            ackNow = false;
            unackedSegments = 0;
            delayedAckAt = NEVER;
        }
        return true;
    }

    private long blockedRetryAt;

    /** RFC 7323 5.4: a clock of 1 ms per tick (the fastest allowed, as Linux), from a random-free base plus 1 so 0 never appears. */
    private int tsValue(long now) {
        return timestampClock(now, tsBase);
    }

    /** The timestamp clock at {@code now} of a clock whose base is {@code base}; SYN cookies read it too. */
    static int timestampClock(long now, long base) {
        return (int) ((now - base) / 1_000_000L) + 1;
    }

    private void sendRst(int seq, int ack, boolean withAck) {
        Segment s = tx.clear();
        s.flags = Segment.RST | (withAck ? Segment.ACK : 0);
        s.seq = seq;
        s.ack = ack;
        output.transmit(this, s);
    }

    private void finish(TcpError why) {
        if (state == TcpState.CLOSED) {
            return;
        }
        state = TcpState.CLOSED;
        error = why;
        sendBuf.releaseNow(); // the memory goes back to the layer's budget (what is unread stays readable)
        recvBuf.releaseNow();
        rtoAt = NEVER;
        delayedAckAt = NEVER;
        persistAt = NEVER;
        keepAliveAt = NEVER;
        timeWaitAt = NEVER;
        finWait2At = NEVER;
        events.onClosed(this, why);
        announceRelease();
    }

    private void requireState(TcpState wanted, String what) {
        if (state != wanted) {
            throw new IllegalStateException("cannot " + what + " a connection in state " + state);
        }
    }

    /** Sequence numbers of the two ends, for tests and tools. */
    public int sndUna() {
        return sndUna;
    }

    public int sndNxt() {
        return sndNxt;
    }

    public int sndMax() {
        return sndMax;
    }

    public int rcvNxt() {
        return rcvNxt;
    }

    public int sendWindow() {
        return sndWnd;
    }

    @Override
    public String toString() {
        return "TcpConnection[" + (localIp >>> 24) + "." + ((localIp >>> 16) & 255) + "." + ((localIp >>> 8) & 255) + "."
                + (localIp & 255) + ":" + localPort + " > " + (remoteIp >>> 24) + "." + ((remoteIp >>> 16) & 255) + "."
                + ((remoteIp >>> 8) & 255) + "." + (remoteIp & 255) + ":" + remotePort + " " + state + " una " + Integer.toUnsignedString(sndUna)
                + " nxt " + Integer.toUnsignedString(sndNxt) + " max " + Integer.toUnsignedString(sndMax) + " wnd " + sndWnd
                + " cwnd " + cc.cwnd() + " rcv.nxt " + Integer.toUnsignedString(rcvNxt) + " buffered " + sendBuf.size() + "]";
    }
}
