package dev.nupa.tcp;

/**
 * Which byte ranges beyond the next expected sequence number have arrived out of order (RFC 9293
 * 3.10.7.4 lets a receiver keep them). Offsets are relative to RCV.NXT. At most {@code maxRanges}
 * disjoint ranges are kept, so a peer cannot make it grow without bound; a segment that would need
 * more is dropped (and arrives again by retransmission). Also the source of SACK blocks (RFC 2018).
 */
final class Assembler {
    private final int[] start;
    private final int[] end;
    private int count;
    /** The range that changed last, first in SACK blocks (RFC 2018 section 4). */
    private int recent = -1;

    Assembler(int maxRanges) {
        start = new int[maxRanges];
        end = new int[maxRanges];
    }

    /** The most ranges it holds. */
    int capacity() {
        return start.length;
    }

    int ranges() {
        return count;
    }

    boolean isEmpty() {
        return count == 0;
    }

    /**
     * Records {@code [from, to)} (offsets past RCV.NXT); returns false if it would need more ranges
     * than allowed (then nothing is recorded).
     */
    boolean add(int from, int to) {
        if (from >= to) {
            return true;
        }
        int i = 0;
        while (i < count && end[i] < from) {
            i++;
        }
        int j = i;
        while (j < count && start[j] <= to) {
            j++;
        }
        // Ranges i..j-1 touch [from, to): merge them into one.
        if (i == j) {
            if (count == start.length) {
                return false;
            }
            System.arraycopy(start, i, start, i + 1, count - i);
            System.arraycopy(end, i, end, i + 1, count - i);
            start[i] = from;
            end[i] = to;
            count++;
        } else {
            int s = Math.min(from, start[i]);
            int e = Math.max(to, end[j - 1]);
            start[i] = s;
            end[i] = e;
            int removed = j - i - 1;
            System.arraycopy(start, j, start, i + 1, count - j);
            System.arraycopy(end, j, end, i + 1, count - j);
            count -= removed;
        }
        recent = i;
        return true;
    }

    /**
     * RCV.NXT moved forward by {@code advance}: shift every range, drop those now behind it, and
     * return how many bytes that were held out of order are now in order right after the new RCV.NXT.
     */
    int advance(int advance) {
        shift(advance);
        int k = 0;
        while (k < count && end[k] <= 0) {
            k++;
        }
        drop(k);
        if (count > 0 && start[0] <= 0) {
            int contiguous = end[0];
            drop(1);
            shift(contiguous); // RCV.NXT moves past these bytes too: the rest stays relative to it
            return contiguous;
        }
        return 0;
    }

    private void shift(int by) {
        for (int i = 0; i < count; i++) {
            start[i] -= by;
            end[i] -= by;
        }
    }

    private void drop(int n) {
        if (n == 0) {
            return;
        }
        System.arraycopy(start, n, start, 0, count - n);
        System.arraycopy(end, n, end, 0, count - n);
        count -= n;
        recent = recent >= n ? recent - n : -1;
    }

    /** Fills up to {@code max} SACK blocks as sequence numbers (most recent first, RFC 2018 4); returns how many. */
    int sackBlocks(int rcvNxt, int[] left, int[] right, int max) {
        int n = 0;
        if (recent >= 0 && recent < count && n < max) {
            left[n] = rcvNxt + start[recent];
            right[n] = rcvNxt + end[recent];
            n++;
        }
        for (int i = count - 1; i >= 0 && n < max; i--) {
            if (i != recent) {
                left[n] = rcvNxt + start[i];
                right[n] = rcvNxt + end[i];
                n++;
            }
        }
        return n;
    }

    void clear() {
        count = 0;
        recent = -1;
    }
}
