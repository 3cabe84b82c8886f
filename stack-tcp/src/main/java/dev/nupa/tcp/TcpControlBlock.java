package dev.nupa.tcp;

/**
 * The state of one TCP connection, its transmission control block (RFC 9293 3.3.1): addresses, the
 * send and receive sequence spaces, the options agreed, buffers, loss-recovery state and
 * counters, with what every part of the connection shares: starting a life ({@link #begin}) and
 * ending it ({@link #finish}). The connection is split by concern as a chain of classes over this
 * state: {@link TcpOutput} sends, {@link TcpInput} processes arriving segments, and
 * {@link TcpConnection} is what its owner and application call; its {@link TcpTimers}, an object of
 * their own, arm and fire the timers. Only {@link TcpConnection} is ever instantiated.
 */
abstract class TcpControlBlock {
    static final TcpConnection.Events NO_EVENTS = new TcpConnection.Events() {
    };

    /** RFC 5961 section 7: at most this many challenge ACKs per second. */
    static final int CHALLENGE_ACKS_PER_SECOND = 1000;
    static final long NEVER = Long.MAX_VALUE;
    /** The least time between SYN-ACKs sent again for duplicate SYNs (Linux's tcp_invalid_ratelimit, 500 ms). */
    static final long DUP_SYN_INTERVAL_NS = 500_000_000L;
    static final long SECOND = 1_000_000_000L;
    /** RFC 7323 5.5: a timestamp older than 24 days is not trusted for PAWS. */
    static final long PAWS_IDLE_NS = 24L * 24 * 3600 * SECOND;

    // Not final: a layer reuses a closed connection's object, arrays and buffers for the next one
    // (reuse), so opening a connection allocates nothing; generation tells the lives apart.
    int localIp;
    int localPort;
    int remoteIp;
    int remotePort;
    int generation;
    TcpConfig config;
    TcpConnection.Output output;
    TcpConnection.Events events;
    /** The fabric node the peer's segments come from, learned from them; -1: where IP's route leads. */
    int via;
    final ByteRing sendBuf;
    final ByteRing recvBuf;
    Assembler outOfOrder;
    RttEstimator rtt;
    CongestionControl cc;
    final Segment tx = new Segment();
    SackScoreboard scoreboard;

    TcpState state = TcpState.CLOSED;
    /** When the opening began (our SYN, or the peer's for a passive open), and the closing (the first FIN either way). */
    long openedAt;
    long closingAt = NEVER;
    TcpError error;

    // Send sequence space (RFC 9293 3.3.1).
    int iss;
    int sndUna;
    int sndNxt;
    int sndMax;
    int sndWnd;
    int sndWl1;
    int sndWl2;
    int sndShift;
    int maxSndWnd;
    /** Sequence number of the first byte in the send buffer. */
    int bufSeq;
    boolean finQueued;
    boolean finSent;
    int sendMss;
    /** The MSS this end advertises: its config's, or the loopback interface's to the node itself ({@link TcpLayer#mssTo}). */
    int localMss;

    // Receive sequence space.
    int irs;
    int rcvNxt;
    int rcvShift;
    /** The right edge of the window last advertised: never moved left (RFC 9293 3.8.6.2.2). */
    int rcvAdvertised;
    boolean finReceived;

    // Options agreed.
    boolean tsOk;
    int tsRecent;
    long tsRecentAt;
    int lastAckSent;
    boolean sackOk;
    boolean scalingOk;
    long tsBase;
    /** The last TSval sent: the next is never less (RFC 7323 5.4). */
    int tsLastSent;

    /** Its timers: retransmission, delayed ACK, persist, keep-alive, TIME-WAIT, FIN-WAIT-2, user timeout. */
    final TcpTimers timers = new TcpTimers(self());

    // RTT timing of one segment at a time when there are no timestamps (Karn: never a retransmitted one).
    boolean timing;
    int timedSeq;
    long timedAt;

