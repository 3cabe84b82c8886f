package dev.nupa.tcp;

import java.lang.foreign.MemorySegment;

import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpOptions;

/**
 * One TCP segment as the connection core sees it, coming in or going out: header fields, the
 * options that matter, and where the payload is. Reused (one per direction per owner), so the
 * datapath allocates nothing. The window is the raw 16-bit field; scaling is the connection's job.
 */
public final class Segment {
    public static final int FIN = TcpHeader.FIN;
    public static final int SYN = TcpHeader.SYN;
    public static final int RST = TcpHeader.RST;
    public static final int PSH = TcpHeader.PSH;
    public static final int ACK = TcpHeader.ACK;
    public static final int URG = TcpHeader.URG;
    public static final int MAX_SACK_BLOCKS = TcpOptions.MAX_SACK_BLOCKS;

    public int flags;
    public int seq;
    public int ack;
    public int window;
    public int urgentPointer;
    /** MSS option, or -1. */
    public int mss = -1;
    /** Window scale shift option, or -1. */
    public int windowScale = -1;
    public boolean sackPermitted;
    public boolean timestamps;
    public int tsVal;
    public int tsEcr;
    public int sackBlocks;
    public final int[] sackLeft = new int[MAX_SACK_BLOCKS];
    public final int[] sackRight = new int[MAX_SACK_BLOCKS];
    /** Incoming: the payload bytes. Outgoing: null; the payload is {@link #payloadLength} bytes of the send buffer at {@link #seq}. */
    public MemorySegment payload;
    public long payloadOffset;
    public int payloadLength;
    /**
     * Incoming: the fabric node the segment came from, where the connection may send its segments straight
     * back to it (the peer's own loop of a node whose loops share one address; see {@code LoopGroup}); -1 else.
     */
    public int fromNode = -1;

    public Segment clear() {
        flags = 0;
        seq = 0;
        ack = 0;
        window = 0;
        urgentPointer = 0;
        mss = -1;
        windowScale = -1;
        sackPermitted = false;
        timestamps = false;
        tsVal = 0;
        tsEcr = 0;
        sackBlocks = 0;
        payload = null;
        payloadOffset = 0;
        payloadLength = 0;
        fromNode = -1;
        return this;
    }

    public boolean has(int flag) {
        return (flags & flag) != 0;
    }

    /** Sequence space the segment occupies: payload, plus one each for SYN and FIN (RFC 9293 3.4). */
    public int segmentLength() {
        return payloadLength + ((flags & SYN) != 0 ? 1 : 0) + ((flags & FIN) != 0 ? 1 : 0);
    }

    @Override
    public String toString() {
        StringBuilder f = new StringBuilder();
        if (has(SYN)) {
            f.append('S');
        }
        if (has(FIN)) {
            f.append('F');
        }
        if (has(RST)) {
            f.append('R');
        }
        if (has(PSH)) {
            f.append('P');
        }
        if (has(ACK)) {
            f.append('.');
        }
        StringBuilder sb = new StringBuilder("[").append(f).append("] seq ").append(Integer.toUnsignedString(seq));
        if (has(ACK)) {
            sb.append(" ack ").append(Integer.toUnsignedString(ack));
        }
        sb.append(" win ").append(window).append(" len ").append(payloadLength);
        if (mss >= 0) {
            sb.append(" mss ").append(mss);
        }
        if (windowScale >= 0) {
            sb.append(" wscale ").append(windowScale);
        }
        if (sackPermitted) {
            sb.append(" sackOK");
        }
        if (timestamps) {
            sb.append(" TS val ").append(Integer.toUnsignedString(tsVal)).append(" ecr ").append(Integer.toUnsignedString(tsEcr));
        }
        for (int i = 0; i < sackBlocks; i++) {
            sb.append(" sack ").append(Integer.toUnsignedString(sackLeft[i])).append(':')
                    .append(Integer.toUnsignedString(sackRight[i]));
        }
        return sb.toString();
    }
}
