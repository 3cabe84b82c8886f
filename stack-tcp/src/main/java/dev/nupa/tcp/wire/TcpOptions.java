package dev.nupa.tcp.wire;

import static dev.nupa.tcp.wire.TcpHeader.BE_INT;
import static dev.nupa.tcp.wire.TcpHeader.BE_SHORT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The TCP options of one segment, as a reusable mutable holder: {@link #parse} fills it from the
 * option bytes of a received header, the setters fill it for sending, and {@link #emit} writes it.
 * Neither parsing nor emitting allocates, so one instance serves every segment of a datapath loop.
 *
 * <p>Known options: Maximum Segment Size (RFC 9293 3.2, kind 2), Window Scale (RFC 7323 2, kind 3),
 * SACK-Permitted and SACK (RFC 2018, kinds 4 and 5), Timestamps (RFC 7323 3, kind 8), and End of
 * Option List (0) and No-Operation (1). Other kinds are skipped by their length: RFC 9293 3.1
 * says a TCP implementation must receive an option in any segment (MUST-4) and ignore without
 * error one it does not implement, given that it has a length field (MUST-6).
 *
 * <p>A malformed option stops parsing and {@link #parse} says why ({@link OptionStatus}); what was
 * parsed before it is kept, and the segment itself is still processed. Linux does the same for an
 * option whose length is below 2 or runs past the end; for a known kind of the wrong length Linux
 * ignores just that option and goes on, where this parser stops: a sender that gets a fixed length
 * wrong is broken, and what it put after is not trusted either. Repeated options: the last wins,
 * as in Linux.
 */
public final class TcpOptions {
    /** The data offset leaves at most 40 bytes for options (RFC 9293 3.1). */
    public static final int MAX_LENGTH = TcpHeader.MAX_HEADER - TcpHeader.MIN_HEADER;
    /** A SACK option holds at most 4 blocks: 2 + 8 * 4 = 34 of the 40 bytes (RFC 2018 3). */
    public static final int MAX_SACK_BLOCKS = 4;
    /** RFC 7323 2.3: a shift above 14 is logged and used as 14, so windows stay below 2^30. */
    public static final int MAX_WINDOW_SCALE = 14;

    public static final int KIND_EOL = 0;
    public static final int KIND_NOP = 1;
    public static final int KIND_MSS = 2;
    public static final int KIND_WINDOW_SCALE = 3;
    public static final int KIND_SACK_PERMITTED = 4;
    public static final int KIND_SACK = 5;
    public static final int KIND_TIMESTAMPS = 8;

    static final int LENGTH_MSS = 4;
    static final int LENGTH_WINDOW_SCALE = 3;
    static final int LENGTH_SACK_PERMITTED = 2;
    static final int LENGTH_TIMESTAMPS = 10;
    static final int LENGTH_SACK_BASE = 2;
    static final int LENGTH_SACK_BLOCK = 8;

    private boolean hasMss;
    private int mss;
    private boolean hasWindowScale;
    private int windowScale;
    private boolean sackPermitted;
    private boolean hasTimestamps;
    private int tsVal;
    private int tsEcr;
    private int sackBlocks;
    private final int[] sackLeft = new int[MAX_SACK_BLOCKS];
    private final int[] sackRight = new int[MAX_SACK_BLOCKS];
    private int parsedLength;

    /** Forgets every option. */
    public TcpOptions clear() {
        hasMss = false;
        mss = 0;
        hasWindowScale = false;
        windowScale = 0;
        sackPermitted = false;
        hasTimestamps = false;
        tsVal = 0;
        tsEcr = 0;
        sackBlocks = 0;
        for (int i = 0; i < MAX_SACK_BLOCKS; i++) {
            sackLeft[i] = 0;
            sackRight[i] = 0;
        }
        parsedLength = 0;
        return this;
    }

    /** Parses the options of a header that wrapped with {@link dev.nupa.ip.wire.WireStatus#OK}. */
    public int parse(TcpHeader h) {
        return parse(h.segment(), h.optionsOffset(), h.optionsLength());
    }

    /**
     * Clears this holder, then reads the options in {@code length} bytes at {@code offset}. Stops at
     * End of Option List (what follows is padding, RFC 9293 3.1) or at the first malformed option,
     * keeping what came before. Never throws: a range outside the segment parses nothing.
     *
     * @return an {@link OptionStatus} code
     */
    public int parse(MemorySegment seg, long offset, int length) {
        clear();
        if (offset < 0 || length < 0 || offset > seg.byteSize() - length) {
            return OptionStatus.TRUNCATED;
        }
        int i = 0;
        while (i < length) {
            int kind = u8(seg, offset + i);
            if (kind == KIND_EOL) {
                break;
            }
            if (kind == KIND_NOP) {
                i++;
                continue;
            }
            // RFC 9293 3.1: every other option is kind, length (counting both bytes) and data.
            if (length - i < 2) {
                return stop(i, OptionStatus.TRUNCATED);
            }
            int size = u8(seg, offset + i + 1);
            if (size < 2) {
                return stop(i, OptionStatus.BAD_LENGTH);
            }
            if (size > length - i) {
                return stop(i, OptionStatus.TRUNCATED);
            }
            long at = offset + i + 2;
            switch (kind) {
                case KIND_MSS -> {
                    if (size != LENGTH_MSS) {
                        return stop(i, OptionStatus.WRONG_LENGTH);
                    }
                    hasMss = true;
                    mss = seg.get(BE_SHORT, at) & 0xFFFF;
                }
                case KIND_WINDOW_SCALE -> {
                    if (size != LENGTH_WINDOW_SCALE) {
                        return stop(i, OptionStatus.WRONG_LENGTH);
                    }
                    hasWindowScale = true;
                    windowScale = Math.min(u8(seg, at), MAX_WINDOW_SCALE);
                }
                case KIND_SACK_PERMITTED -> {
                    if (size != LENGTH_SACK_PERMITTED) {
                        return stop(i, OptionStatus.WRONG_LENGTH);
                    }
                    sackPermitted = true;
                }
                case KIND_SACK -> {
                    int blocks = (size - LENGTH_SACK_BASE) / LENGTH_SACK_BLOCK;
                    if (blocks < 1 || blocks > MAX_SACK_BLOCKS || (size - LENGTH_SACK_BASE) % LENGTH_SACK_BLOCK != 0) {
                        return stop(i, OptionStatus.WRONG_LENGTH);
                    }
                    sackBlocks = blocks;
                    for (int b = 0; b < blocks; b++) {
                        sackLeft[b] = seg.get(BE_INT, at + b * LENGTH_SACK_BLOCK);
                        sackRight[b] = seg.get(BE_INT, at + b * LENGTH_SACK_BLOCK + 4);
                    }
                    for (int b = blocks; b < MAX_SACK_BLOCKS; b++) {
                        sackLeft[b] = 0;
                        sackRight[b] = 0;
                    }
                }
                case KIND_TIMESTAMPS -> {
                    if (size != LENGTH_TIMESTAMPS) {
                        return stop(i, OptionStatus.WRONG_LENGTH);
                    }
                    hasTimestamps = true;
                    tsVal = seg.get(BE_INT, at);
                    tsEcr = seg.get(BE_INT, at + 4);
                }
                default -> {
                    // Unknown kind: skipped by its length (RFC 9293 3.1, MUST-6).
                }
            }
            i += size;
        }
        parsedLength = i;
        return OptionStatus.OK;
    }

    private int stop(int at, int status) {
        parsedLength = at;
        return status;
    }

    /**
     * Where parsing stopped, in bytes from the start of the options: at End of Option List, at the
     * malformed option, or at the end. Everything before it was well formed.
     */
    public int parsedLength() {
        return parsedLength;
    }

    public boolean hasMss() {
        return hasMss;
    }

    /** The MSS the sender can receive (RFC 9293 3.7.1), valid when {@link #hasMss()}. */
    public int mss() {
        return mss;
    }

    public boolean hasWindowScale() {
        return hasWindowScale;
    }

    /** The shift count, 0..14 (a larger one received is used as 14, RFC 7323 2.3). */
    public int windowScale() {
        return windowScale;
    }

    public boolean sackPermitted() {
        return sackPermitted;
    }

    public boolean hasTimestamps() {
        return hasTimestamps;
    }

    /** TSval, all 32 bits, valid when {@link #hasTimestamps()} (RFC 7323 3.2). */
    public int tsVal() {
        return tsVal;
    }

    /** TSecr, all 32 bits, valid when {@link #hasTimestamps()} (RFC 7323 3.2). */
    public int tsEcr() {
        return tsEcr;
    }

    public boolean hasSackBlocks() {
        return sackBlocks > 0;
    }

    /** SACK blocks, 0..4, in the order sent (the most recent first, RFC 2018 4). */
    public int sackBlockCount() {
        return sackBlocks;
    }

    /** The left edge of block {@code i}: the first sequence number of the block. */
    public int sackLeft(int i) {
        return sackLeft[Objects.checkIndex(i, sackBlocks)];
    }

    /** The right edge of block {@code i}: the sequence number just after the block. */
    public int sackRight(int i) {
        return sackRight[Objects.checkIndex(i, sackBlocks)];
    }

    // Setters for sending. Values are checked: a wrong one is a bug of the caller, never of input.

    /** MSS 0..65535 (RFC 9293 3.7.1; sent only in a SYN). */
    public TcpOptions setMss(int mss) {
        if (mss < 0 || mss > 0xFFFF) {
            throw new IllegalArgumentException("TCP MSS must be 0..65535: " + mss);
        }
        this.hasMss = true;
        this.mss = mss;
        return this;
    }

    /** Shift 0..14: RFC 7323 2.3 forbids sending more. */
    public TcpOptions setWindowScale(int shift) {
        if (shift < 0 || shift > MAX_WINDOW_SCALE) {
            throw new IllegalArgumentException("TCP window scale must be 0.." + MAX_WINDOW_SCALE + ": " + shift);
        }
        this.hasWindowScale = true;
        this.windowScale = shift;
        return this;
    }

    public TcpOptions setSackPermitted(boolean permitted) {
        this.sackPermitted = permitted;
        return this;
    }

    public TcpOptions setTimestamps(int tsVal, int tsEcr) {
        this.hasTimestamps = true;
        this.tsVal = tsVal;
        this.tsEcr = tsEcr;
        return this;
    }

    /** Adds a block after those already there; at most 4 (RFC 2018 3). */
    public TcpOptions addSackBlock(int left, int right) {
        if (sackBlocks == MAX_SACK_BLOCKS) {
            throw new IllegalStateException("a TCP SACK option holds at most " + MAX_SACK_BLOCKS + " blocks");
        }
        sackLeft[sackBlocks] = left;
        sackRight[sackBlocks] = right;
        sackBlocks++;
        return this;
    }

    public TcpOptions clearMss() {
        hasMss = false;
        mss = 0;
        return this;
    }

    public TcpOptions clearWindowScale() {
        hasWindowScale = false;
        windowScale = 0;
        return this;
    }

    public TcpOptions clearTimestamps() {
        hasTimestamps = false;
        tsVal = 0;
        tsEcr = 0;
        return this;
    }

    public TcpOptions clearSackBlocks() {
        for (int i = 0; i < sackBlocks; i++) {
            sackLeft[i] = 0;
            sackRight[i] = 0;
        }
        sackBlocks = 0;
        return this;
    }

    /** Makes this holder equal to {@code other}. */
    public TcpOptions copyFrom(TcpOptions other) {
        hasMss = other.hasMss;
        mss = other.mss;
        hasWindowScale = other.hasWindowScale;
        windowScale = other.windowScale;
        sackPermitted = other.sackPermitted;
        hasTimestamps = other.hasTimestamps;
        tsVal = other.tsVal;
        tsEcr = other.tsEcr;
        sackBlocks = other.sackBlocks;
        System.arraycopy(other.sackLeft, 0, sackLeft, 0, MAX_SACK_BLOCKS);
        System.arraycopy(other.sackRight, 0, sackRight, 0, MAX_SACK_BLOCKS);
        parsedLength = other.parsedLength;
        return this;
    }

    /**
     * The bytes {@link #emit} writes, a multiple of 4 (it may exceed {@link #MAX_LENGTH}, and emit
     * then refuses). Each option takes whole 32-bit words, NOPs in front, as Linux lays them out:
     * MSS 4; timestamps 12 (SACK-permitted rides in front of them instead of two NOPs); SACK-permitted
     * without timestamps 4; window scale 4; SACK 4 + 8 per block.
     */
    public int length() {
        int n = 0;
        if (hasMss) {
            n += 4;
        }
        if (hasTimestamps) {
            n += 12;
        } else if (sackPermitted) {
            n += 4;
        }
        if (hasWindowScale) {
            n += 4;
        }
        if (sackBlocks > 0) {
            n += 4 + LENGTH_SACK_BLOCK * sackBlocks;
        }
        return n;
    }

    /**
     * Writes the options at {@code offset} in the order of Linux's {@code tcp_options_write}, so a
     * capture looks familiar: MSS, SACK-permitted, timestamps, NOP and window scale in a SYN
     * ({@code 0204xxxx 0402080a <tsval> <tsecr> 01030307}), then SACK blocks. Every option is
     * padded with NOPs in front to a 32-bit boundary, so the result needs no trailing padding and
     * the 32-bit fields are aligned (RFC 7323 appendix A suggests this layout for timestamps).
     *
     * @return the bytes written, {@link #length()}
     * @throws IllegalStateException when the options need more than 40 bytes; nothing is written
     * @throws IndexOutOfBoundsException when they do not fit in the segment; nothing is written
     */
    public int emit(MemorySegment seg, long offset) {
        int n = requireFits();
        Objects.checkFromIndexSize(offset, n, seg.byteSize());
        long at = offset;
        if (hasMss) {
            at = word(seg, at, KIND_MSS << 24 | LENGTH_MSS << 16 | mss);
        }
        if (hasTimestamps) {
            int lead = sackPermitted ? KIND_SACK_PERMITTED << 8 | LENGTH_SACK_PERMITTED : KIND_NOP << 8 | KIND_NOP;
            at = word(seg, at, lead << 16 | KIND_TIMESTAMPS << 8 | LENGTH_TIMESTAMPS);
            at = word(seg, at, tsVal);
            at = word(seg, at, tsEcr);
        } else if (sackPermitted) {
            at = word(seg, at, KIND_NOP << 24 | KIND_NOP << 16 | KIND_SACK_PERMITTED << 8 | LENGTH_SACK_PERMITTED);
        }
        if (hasWindowScale) {
            at = word(seg, at, KIND_NOP << 24 | KIND_WINDOW_SCALE << 16 | LENGTH_WINDOW_SCALE << 8 | windowScale);
        }
        if (sackBlocks > 0) {
            int size = LENGTH_SACK_BASE + LENGTH_SACK_BLOCK * sackBlocks;
            at = word(seg, at, KIND_NOP << 24 | KIND_NOP << 16 | KIND_SACK << 8 | size);
            for (int b = 0; b < sackBlocks; b++) {
                at = word(seg, at, sackLeft[b]);
                at = word(seg, at, sackRight[b]);
            }
        }
        return n;
    }

    /** {@link #length()}, or IllegalStateException naming the options when they exceed 40 bytes. */
    int requireFits() {
        int n = length();
        if (n > MAX_LENGTH) {
            throw new IllegalStateException("TCP options need " + n + " bytes (" + describeSizes()
                    + "), at most " + MAX_LENGTH + " fit in a header");
        }
        return n;
    }

    private String describeSizes() {
        StringBuilder s = new StringBuilder();
        if (hasMss) {
            s.append("MSS 4, ");
        }
        if (hasTimestamps) {
            s.append(sackPermitted ? "SACK-permitted and timestamps 12, " : "timestamps 12, ");
        } else if (sackPermitted) {
            s.append("SACK-permitted 4, ");
        }
        if (hasWindowScale) {
            s.append("window scale 4, ");
        }
        if (sackBlocks > 0) {
            s.append("SACK with ").append(sackBlocks).append(" blocks ").append(4 + LENGTH_SACK_BLOCK * sackBlocks);
        } else {
            s.setLength(s.length() - 2);
        }
        return s.toString();
    }

    private static long word(MemorySegment seg, long at, int value) {
        seg.set(BE_INT, at, value);
        return at + 4;
    }

    private static int u8(MemorySegment seg, long at) {
        return seg.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
    }

    /** Same options present with the same values ({@link #parsedLength()} is not compared). */
    @Override
    public boolean equals(Object o) {
        if (!(o instanceof TcpOptions t)) {
            return false;
        }
        if (hasMss != t.hasMss || (hasMss && mss != t.mss)
                || hasWindowScale != t.hasWindowScale || (hasWindowScale && windowScale != t.windowScale)
                || sackPermitted != t.sackPermitted
                || hasTimestamps != t.hasTimestamps || (hasTimestamps && (tsVal != t.tsVal || tsEcr != t.tsEcr))
                || sackBlocks != t.sackBlocks) {
            return false;
        }
        for (int i = 0; i < sackBlocks; i++) {
            if (sackLeft[i] != t.sackLeft[i] || sackRight[i] != t.sackRight[i]) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        int h = (hasMss ? 1 + mss : 0);
        h = 31 * h + (hasWindowScale ? 1 + windowScale : 0);
        h = 31 * h + (sackPermitted ? 1 : 0);
        h = 31 * h + (hasTimestamps ? 31 * tsVal + tsEcr : 0);
        for (int i = 0; i < sackBlocks; i++) {
            h = 31 * (31 * h + sackLeft[i]) + sackRight[i];
        }
        return h;
    }

    /**
     * The options as {@link #emit} lays them out, in tcpdump's words:
     * {@code mss 65495,sackOK,TS val 174265046 ecr 0,nop,wscale 7}; sequence numbers unsigned.
     */
    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        if (hasMss) {
            s.append(",mss ").append(mss);
        }
        if (hasTimestamps) {
            s.append(sackPermitted ? ",sackOK" : ",nop,nop");
            s.append(",TS val ").append(Integer.toUnsignedString(tsVal))
                    .append(" ecr ").append(Integer.toUnsignedString(tsEcr));
        } else if (sackPermitted) {
            s.append(",nop,nop,sackOK");
        }
        if (hasWindowScale) {
            s.append(",nop,wscale ").append(windowScale);
        }
        if (sackBlocks > 0) {
            s.append(",nop,nop,sack ").append(sackBlocks).append(' ');
            for (int i = 0; i < sackBlocks; i++) {
                s.append('{').append(Integer.toUnsignedString(sackLeft[i]))
                        .append(':').append(Integer.toUnsignedString(sackRight[i])).append('}');
            }
        }
        return s.isEmpty() ? "" : s.substring(1);
    }
}
