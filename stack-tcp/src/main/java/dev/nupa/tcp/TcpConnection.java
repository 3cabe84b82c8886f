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
 *
 * <p>Its parts, one concern a file, as a chain of classes over one state: {@link TcpControlBlock}
 * (the state, RFC 9293 3.3.1), {@link TcpOutput} (sending, loss recovery's sending side),
 * {@link TcpInput} (segment arrival, RFC 9293 3.10.7), and this class, what the owner and the
 * application call: opening, reading and writing, closing; beside them, held by the state,
 * {@link TcpTimers} (arming, firing and backing off every timer, as Linux's tcp_timer.c).
 */
public final class TcpConnection extends TcpInput {
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

        /** A round-trip time measured (RFC 6298: one timed segment per round trip), in nanoseconds. */
        default void onRttSample(TcpConnection c, long ns) {
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

    public TcpConnection(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, Output output,
                         Events events) {
        this(localIp, localPort, remoteIp, remotePort, config, config.mss(), output, events, BufferBudget.UNLIMITED);
    }

    /** A connection advertising {@code mss} ({@link TcpLayer#mssTo}) whose buffers count against {@code budget} (its layer's). */
    TcpConnection(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, int mss, Output output,
                  Events events, BufferBudget budget) {
        super(output, new ByteRing(config.sendBuffer(), budget, true), new ByteRing(config.receiveBuffer(), budget));
        begin(localIp, localPort, remoteIp, remotePort, config, mss, events);
    }

    /**
     * Makes this closed and released object a new connection, in CLOSED as a new one is; its layer calls
     * it. The generation moves on, so a holder of the old connection that checks it ({@link #generation})
     * finds out instead of acting on the new one.
     */
    void reuse(int localIp, int localPort, int remoteIp, int remotePort, TcpConfig config, int mss, Events events) {
        if (state != TcpState.CLOSED || !appReleased) {
            throw new IllegalStateException("a TCP connection is reused only once closed and released, not " + this);
        }
        generation++;
        sendBuf.reset(config.sendBuffer());
        recvBuf.reset(config.receiveBuffer());
        begin(localIp, localPort, remoteIp, remotePort, config, mss, events);
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
        tsLastSent = timestampClock(now, tsBase); // the SYN-ACK's clock, anywhere in its 32 bits: no TSval below it
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
        openedAt = now;
        this.iss = iss;
        sndUna = iss;
        sndNxt = iss;
        sndMax = iss;
        bufSeq = iss + 1;
        recover = iss;
        rcvShift = config.windowScaling() ? config.receiveWindowShift() : 0;
        tsBase = now;
        tsLastSent = 0; // the clock starts at 1
        lastActivity = now;
        cc.reset(sendMss, CongestionControls.initialWindow(sendMss));
    }

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

    /**
     * Whether the send buffer has its memory, taken now if the layer's bound allows: false means a write would
     * throw {@link BufferUnavailableException}, so a writer can wait without the cost of the exception.
     */
    public boolean sendBufferReady() {
        return finQueued || sendBuf.reserve();
    }

    /** Whether the layer's bound could ever give the send buffer its memory (false: waiting cannot help). */
    public boolean sendBufferFitsBound() {
        return sendBuf.couldEverFit();
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
        if (recvBuf.size() > 0 && state != TcpState.CLOSED && state != TcpState.TIME_WAIT) {
            // RFC 1122 4.2.2.13, RFC 9293 3.10.4: a close that leaves received data unread resets the connection,
            // so the peer learns at once that its data went nowhere (Linux's tcp_close, TCPAbortOnClose).
            sendRst(sndNxt, 0, false);
            finish(TcpError.CLOSED_WITH_UNREAD_DATA);
            announceRelease();
            return;
        }
        if (state == TcpState.FIN_WAIT_2) {
            timers.startFinWait2(now);
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

    /** Ends a connection still opening on a hard ICMP error (RFC 1122 4.2.3.9): no reset, the peer never answered. */
    void hardError(TcpError why) {
        finish(why);
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

    /**
     * Whether it waits in TIME-WAIT, its application let go of it and no ACK is owed: its layer may keep a record
     * instead. An ACK that met a full ring stays with the connection, which sends it again shortly; a record would not.
     */
    boolean waitsReleased() {
        return state == TcpState.TIME_WAIT && appReleased && !ackNow && !timers.ackOwed();
    }

    /**
     * Leaves TIME-WAIT to a record in {@code table} under {@code key} (its layer's), with what an answer to a
     * stray segment needs, and closes: the object is free for another connection. Only once {@link #waitsReleased}:
     * no ACK is owed. Returns the record's slot.
     */
    int moveToTimeWaitRecord(TimeWaitTable table, long key) {
        int wnd = Math.min(Math.max(0, rcvAdvertised - rcvNxt) >>> rcvShift, 65_535);
        int slot = table.add(key, sndNxt, rcvNxt, wnd, tsOk, tsRecent, tsBase, timers.timeWaitEnds(),
                config.timeWaitNs());
        finish(null);
        return slot;
    }

    /** Its layer lets go of a connection no application ever had (a handshake that failed before it was accepted). */
    void releaseUnclaimed() {
        appReleased = true;
        announceRelease();
    }

    /**
     * Drops a SYN-RECEIVED connection without a word to the peer: the peer completed the handshake with
     * a SYN cookie sent for an earlier copy of its SYN (TcpLayer), so this one will never be acknowledged.
     */
    void supersede() {
        finish(TcpError.SUPERSEDED);
    }

    /** Processes one incoming segment. Hostile or stale segments are dropped (and maybe answered), never thrown on. */
    public void onSegment(Segment in, long now) {
        lastActivity = now;
        timers.peerHeard();
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

    /**
     * Runs due timers and sends what may be sent now (data within the windows, FIN, ACKs). Returns
     * the time it wants to be polled next ({@link Long#MAX_VALUE}: only when something happens).
     */
    public long poll(long now) {
        long d = timers.poll(now);
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
