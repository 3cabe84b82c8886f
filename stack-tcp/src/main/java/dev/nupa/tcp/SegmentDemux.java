package dev.nupa.tcp;

import dev.nupa.device.Trace;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.LoopGroup;
import dev.nupa.ip.wire.IcmpHeader;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;
import dev.nupa.tcp.wire.Seq;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpOptions;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The receiving of a layer's segments: checks and parses a segment, then finds what it is for, as Linux's
 * tcp_v4_rcv: its connection by (remote address, remote port, local port), else another loop of the node
 * ({@link LoopHandOff#handOn}), else a four-tuple waiting in TIME-WAIT as a record ({@link TimeWaitTable}), else
 * a listener ({@link ListenerHandshake}), else nothing, which a reset answers (RFC 9293 3.10.7.1). ICMP errors
 * about the layer's segments find their connection the same way (Linux's tcp_v4_err). Datapath thread; a
 * segment for a connection allocates nothing.
 */
final class SegmentDemux {
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final TcpLayer layer;
    private final Ipv4Stack ip;
    private final LoopGroup group;
    private final ConnectionTable table;
    private final TcpLayer.Listener[] listeners;
    private final TimeWaitTable timeWaitRecords;
    private final ConnectionPool pool;
    private final LoopHandOff loopHandOff;
    private final SegmentSender sender;
    private final ListenerHandshake handshake;
    /** RFC 5961 section 7 for the TIME-WAIT records, layer-wide. */
    private final ChallengeAckLimit challengeLimit = new ChallengeAckLimit();
    private final TcpHeader rxHeader = new TcpHeader();
    private final TcpOptions rxOptions = new TcpOptions();
    private final Segment rx = new Segment();
    /** An answer without a connection: a reset, or a TIME-WAIT record's ACK. */
    private final Segment answer = new Segment();
    /** The local address of the segment being received: answers without a connection leave from it. */
    private int rxLocalIp;

    SegmentDemux(TcpLayer layer, TcpLayer.Listener[] listeners) {
        this.layer = layer;
        this.ip = layer.ip();
        this.group = ip.loopGroup();
        this.table = layer.table;
        this.listeners = listeners;
        this.timeWaitRecords = layer.timeWaitRecords;
        this.pool = layer.pool;
        this.loopHandOff = layer.loopHandOff;
        this.sender = layer.sender;
        this.handshake = new ListenerHandshake(layer);
    }

    /** An ICMP error about a segment this layer sent; see {@link TcpLayer#onIcmpError}. */
    void onIcmpError(int type, int code, int info, Ipv4Header quoted, long now) {
        MemorySegment s = quoted.segment();
        long p = quoted.payloadOffset();
        int localPort = s.get(BE_SHORT, p) & 0xFFFF;
        int remotePort = s.get(BE_SHORT, p + 2) & 0xFFFF;
        int seq = s.get(BE_INT, p + 4);
        TcpConnection c = table.get(ConnectionTable.key(quoted.destinationAddress(), remotePort, localPort));
        if (c == null || c.localIp() != quoted.sourceAddress()) {
            layer.count(TcpCounter.ICMP_ERRORS_IGNORED);
            return;
        }
        if (Seq.lt(seq, c.sndUna()) || Seq.gt(seq, c.sndNxt())) {
            layer.count(TcpCounter.ICMP_OUT_OF_WINDOW);
            return;
        }
        TcpError error = type == IcmpHeader.TYPE_DESTINATION_UNREACHABLE ? TcpError.forUnreachable(code) : null;
        TcpState st = c.state();
        if (error == null || st != TcpState.SYN_SENT && st != TcpState.SYN_RECEIVED) {
            layer.count(TcpCounter.ICMP_ERRORS_IGNORED);
            return;
        }
        layer.count(TcpCounter.ICMP_ABORTS);
        c.hardError(error);
    }

    /** A segment IP received for this node ({@link TcpLayer#onDatagram}). */
    void receive(Ipv4Header iph, long now) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.TCP_IN);
        }
        if (pool.hasReleased()) {
            pool.recycleReleased();
        }
        if (loopHandOff.hasArrivals()) {
            loopHandOff.adoptArrivals();
        }
        layer.count(TcpCounter.SEGMENTS_IN);
        TcpHeader h = rxHeader;
        int status = h.wrap(iph.segment(), iph.payloadOffset(), iph.payloadLength(), iph.sourceAddress(),
                iph.destinationAddress(), ip.config().verifiesFrom(iph.sourceAddress()));
        if (status != WireStatus.OK) {
            layer.count(status == WireStatus.BAD_CHECKSUM ? TcpCounter.BAD_CHECKSUMS : TcpCounter.BAD_SEGMENTS);
            return;
        }
        if (!ip.isLocal(iph.destinationAddress())) {
            return; // RFC 1122 4.2.3.10: no TCP to broadcast or multicast addresses
        }
        rxLocalIp = iph.destinationAddress(); // the fabric address, or a gateway's Ethernet one
        Segment s = rx.clear();
        s.flags = h.flags() & 0x3F;
        s.seq = h.sequenceNumber();
        s.ack = h.acknowledgmentNumber();
        s.window = h.window();
        s.urgentPointer = h.urgentPointer();
        s.payload = h.segment();
        s.payloadOffset = h.payloadOffset();
        s.payloadLength = h.payloadLength();
        TcpOptions o = rxOptions.clear();
        o.parse(h); // a malformed option ends the options, not the segment (as Linux)
        s.mss = o.hasMss() ? o.mss() : -1;
        s.windowScale = o.hasWindowScale() ? o.windowScale() : -1;
        s.sackPermitted = o.sackPermitted();
        if (o.hasTimestamps()) {
            s.timestamps = true;
            s.tsVal = o.tsVal();
            s.tsEcr = o.tsEcr();
        }
        s.sackBlocks = Math.min(o.sackBlockCount(), Segment.MAX_SACK_BLOCKS);
        for (int i = 0; i < s.sackBlocks; i++) {
            s.sackLeft[i] = o.sackLeft(i);
            s.sackRight[i] = o.sackRight(i);
        }
        int remoteIp = iph.sourceAddress();
        int remotePort = h.sourcePort();
        int localPort = h.destinationPort();
        long key = ConnectionTable.key(remoteIp, remotePort, localPort);
        TcpConnection c = table.get(key);
        TcpLayer.Listener l = listeners[localPort];
        if (l != null && l.localIp != 0 && l.localIp != iph.destinationAddress()) {
            l = null; // bound to another of the node's addresses: as if nothing listened here (a reset answers a SYN)
        }
        int from = ip.receivedFrom();
        s.fromNode = c != null && from == c.via() || learnable(from) ? from : -1;
        if (c == null && loopHandOff.handOn(key, localPort, l != null, iph)) {
            return;
        }
        // A segment that may complete a handshake answered with a SYN cookie (RFC 4987 3.6).
        boolean cookieAck = l != null && s.has(Segment.ACK) && !s.has(Segment.SYN) && !s.has(Segment.RST);
        if (c != null) {
            if (cookieAck && c.state() == TcpState.SYN_RECEIVED && !c.completesHandshake(s.ack)
                    && handshake.acceptCookie(l, rxLocalIp, remoteIp, remotePort, s, now, c)) {
                // The peer's SYN was answered twice: with a cookie while the backlog was full, then (a
                // retransmitted copy) with state. It took the cookie SYN-ACK; the ACK proves it, so the
                // cookie wins, where a reset (RFC 9293 3.10.7.4) would kill a connection the peer has established.
                return;
            }
            c.onSegment(s, now);
            if (c.waitsReleased() && ((ConnectionHooks) c.events()).waiting) { // not one past the bound: that one ends now
                toTimeWaitRecord(c, now);
            }
            return;
        }
        int record = timeWaitRecords.size() > 0 ? timeWaitRecords.find(key) : -1;
        if (record >= 0 && timeWaitSegment(record, l, remoteIp, remotePort, localPort, s, now)) {
            return;
        }
        if (l != null && !s.has(Segment.RST)) {
            if (s.has(Segment.ACK)) {
                if (cookieAck && handshake.acceptCookie(l, rxLocalIp, remoteIp, remotePort, s, now, null)) {
                    return;
                }
                reset(remoteIp, remotePort, localPort, s); // RFC 9293 3.10.7.2: an ACK to a listener
                return;
            }
            if (s.has(Segment.SYN)) {
                handshake.syn(l, rxLocalIp, remoteIp, remotePort, s, now);
            }
            return;
        }
        layer.count(TcpCounter.NO_CONNECTION);
        reset(remoteIp, remotePort, localPort, s);
    }

    /**
     * Whether the connection may send straight back to fabric node {@code from}, not one of this node's loops
     * handing a segment on: the peer's own node when its address is on-link, or, for a peer beyond a router, the
     * router's node that forwarded the segment. A gateway of several loops forwards each flow from the loop whose
     * TAP queue Linux chose; answering through that loop keeps the flow on one loop and one queue both ways.
     */
    private boolean learnable(int from) {
        return from >= 0 && !group.isLoop(from);
    }

    /** A connection that waits in TIME-WAIT, let go of by its application, goes on waiting as a record; its object is reused. */
    private void toTimeWaitRecord(TcpConnection c, long now) {
        long key = ConnectionTable.key(c.remoteIp(), c.remotePort(), c.localPort());
        loopHandOff.forget(key);
        c.moveToTimeWaitRecord(timeWaitRecords, key);
        layer.count(TcpCounter.TIME_WAIT_RECORDS);
        layer.deadlineMoved(timeWaitRecords.nextExpiry());
    }

    /**
     * A segment for a four-tuple waiting in TIME-WAIT as record {@code r}, answered as the connection would
     * ({@link TimeWaitTable#answer}). Returns false, with the record gone, when it is a SYN that opens a new
     * connection for the listener to take.
     */
    private boolean timeWaitSegment(int r, TcpLayer.Listener l, int remoteIp, int remotePort, int localPort, Segment s,
            long now) {
        int a = timeWaitRecords.answer(r, s, l != null, challengeLimit, now, answer.clear());
        if (a == TimeWaitTable.REOPEN) {
            layer.count(TcpCounter.TIME_WAIT_REOPENED);
            return false;
        }
        if (a == TimeWaitTable.ACK) {
            sender.send(-1, rxLocalIp, remoteIp, remotePort, localPort, answer);
        }
        return true;
    }

    /** RFC 9293 3.10.7.1: the reset for a segment that reached no connection (never for a reset). */
    private void reset(int remoteIp, int remotePort, int localPort, Segment in) {
        if (in.has(Segment.RST)) {
            return;
        }
        Segment out = answer.clear();
        if (in.has(Segment.ACK)) {
            out.flags = Segment.RST;
            out.seq = in.ack;
        } else {
            out.flags = Segment.RST | Segment.ACK;
            out.seq = 0;
            out.ack = in.seq + in.segmentLength();
        }
        layer.count(TcpCounter.RESETS_SENT);
        sender.send(-1, rxLocalIp, remoteIp, remotePort, localPort, out);
    }
}
