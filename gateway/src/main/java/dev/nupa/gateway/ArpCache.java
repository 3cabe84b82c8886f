package dev.nupa.gateway;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The Ethernet side's neighbor cache (RFC 826, RFC 1122 2.3.2), sans-IO and driven with {@code now}:
 * IPv4 address to MAC address, bounded in entries and in datagrams waiting for an answer, with aging.
 *
 * <ul>
 *   <li>An entry is confirmed by a reply or by a request from that address; it is used as it is for
 *       {@code reachableNs}, after which a use also sends one request to confirm it again (at most one a
 *       {@code retryNs}), and it is forgotten once {@code 4 * reachableNs} pass without confirmation.</li>
 *   <li>A datagram to an address with no entry waits in an incomplete entry (at most
 *       {@link #QUEUE_PER_ENTRY}, from one shared pool of {@code pendingSlots}), while a request goes out
 *       every {@code retryNs}, {@code retries} times (RFC 1122 2.3.2.1: at most one a second); then the
 *       entry and its datagrams are dropped and reported unresolved.</li>
 *   <li>Entries are created only for our own next hops and for requests aimed at our addresses (RFC 826's
 *       algorithm), so a flood of other traffic cannot fill the table; when it is full, the entry
 *       confirmed longest ago gives way. At most a quarter of the entries wait for an answer at once: a
 *       flood towards addresses that never answer (the replies to a SYN flood from spoofed sources)
 *       cannot crowd out the neighbors that do.</li>
 * </ul>
 * Nothing here allocates after construction.
 */
public final class ArpCache {
    /** How many datagrams may wait for one address (as Linux's unres_qlen, in datagrams). */
    static final int QUEUE_PER_ENTRY = 3;
    private static final byte FREE = 0;
    private static final byte INCOMPLETE = 1;
    private static final byte KNOWN = 2;

    /** What the cache asks of its interface. */
    interface Actions {
        /** Broadcast a request for {@code ip}. */
        void request(int ip);

        /** A waiting datagram can go now, to {@code mac}. */
        void send(long mac, MemorySegment datagram, long offset, int length);

        /** A waiting datagram whose next hop {@code ip} never answered (the caller reports host unreachable). */
        void unresolved(int ip, MemorySegment datagram, long offset, int length);
    }

    private final int[] ips;
    private final long[] macs;
    private final byte[] states;
    private final long[] confirmed;
    private final long[] lastRequest;
    private final int[] requestsSent;
    private final int[] waiting;
    private final long reachableNs;
    private final long retryNs;
    private final int retries;
    private final int slotBytes;
    private final MemorySegment pool;
    private final int[] slotOwner; // entry index + 1, 0 free
    private final int[] slotLength;
    private final long[] slotOrder; // enqueue order, so an entry's datagrams leave in the order they came
    private long enqueued;
    private int lastHit;
    private int used;
    private int incomplete;
    private long nextDeadline = Long.MAX_VALUE;
    /** Moves whenever an address becomes known, changes MAC or is forgotten: when {@link #known} would differ. */
    private long version;

    public ArpCache(int capacity, int pendingSlots, int slotBytes, long reachableNs, long retryNs, int retries) {
        if (capacity < 1 || pendingSlots < 1) {
            throw new IllegalArgumentException("ARP cache of " + capacity + " entries and " + pendingSlots
                    + " waiting datagrams: both must be at least 1");
        }
        ips = new int[capacity];
        macs = new long[capacity];
        states = new byte[capacity];
        confirmed = new long[capacity];
        lastRequest = new long[capacity];
        requestsSent = new int[capacity];
        waiting = new int[capacity];
        this.reachableNs = reachableNs;
        this.retryNs = retryNs;
        this.retries = retries;
        this.slotBytes = slotBytes;
        pool = Arena.ofAuto().allocate((long) pendingSlots * slotBytes, 8);
        slotOwner = new int[pendingSlots];
        slotLength = new int[pendingSlots];
        slotOrder = new long[pendingSlots];
    }

    long version() {
        return version;
    }

    /**
     * The known entries as pairs {@code [ip, mac, ip, mac, ...]}: what the interfaces of the other queues read (a
     * new array, made when {@link #version} moved; entries past their reachable time included, as lookup uses them).
     */
    long[] known() {
        int n = 0;
        for (byte st : states) {
            n += st == KNOWN ? 1 : 0;
        }
        long[] pairs = new long[2 * n];
        for (int i = 0, k = 0; i < states.length; i++) {
            if (states[i] == KNOWN) {
                pairs[k++] = ips[i];
                pairs[k++] = macs[i];
            }
        }
        return pairs;
    }

    int capacity() {
        return ips.length;
    }

    /** Entries in use (incomplete or known). */
    int size() {
        return used;
    }

    private int find(int ip) {
        int h = lastHit;
        if (states[h] != FREE && ips[h] == ip) {
            return h;
        }
        for (int i = 0; i < ips.length; i++) {
            if (states[i] != FREE && ips[i] == ip) {
                lastHit = i;
                return i;
            }
        }
        return -1;
    }

    /**
     * The MAC address to send to {@code ip} now, or -1 when there is none (then {@link #enqueue}). A use of an
     * entry past its reachable time sends one request to confirm it.
     */
    long lookup(int ip, long now, Actions actions) {
        int i = find(ip);
        if (i < 0 || states[i] != KNOWN) {
            return -1;
        }
        long age = now - confirmed[i];
        if (age > 4 * reachableNs) {
            free(i);
            return -1;
        }
        if (age > reachableNs && now - lastRequest[i] >= retryNs) {
            lastRequest[i] = now;
            actions.request(ip);
        }
        return macs[i];
    }

    /**
     * Queues a datagram for {@code ip}, whose address is not known: true when it waits (a request went out
     * if the entry is new), false when it was dropped (the entry's queue or the pool is full, or the table
     * holds only incomplete entries).
     */
    boolean enqueue(int ip, MemorySegment d, long off, int len, long now, Actions actions) {
        if (len > slotBytes) {
            return false;
        }
        int i = find(ip);
        boolean fresh = false;
        if ((i < 0 || states[i] == KNOWN) && incomplete >= Math.max(1, ips.length / 4)) {
            return false; // enough addresses wait for an answer already
        }
        if (i < 0) {
            i = take(now);
            if (i < 0) {
                return false;
            }
            ips[i] = ip;
            states[i] = INCOMPLETE;
            incomplete++;
            requestsSent[i] = 0;
            waiting[i] = 0;
            fresh = true;
        } else if (states[i] == KNOWN) { // expired in lookup's view: confirm it again
            states[i] = INCOMPLETE;
            incomplete++;
            requestsSent[i] = 0;
            waiting[i] = 0;
            fresh = true;
        }
        if (waiting[i] >= QUEUE_PER_ENTRY) {
            return false;
        }
        int slot = freeSlot();
        if (slot < 0) {
            if (fresh) {
                free(i);
            }
            return false;
        }
        MemorySegment.copy(d, off, pool, (long) slot * slotBytes, len);
        slotOwner[slot] = i + 1;
        slotLength[slot] = len;
        slotOrder[slot] = enqueued++;
        waiting[i]++;
        if (fresh) {
            sendRequest(i, now, actions);
        }
        return true;
    }

    private void sendRequest(int i, long now, Actions actions) {
        requestsSent[i]++;
        lastRequest[i] = now;
        nextDeadline = Math.min(nextDeadline, now + retryNs);
        actions.request(ips[i]);
    }

    /**
     * Learns {@code ip} is at {@code mac} (RFC 826: update an entry that exists; create one only when
     * {@code create}, a request aimed at us). Datagrams that waited for it go now.
     *
     * @return false when there was no entry and none was created
     */
    boolean learn(int ip, long mac, long now, boolean create, Actions actions) {
        int i = find(ip);
        if (i < 0) {
            if (!create) {
                return false;
            }
            i = take(now);
            if (i < 0) {
                return false;
            }
            ips[i] = ip;
            waiting[i] = 0;
        }
        boolean wasIncomplete = states[i] == INCOMPLETE;
        if (wasIncomplete) {
            incomplete--;
        }
        if (wasIncomplete || macs[i] != mac) {
            version++;
        }
        states[i] = KNOWN;
        macs[i] = mac;
        confirmed[i] = now;
        requestsSent[i] = 0;
        if (wasIncomplete && waiting[i] > 0) {
            flush(i, mac, actions);
        }
        return true;
    }

    /** Sends entry {@code i}'s waiting datagrams in the order they came. */
    private void flush(int i, long mac, Actions actions) {
        while (waiting[i] > 0) {
            int first = -1;
            for (int s = 0; s < slotOwner.length; s++) {
                if (slotOwner[s] == i + 1 && (first < 0 || slotOrder[s] < slotOrder[first])) {
                    first = s;
                }
            }
            if (first < 0) {
                waiting[i] = 0;
                return;
            }
            slotOwner[first] = 0;
            waiting[i]--;
            actions.send(mac, pool, (long) first * slotBytes, slotLength[first]);
        }
    }

    /** Retries requests that are due and gives up on entries out of retries; returns when it wants to be polled next. */
    long poll(long now, Actions actions) {
        if (now < nextDeadline) {
            return nextDeadline;
        }
        long next = Long.MAX_VALUE;
        for (int i = 0; i < ips.length; i++) {
            if (states[i] != INCOMPLETE) {
                continue;
            }
            long due = lastRequest[i] + retryNs;
            if (now >= due) {
                if (requestsSent[i] >= retries) {
                    giveUp(i, actions);
                    continue;
                }
                sendRequest(i, now, actions);
                due = now + retryNs;
            }
            next = Math.min(next, due);
        }
        nextDeadline = next;
        return next;
    }

    private void giveUp(int i, Actions actions) {
        for (int s = 0; s < slotOwner.length; s++) {
            if (slotOwner[s] == i + 1) {
                slotOwner[s] = 0;
                actions.unresolved(ips[i], pool, (long) s * slotBytes, slotLength[s]);
            }
        }
        free(i);
    }

    /** A free entry, or the known one confirmed longest ago; -1 when every entry is incomplete. */
    private int take(long now) {
        int oldest = -1;
        for (int i = 0; i < ips.length; i++) {
            if (states[i] == FREE) {
                used++;
                return i;
            }
            if (states[i] == KNOWN && (oldest < 0 || confirmed[i] < confirmed[oldest])) {
                oldest = i;
            }
        }
        if (oldest >= 0) {
            waiting[oldest] = 0;
        }
        return oldest;
    }

    private void free(int i) {
        for (int s = 0; s < slotOwner.length; s++) {
            if (slotOwner[s] == i + 1) {
                slotOwner[s] = 0;
            }
        }
        if (states[i] == INCOMPLETE) {
            incomplete--;
        } else {
            version++;
        }
        states[i] = FREE;
        waiting[i] = 0;
        used--;
    }

    private int freeSlot() {
        for (int s = 0; s < slotOwner.length; s++) {
            if (slotOwner[s] == 0) {
                return s;
            }
        }
        return -1;
    }

    /** The entry for {@code ip} as "MAC state", for tools; null when there is none. */
    String describe(int ip) {
        int i = find(ip);
        if (i < 0) {
            return null;
        }
        return states[i] == KNOWN ? EthernetFrame.macToString(macs[i]) + " known" : "incomplete, " + waiting[i] + " waiting";
    }
}
