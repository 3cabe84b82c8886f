package dev.nupa.roce.transport;

import dev.nupa.roce.wire.Psn;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The send queue of a QP: posted work requests in preallocated arrays, plus the transport's
 * progress on each. Three counters walk it: {@code head} (oldest not yet completed), {@code next}
 * (next to transmit, moved back by a retry) and {@code tail} (next free).
 */
public final class SendQueue {
    static final int POSTED = 0;
    static final int SENT = 1; // every packet sent at least once
    static final int DONE = 2; // acknowledged (or failed): ready to complete in order

    /** Requests the queue holds (max_send_wr). */
    public final int capacity;
    /** Slots minus one: the arrays have a power-of-two size so a slot is a mask, not a division. */
    private final int mask;
    final int maxSge;
    final int maxInline;
    final long[] wrId;
    public final int[] opcode;
    final int[] flags;
    final int[] numSge;
    final long[] sgAddr;
    final int[] sgLength;
    final int[] sgLkey;
    final long[] length;
    final long[] remoteAddr;
    final int[] rkey;
    final long[] compareAdd;
    final long[] swap;
    /** The immediate data; SEND_WITH_INV: the rkey its IETH carries; BIND_MW: the window's access. */
    final int[] imm;
    /**
     * BIND_MW: the region's lkey (the new rkey is in {@code rkey}, the range in {@code remoteAddr} and {@code
     * compareAdd}). LOCAL_INV keeps the rkey it invalidates in {@code rkey}.
     */
    final int[] bindLkey;
    final int[] udNode;
    /** A UD request's IPv4 destination (RoCEv2), or 0 when it goes to {@link #udNode} on the fabric. */
    final int[] udIp;
    final int[] udQpn;
    final int[] udQkey;
    /** Inline payloads: slot s owns {@code [s * maxInline, (s + 1) * maxInline)}. */
    final MemorySegment inline;
    /** Whether slot s's inline copy has been made (a direct WRITE done at post time never needs it). */
    final boolean[] inlineCopied;
    public final int[] firstPsn;
    public final int[] npsn;
    public final int[] state;
    final int[] status;
    /** READ: response packets received in order so far. */
    public final int[] received;
    public long head;
    public long next;
    public long tail;

    SendQueue(int capacity, int maxSge, int maxInline) {
        this.capacity = capacity;
        int slots = Integer.highestOneBit(Math.max(1, capacity - 1)) << 1;
        this.mask = slots - 1;
        this.maxSge = maxSge;
        this.maxInline = maxInline;
        wrId = new long[slots];
        opcode = new int[slots];
        flags = new int[slots];
        numSge = new int[slots];
        sgAddr = new long[slots * maxSge];
        sgLength = new int[slots * maxSge];
        sgLkey = new int[slots * maxSge];
        length = new long[slots];
        remoteAddr = new long[slots];
        rkey = new int[slots];
        compareAdd = new long[slots];
        swap = new long[slots];
        imm = new int[slots];
        bindLkey = new int[slots];
        udNode = new int[slots];
        udIp = new int[slots];
        udQpn = new int[slots];
        udQkey = new int[slots];
        inline = Arena.ofAuto().allocate(Math.max(1, (long) slots * maxInline));
        inlineCopied = new boolean[slots];
        firstPsn = new int[slots];
        npsn = new int[slots];
        state = new int[slots];
        status = new int[slots];
        received = new int[slots];
    }

    public int slot(long i) {
        return (int) i & mask;
    }


    /** Whether slot s's payload comes from its inline copy rather than the gather list. */
    boolean fromInline(int s) {
        return inlineCopied[s];
    }

    /** PSN of the last packet of slot {@code s} (a READ uses one per response packet). */
    int lastPsn(int s) {
        return Psn.add(firstPsn[s], npsn[s] - 1);
    }

    /** Whether {@code psn} falls in slot {@code s}'s PSN range. */
    boolean covers(int s, int psn) {
        int d = Psn.diff(psn, firstPsn[s]);
        return d >= 0 && d < npsn[s];
    }
}
