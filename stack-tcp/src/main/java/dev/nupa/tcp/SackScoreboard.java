package dev.nupa.tcp;

import dev.nupa.tcp.wire.Seq;

/**
 * The sender's SACK scoreboard of RFC 6675 section 3: which octets above SND.UNA the peer has
 * selectively acknowledged, kept as sorted, disjoint, non-touching ranges {@code [left, right)} in
 * two fixed arrays, so updating and querying it allocates nothing. On it live the RFC's
 * {@code Update()} ({@link #add}), {@code IsLost()} ({@link #isLost}), {@code SetPipe()}
 * ({@link #pipe}) and the hole search that {@code NextSeg()} rules 1 and 3 need ({@link #findHole}).
 *
 * <p>Sequence numbers are compared modulo 2^32 ({@link Seq}); every range lies between SND.UNA and
 * SND.MAX, less than 2^31 apart. A range that finds no free slot is forgotten: the cost is a
 * needless retransmission and a pipe estimated too high, never a lost byte.
 */
final class SackScoreboard {
    /** RFC 6675 section 2: DupThresh, the duplicate ACKs (or SACKed segments) that signal a loss. */
    static final int DUP_THRESH = 3;

    private final int[] left;
    private final int[] right;
    private int count;

    // The hole found by the last findHole().
    private int holeStart;
    private int holeEnd;
    private boolean holeLost;

    SackScoreboard(int maxRanges) {
        if (maxRanges < 1) {
            throw new IllegalArgumentException("a SACK scoreboard needs at least one range, got " + maxRanges);
        }
        left = new int[maxRanges];
        right = new int[maxRanges];
    }

    int count() {
        return count;
    }

    boolean isEmpty() {
        return count == 0;
    }

    /** The left edge of range {@code i} (0 is the lowest). */
    int left(int i) {
        return left[i];
    }

    /** The right edge (exclusive) of range {@code i}. */
    int right(int i) {
        return right[i];
    }

    void clear() {
        count = 0;
        holeStart = holeEnd = 0;
        holeLost = false;
    }

    /**
     * RFC 6675 {@code Update()}: records that {@code [l, r)} was SACKed (the caller has clipped it
     * to SND.UNA .. SND.MAX). Returns how many of its octets were not SACKed before.
     */
    int add(int l, int r) {
        if (!Seq.lt(l, r)) {
            return 0;
        }
        int i = 0;
        while (i < count && Seq.lt(right[i], l)) {
            i++;
        }
        int j = i;
        while (j < count && Seq.le(left[j], r)) {
            j++;
        }
        if (i == j) { // touches nothing: a range of its own at i
            if (count == left.length) {
                return 0;
            }
            System.arraycopy(left, i, left, i + 1, count - i);
            System.arraycopy(right, i, right, i + 1, count - i);
            left[i] = l;
            right[i] = r;
            count++;
            return r - l;
        }
        // Ranges i..j-1 touch [l, r): they become one.
        int had = 0;
        for (int k = i; k < j; k++) {
            had += right[k] - left[k];
        }
        int newLeft = Seq.min(l, left[i]);
        int newRight = Seq.max(r, right[j - 1]);
        left[i] = newLeft;
        right[i] = newRight;
        System.arraycopy(left, j, left, i + 1, count - j);
        System.arraycopy(right, j, right, i + 1, count - j);
        count -= j - i - 1;
        return (newRight - newLeft) - had;
    }

    /** SND.UNA moved to {@code una}: drops what it covers. */
    void dropBelow(int una) {
        int k = 0;
        while (k < count && Seq.le(right[k], una)) {
            k++;
        }
        if (k > 0) {
            System.arraycopy(left, k, left, 0, count - k);
            System.arraycopy(right, k, right, 0, count - k);
            count -= k;
        }
        if (count > 0 && Seq.lt(left[0], una)) {
            left[0] = una;
        }
    }

    /** Whether octet {@code seq} has been SACKed. */
    boolean sacked(int seq) {
        for (int i = 0; i < count; i++) {
            if (Seq.lt(seq, left[i])) {
                return false;
            }
            if (Seq.lt(seq, right[i])) {
                return true;
            }
        }
        return false;
    }