    // Loss recovery: RFC 6675 with a SACK peer, RFC 5681 and RFC 6582 NewReno without.
    /** DupAcks: with SACK, ACKs that SACKed new octets (RFC 6675 section 2); else RFC 5681's. */
    int dupAcks;
    boolean inRecovery;
    /**
     * One past the last octet sent when recovery began or the timer last expired: RFC 6582's
     * "recover" + 1 and RFC 6675's RecoveryPoint + 1 (HighData + 1).
     */
    int recover;
    /** RFC 6675 HighRxt + 1: the end of the highest retransmission of this recovery. */
    int highRxt;
    /** RFC 6675 RescueRxt + 1: rule 4 may rescue once SND.UNA reaches it. */
    int rescueRxt;
    /** New data sent by limited transmit since the last cumulative ACK (RFC 6675 (4.2): not in FlightSize). */
    int limitedTransmit;

    /** The application closed fully ({@link #close}), not only its sending side ({@link #shutdownOutput}). */
    boolean appClosed;
    /** The application let go ({@link #close} or {@link #abort}): once closed, the object may be reused. */
    boolean appReleased;
    boolean releaseAnnounced;

    boolean ackNow;
    int unackedSegments;
    long dupSynAnsweredAt;
    final ChallengeAckLimit challengeLimit = new ChallengeAckLimit();
    long lastActivity;

    // Counters of this connection (read by tools; single writer: the owner).
    long retransmits;
    long fastRetransmits;
    long timeouts;
    long challengeAcksSent;
    long pawsDrops;
    long outOfOrderSegments;
    long bufferDrops;

    /** When the last {@link TcpConnection#poll} asked to be polled again. */
    long deadline;
    /** Its place in its layer's {@link TimerQueue}, -1 when not queued; the queue keeps it. */
    int timerIndex = -1;

    TcpControlBlock(TcpConnection.Output output, ByteRing sendBuf, ByteRing recvBuf) {
        this.output = output;
        this.sendBuf = sendBuf;
        this.recvBuf = recvBuf;
    }

    /** This object as the connection it is, for the events and the output, which take the connection. */
    final TcpConnection self() {
        return (TcpConnection) this;
    }

    /** Everything a new connection starts with; the constructor and {@link #reuse} share it. */
    void begin(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, int mss, TcpConnection.Events events) {
        this.localMss = mss;
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
            cc = CongestionControls.create(config.congestionControl(), localMss);
        } else {
            cc.reset(localMss, CongestionControls.initialWindow(localMss));
        }
        tx.clear();
        state = TcpState.CLOSED;
        error = null;
        openedAt = 0;
        closingAt = NEVER;
        iss = sndUna = sndNxt = sndMax = sndWnd = sndWl1 = sndWl2 = sndShift = maxSndWnd = bufSeq = 0;
        finQueued = finSent = false;
        sendMss = Math.min(536, localMss); // RFC 9293 3.7.1: 536 until the peer says otherwise
        irs = rcvNxt = rcvShift = rcvAdvertised = 0;
        finReceived = false;
        tsOk = sackOk = scalingOk = false;
        tsRecent = lastAckSent = 0;
        tsRecentAt = tsBase = 0;
        tsLastSent = 0;
        timers.clear();
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
        deadline = NEVER;
        timerIndex = -1;
    }

    void finish(TcpError why) {
        if (state == TcpState.CLOSED) {
            return;
        }
        state = TcpState.CLOSED;
        error = why;
        sendBuf.discard(); // nothing will be sent: its memory goes back now, not when this connection is reused
        recvBuf.releaseNow(); // the memory goes back to the layer's budget (what is unread stays readable)
        timers.stopAll();
        events.onClosed(self(), why);
        announceRelease();
    }

    /** {@link Events#onReleased}, once, when the connection is both closed and let go of by its application. */
    void announceRelease() {
        if (appReleased && state == TcpState.CLOSED && !releaseAnnounced) {
            releaseAnnounced = true;
            events.onReleased(self());
        }
    }
}
