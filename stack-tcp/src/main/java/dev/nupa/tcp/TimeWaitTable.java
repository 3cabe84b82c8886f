package dev.nupa.tcp;

import dev.nupa.tcp.wire.Seq;
import java.util.Arrays;
import org.agrona.collections.Long2LongHashMap;

/**
 * Connections in TIME-WAIT (RFC 9293 3.6) as records in primitive arrays, after their application let go
 * of them: what a TIME-WAIT end still needs to answer a retransmitted FIN or a stray segment (the
 * sequence numbers, the window, the timestamp state) and when the wait ends; about 60 bytes each, where a
 * connection object holds about 2.5 KB, and nothing the collector has to trace (Linux keeps a small
 * inet_timewait_sock for the same reason). Records leave in the order they came; one whose wait was
 * restarted by a retransmitted FIN holds those behind it until it ends, which only lengthens their wait.
 * Not thread-safe: the layer's owner thread uses it.
 */
final class TimeWaitTable {
    /** {@link #answer}: nothing to send. */
    static final int NOTHING = 0;
    /** {@link #answer}: send the ACK it wrote. */
    static final int ACK = 1;
    /** {@link #answer}: a SYN that opens a new connection; the record is gone, the listener takes the SYN. */
    static final int REOPEN = 2;

    private final Long2LongHashMap index = new Long2LongHashMap(-1); // key to slot, -1 for none
    private long[] key = new long[0];
    private int[] sndNxt = new int[0];
    private int[] rcvNxt = new int[0];
    private int[] window = new int[0];
    private boolean[] timestamps = new boolean[0];
    private int[] tsRecent = new int[0];
    private long[] tsBase = new long[0];
    private long[] expires = new long[0];
    private long[] waitNs = new long[0];
    /** Bumped each time a slot is taken, so an order entry of a slot's earlier record is known as stale. */
    private int[] stamp = new int[0];
    private int[] free = new int[0];
    private int freeCount;
    private int top;
    /** Slots in the order their records came, as slot << 32 | stamp; head .. tail, wrapping. */
    private long[] order = new long[0];
    private int head;
    private int count;

    int size() {
        return index.size();
    }

    /** The slot of {@code key}'s record, or -1. */
    int find(long key) {
        return (int) index.get(key);
    }

    /** Adds a record; the caller keeps the table within its bound. Returns its slot. */
    int add(long k, int snd, int rcv, int wnd, boolean ts, int recent, long base, long until, long wait) {
        int s = freeCount > 0 ? free[--freeCount] : top++;
        if (s >= key.length) {
            grow();
        }
        key[s] = k;
        sndNxt[s] = snd;
        rcvNxt[s] = rcv;
        window[s] = wnd;
        timestamps[s] = ts;
        tsRecent[s] = recent;
        tsBase[s] = base;
        expires[s] = until;
        waitNs[s] = wait;
        stamp[s]++;
        index.put(k, s);
        if (count == order.length) {
            dropOldestOrderEntry();
        }
        order[(head + count++) % order.length] = (long) s << 32 | (stamp[s] & 0xFFFFFFFFL);
        return s;
    }

    /** Removes the record in slot {@code s}. */
    void remove(int s) {
        index.remove(key[s]);
        stamp[s]++; // its order entry goes stale
        free[freeCount++] = s;
    }

    /** Removes the records whose wait has ended by {@code now}; returns how many. */
    int expire(long now) {
        int n = 0;
        while (count > 0) {
            long e = order[head];
            int s = (int) (e >>> 32);
            if (stamp[s] == (int) e) {
                if (expires[s] > now) {
                    break;
                }
                remove(s);
                n++;
            }
            head = (head + 1) % order.length;
            count--;
        }
        return n;
    }

    /** When the oldest record's wait ends (Long.MAX_VALUE: no record). */
    long nextExpiry() {
        while (count > 0) {
            long e = order[head];
            int s = (int) (e >>> 32);
            if (stamp[s] == (int) e) {
                return expires[s];
            }
            head = (head + 1) % order.length; // a record removed early: its entry goes
            count--;
        }
        return Long.MAX_VALUE;
    }

    /** A retransmitted FIN: the wait starts again (RFC 9293 3.10.7.4). */
    void restart(int s, long now) {
        expires[s] = now + waitNs[s];
    }

    long key(int s) {
        return key[s];
    }