    /** The right edge of the range holding {@code seq}, or {@code seq} itself when it is not SACKed. */
    int skipSacked(int seq) {
        for (int i = 0; i < count; i++) {
            if (Seq.lt(seq, left[i])) {
                return seq;
            }
            if (Seq.lt(seq, right[i])) {
                return right[i];
            }
        }
        return seq;
    }

    /** The left edge of the first range above {@code seq}, or {@code limit} if none lies below it. */
    int nextSackedAbove(int seq, int limit) {
        for (int i = 0; i < count; i++) {
            if (Seq.gt(left[i], seq)) {
                return Seq.min(left[i], limit);
            }
        }
        return limit;
    }

    /** SACKed octets in {@code [from, to)}. */
    int sackedBytes(int from, int to) {
        int n = 0;
        for (int i = 0; i < count && Seq.lt(left[i], to); i++) {
            int l = Seq.max(left[i], from);
            int r = Seq.min(right[i], to);
            if (Seq.lt(l, r)) {
                n += r - l;
            }
        }
        return n;
    }

    /**
     * RFC 6675 {@code IsLost(SeqNum)}: true when DupThresh discontiguous SACKed ranges lie above
     * {@code seq}, or more than (DupThresh - 1) * SMSS SACKed octets do.
     */
    boolean isLost(int seq, int smss) {
        int ranges = 0;
        long octets = 0;
        for (int i = count - 1; i >= 0 && Seq.gt(right[i], seq); i--) {
            int l = Seq.max(left[i], seq + 1);
            octets += right[i] - l;
            if (Seq.gt(left[i], seq)) {
                ranges++;
            }
        }
        return lost(ranges, octets, smss);
    }

    private static boolean lost(int rangesAbove, long octetsAbove, int smss) {
        return rangesAbove >= DUP_THRESH || octetsAbove > (long) (DUP_THRESH - 1) * smss;
    }

    /**
     * RFC 6675 {@code SetPipe()} over {@code [highAck, highData)} (SND.UNA to SND.MAX): every octet
     * neither SACKed nor lost ({@link #isLost}) counts once, and every unSACKed octet below
     * {@code highRxt} (exclusive here: the end of the highest retransmission) counts once more.
     * IsLost is the same for every octet of one hole, so this walks holes, not octets.
     */
    int pipe(int highAck, int highData, int highRxt, int smss) {
        long pipe = 0;
        long octetsAbove = 0;
        for (int j = count; j >= 0; j--) { // hole j lies below range j (hole count: above the last range)
            if (j < count) {
                octetsAbove += right[j] - left[j];
            }
            int start = j == 0 ? highAck : right[j - 1];
            int end = j == count ? highData : left[j];
            if (!Seq.lt(start, end)) {
                continue;
            }
            boolean lost = j < count && lost(count - j, octetsAbove, smss);
            if (!lost) {
                pipe += end - start;
            }
            if (Seq.gt(highRxt, start)) {
                pipe += Seq.min(end, highRxt) - start;
            }
        }
        return (int) Math.min(pipe, Integer.MAX_VALUE);
    }

    /**
     * Finds the first unSACKed octet at or after {@code from} that lies below the highest SACKed
     * octet (RFC 6675 NextSeg (1.a) and (1.b)); {@link #holeStart}, {@link #holeEnd} and
     * {@link #holeLost} (IsLost, (1.c)) then describe it and the rest of its hole. Holes nearer
     * SND.UNA have more SACKed data above them, so when this hole is not lost no later one is.
     */
    boolean findHole(int highAck, int from, int smss) {
        long octetsAbove = 0;
        for (int i = 0; i < count; i++) {
            octetsAbove += right[i] - left[i];
        }
        for (int j = 0; j < count; j++) {
            int start = Seq.max(j == 0 ? highAck : right[j - 1], from);
            if (Seq.lt(start, left[j])) {
                holeStart = start;
                holeEnd = left[j];
                holeLost = lost(count - j, octetsAbove, smss);
                return true;
            }
            octetsAbove -= right[j] - left[j];
        }
        return false;
    }

    int holeStart() {
        return holeStart;
    }

    int holeEnd() {
        return holeEnd;
    }

    boolean holeLost() {
        return holeLost;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("SackScoreboard[");
        for (int i = 0; i < count; i++) {
            sb.append(i == 0 ? "" : " ").append(Integer.toUnsignedString(left[i])).append(':')
                    .append(Integer.toUnsignedString(right[i]));
        }
        return sb.append(']').toString();
    }
}
