package dev.nupa.tcp.wire;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A TCP header as a value, options included, for tests and the control plane (the datapath uses
 * {@link TcpHeader} and {@link TcpOptions}). The data is not part of it: {@link #emitInto} is
 * given where the data is, and {@link #parse} reads only the header.
 *
 * <p>Absent options: {@code mss} and {@code windowScale} are -1, {@code timestamps} is null,
 * {@code sackBlocks} is empty. Unknown options and the reserved bits are not represented, so a
 * parsed and re-emitted header may differ from the received one in those, and in NOP padding.
 *
 * @param sequenceNumber all 32 bits, compared with {@link Seq}
 * @param acknowledgmentNumber all 32 bits
 * @param flags the 8 control bits, {@link TcpHeader#FIN} .. {@link TcpHeader#CWR}
 * @param window the window field as sent, not scaled
 * @param mss 0..65535, or -1 when absent
 * @param windowScale 0..14, or -1 when absent
 * @param timestamps TSval and TSecr, or null when absent
 * @param sackBlocks 0..4 blocks, the most recent first (RFC 2018 4)
 */
public record TcpRepr(int sourcePort, int destinationPort, int sequenceNumber, int acknowledgmentNumber, int flags,
        int window, int urgentPointer, int mss, int windowScale, boolean sackPermitted, Timestamps timestamps,
        List<SackBlock> sackBlocks) {

    /** The Timestamps option (RFC 7323 3.2): the sender's clock and the value it echoes. */
    public record Timestamps(int value, int echoReply) {
    }

    /** One SACK block (RFC 2018 3): {@code left} is its first sequence number, {@code right} the one after it. */
    public record SackBlock(int left, int right) {
    }

    public TcpRepr {
        check("source port", sourcePort, 0, 0xFFFF);
        check("destination port", destinationPort, 0, 0xFFFF);
        check("flags", flags, 0, 0xFF);
        check("window", window, 0, 0xFFFF);
        check("urgent pointer", urgentPointer, 0, 0xFFFF);
        check("MSS", mss, -1, 0xFFFF);
        check("window scale", windowScale, -1, TcpOptions.MAX_WINDOW_SCALE);
        sackBlocks = List.copyOf(sackBlocks);
        check("SACK block count", sackBlocks.size(), 0, TcpOptions.MAX_SACK_BLOCKS);
    }

    /** A segment without options or urgent data. */
    public TcpRepr(int sourcePort, int destinationPort, int sequenceNumber, int acknowledgmentNumber, int flags,
            int window) {
        this(sourcePort, destinationPort, sequenceNumber, acknowledgmentNumber, flags, window, 0, -1, -1, false, null,
                List.of());
    }

    private static void check(String what, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException("TCP " + what + " out of range " + min + ".." + max + ": " + value);
        }
    }

    /**
     * Reads a view that wrapped with {@link dev.nupa.ip.wire.WireStatus#OK} and the options parsed from
     * it ({@code o.parse(h)}); a window scale above 14 has already become 14 there.
     */
    public static TcpRepr parse(TcpHeader h, TcpOptions o) {
        SackBlock[] blocks = new SackBlock[o.sackBlockCount()];
        for (int i = 0; i < blocks.length; i++) {
            blocks[i] = new SackBlock(o.sackLeft(i), o.sackRight(i));
        }
        return new TcpRepr(h.sourcePort(), h.destinationPort(), h.sequenceNumber(), h.acknowledgmentNumber(),
                h.flags(), h.window(), h.urgentPointer(), o.hasMss() ? o.mss() : -1,
                o.hasWindowScale() ? o.windowScale() : -1, o.sackPermitted(),
                o.hasTimestamps() ? new Timestamps(o.tsVal(), o.tsEcr()) : null, List.of(blocks));
    }

    /** Fills {@code into} (cleared first) with this header's options. */
    public TcpOptions options(TcpOptions into) {
        into.clear();
        if (mss >= 0) {
            into.setMss(mss);
        }
        if (windowScale >= 0) {
            into.setWindowScale(windowScale);
        }
        into.setSackPermitted(sackPermitted);
        if (timestamps != null) {
            into.setTimestamps(timestamps.value(), timestamps.echoReply());
        }
        for (int i = 0; i < sackBlocks.size(); i++) {
            into.addSackBlock(sackBlocks.get(i).left(), sackBlocks.get(i).right());
        }
        return into;
    }

    /**
     * 20 plus the options as {@link TcpOptions#emit} lays them out. Above 60 the options do not fit
     * (say, timestamps with 4 SACK blocks) and emitting refuses.
     */
    public int headerLength() {
        return TcpHeader.MIN_HEADER + options(new TcpOptions()).length();
    }

    /**
     * Writes the segment at {@code offset}: header, options, then {@code payloadLength} bytes copied
     * from {@code payload} at {@code payloadOffset} (nothing is copied when they are already in
     * place; {@code payload} may be null when the length is 0). With {@code computeChecksum} false
     * the field is left 0, for links trusted not to corrupt (the lossless fabric) or that offload it.
     *
     * @throws IllegalStateException when the options need more than 40 bytes; nothing is written
     * @throws IndexOutOfBoundsException when the segment has no room; nothing is written
     */
    public void emitInto(MemorySegment seg, long offset, int srcIp, int dstIp, MemorySegment payload,
            long payloadOffset, int payloadLength, boolean computeChecksum) {
        TcpOptions o = options(new TcpOptions());
        int headerLength = TcpHeader.MIN_HEADER + o.requireFits();
        if (payloadLength < 0 || payloadLength > TcpHeader.MAX_LENGTH - headerLength) {
            throw new IllegalArgumentException("TCP payload length out of range 0.."
                    + (TcpHeader.MAX_LENGTH - headerLength) + ": " + payloadLength);
        }
        TcpHeader h = new TcpHeader();
        if (!h.wrapForWrite(seg, offset, headerLength + payloadLength)) {
            throw new IndexOutOfBoundsException("no room for a " + (headerLength + payloadLength)
                    + "-byte TCP segment at " + offset + " in " + seg.byteSize() + " bytes");
        }
        if (payloadLength > 0 && !(payload.equals(seg) && payloadOffset == offset + headerLength)) {
            MemorySegment.copy(payload, payloadOffset, seg, offset + headerLength, payloadLength);
        }
        emit(h, o, srcIp, dstIp, computeChecksum);
    }

    /**
     * Writes header and options through a view prepared with {@link TcpHeader#wrapForWrite} over
     * the whole segment, whose data is already in place after {@link #headerLength()} bytes;
     * {@code scratch} is overwritten with the options, so a caller that keeps one allocates nothing.
     */
    public void emit(TcpHeader h, TcpOptions scratch, int srcIp, int dstIp, boolean computeChecksum) {
        options(scratch);
        int headerLength = TcpHeader.MIN_HEADER + scratch.requireFits();
        scratch.emit(h.segment(), h.optionsOffset());
        h.setSourcePort(sourcePort)
                .setDestinationPort(destinationPort)
                .setSequenceNumber(sequenceNumber)
                .setAcknowledgmentNumber(acknowledgmentNumber)
                .setHeaderLength(headerLength)
                .setFlags(flags)
                .setWindow(window)
                .setChecksum(0)
                .setUrgentPointer(urgentPointer);
        if (computeChecksum) {
            h.fillChecksum(srcIp, dstIp);
        }
    }

    /**
     * tcpdump's words for the header: {@code 40000 > 5001: Flags [S.], seq 2659705077, ack
     * 3656746548, win 65483, options [mss 65495,sackOK,TS val 2812181366 ecr 174265046,nop,wscale 7]}.
     * Flags are tcpdump's letters (S SYN, F FIN, R RST, P PSH, U URG, E ECE, W CWR, "." ACK), numbers
     * unsigned; ack and urg are shown when their flag is set.
     */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        s.append(sourcePort).append(" > ").append(destinationPort).append(": Flags [").append(flagLetters(flags))
                .append("], seq ").append(Integer.toUnsignedString(sequenceNumber));
        if ((flags & TcpHeader.ACK) != 0) {
            s.append(", ack ").append(Integer.toUnsignedString(acknowledgmentNumber));
        }
        s.append(", win ").append(window);
        if ((flags & TcpHeader.URG) != 0) {
            s.append(", urg ").append(urgentPointer);
        }
        String options = options(new TcpOptions()).toString();
        if (!options.isEmpty()) {
            s.append(", options [").append(options).append(']');
        }
        return s.toString();
    }

    /** tcpdump's flag letters in its order (FIN, SYN, RST, PSH, ACK, URG, ECE, CWR), or "none". */
    static String flagLetters(int flags) {
        String letters = "FSRP.UEW";
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            if ((flags & (1 << i)) != 0) {
                s.append(letters.charAt(i));
            }
        }
        return s.isEmpty() ? "none" : s.toString();
    }
}