    /**
     * What segment {@code in} for record {@code r} calls for, as the connection would answer it (RFC 9293
     * 3.10.7.4): a retransmitted FIN is acknowledged and the wait starts again; other segments but the ACK of
     * our FIN draw an ACK; an RST that matches RCV.NXT ends the wait quietly and one elsewhere in the window
     * draws a challenge ACK (RFC 5961 3.2, within {@code challenges}), as does a SYN (4.2), unless it opens a new
     * connection to a listener ({@code listening}): with a newer timestamp (RFC 6191) or, without timestamps, a
     * sequence number above RCV.NXT (RFC 1122 4.2.2.13). An ACK to send is written into {@code out}.
     */
    int answer(int r, Segment in, boolean listening, ChallengeAckLimit challenges, long now, Segment out) {
        int rcv = rcvNxt[r];
        boolean ts = timestamps[r] && in.timestamps;
        if (in.has(Segment.SYN) && !in.has(Segment.ACK) && !in.has(Segment.RST) && listening
                && (ts ? Seq.gt(in.tsVal, tsRecent[r]) : Seq.gt(in.seq, rcv))) {
            remove(r);
            return REOPEN;
        }
        if (in.has(Segment.RST)) {
            if (in.seq == rcv) {
                remove(r);
                return NOTHING;
            }
            boolean inWindow = Seq.ge(in.seq, rcv) && Seq.lt(in.seq, rcv + Math.max(1, window[r]));
            return inWindow && challenges.tryTake(now) ? ack(r, now, out) : NOTHING;
        }
        if (in.has(Segment.SYN)) {
            return challenges.tryTake(now) ? ack(r, now, out) : NOTHING;
        }
        boolean stale = ts && Seq.lt(in.tsVal, tsRecent[r]); // RFC 7323 5.3 PAWS: answered, never taken
        if (!stale && in.has(Segment.ACK) && !in.has(Segment.FIN) && in.payloadLength == 0 && in.seq == rcv) {
            return NOTHING; // the ACK of our FIN, again
        }
        if (in.has(Segment.FIN) && !stale) {
            restart(r, now);
        }
        return ack(r, now, out);
    }

    /** RFC 9293 3.10.7.4: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK> from record {@code r}, into {@code out}. */
    private int ack(int r, long now, Segment out) {
        out.flags = Segment.ACK;
        out.seq = sndNxt[r];
        out.ack = rcvNxt[r];
        out.window = window[r];
        if (timestamps[r]) {
            out.timestamps = true;
            out.tsVal = TcpConnection.timestampClock(now, tsBase[r]);
            out.tsEcr = tsRecent[r];
        }
        return ACK;
    }

    int sndNxt(int s) {
        return sndNxt[s];
    }

    int rcvNxt(int s) {
        return rcvNxt[s];
    }

    int window(int s) {
        return window[s];
    }

    boolean timestamps(int s) {
        return timestamps[s];
    }

    int tsRecent(int s) {
        return tsRecent[s];
    }

    long tsBase(int s) {
        return tsBase[s];
    }

    private void grow() {
        int n = Math.max(64, key.length * 2);
        key = Arrays.copyOf(key, n);
        sndNxt = Arrays.copyOf(sndNxt, n);
        rcvNxt = Arrays.copyOf(rcvNxt, n);
        window = Arrays.copyOf(window, n);
        timestamps = Arrays.copyOf(timestamps, n);
        tsRecent = Arrays.copyOf(tsRecent, n);
        tsBase = Arrays.copyOf(tsBase, n);
        expires = Arrays.copyOf(expires, n);
        waitNs = Arrays.copyOf(waitNs, n);
        stamp = Arrays.copyOf(stamp, n);
        free = Arrays.copyOf(free, n);
        // Room for an order entry per slot and as many stale ones; unwrap into the new array.
        long[] o = new long[2 * n];
        for (int i = 0; i < count; i++) {
            o[i] = order[(head + i) % order.length];
        }
        order = o;
        head = 0;
    }

    /** The order is full of entries (stale ones of records removed early among them): its oldest goes. */
    private void dropOldestOrderEntry() {
        long e = order[head];
        int s = (int) (e >>> 32);
        if (stamp[s] == (int) e) {
            remove(s); // its wait ends early: the table's bound on waiting, not on entries, is what holds
        }
        head = (head + 1) % order.length;
        count--;
    }
}
