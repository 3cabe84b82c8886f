package dev.nupa.roce;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The send queue of a QP: posted work requests in preallocated arrays, plus the transport's
 * progress on each. Three counters walk it: {@code head} (oldest not yet completed), {@code next}
 * (next to transmit, moved back by a retry) and {@code tail} (next free).
 */
final class SendQueue {
    static final int POSTED = 0;
    static final int SENT = 1; // every packet sent at least once
    static final int DONE = 2; // acknowledged (or failed): ready to complete in order

    final int capacity;
    final int maxSge;
    final int maxInline;
    final long[] wrId;
    final int[] opcode;
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
    final int[] imm;
    final int[] udNode;
    final int[] udQpn;
    final int[] udQkey;
    /** Inline payloads: slot s owns {@code [s * maxInline, (s + 1) * maxInline)}. */
    final MemorySegment inline;
    /** Whether slot s's inline copy has been made (a direct WRITE done at post time never needs it). */
    final boolean[] inlineCopied;
    final int[] firstPsn;
    final int[] npsn;
    final int[] state;
    final int[] status;
    /** READ: response packets received in order so far. */
    final int[] received;
    long head;
    long next;
    long tail;

    SendQueue(int capacity, int maxSge, int maxInline) {
        this.capacity = capacity;
        this.maxSge = maxSge;
        this.maxInline = maxInline;
        wrId = new long[capacity];
        opcode = new int[capacity];
        flags = new int[capacity];
        numSge = new int[capacity];
        sgAddr = new long[capacity * maxSge];
        sgLength = new int[capacity * maxSge];
        sgLkey = new int[capacity * maxSge];
        length = new long[capacity];
        remoteAddr = new long[capacity];
        rkey = new int[capacity];
        compareAdd = new long[capacity];
        swap = new long[capacity];
        imm = new int[capacity];
        udNode = new int[capacity];
        udQpn = new int[capacity];
        udQkey = new int[capacity];
        inline = Arena.ofAuto().allocate(Math.max(1, (long) capacity * maxInline));
        inlineCopied = new boolean[capacity];
        firstPsn = new int[capacity];
        npsn = new int[capacity];
        state = new int[capacity];
        status = new int[capacity];
        received = new int[capacity];
    }

    int slot(long i) {
        return (int) (i % capacity);
    }

    int size() {
        return (int) (tail - head);
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
