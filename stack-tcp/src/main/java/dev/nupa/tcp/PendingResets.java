package dev.nupa.tcp;

/**
 * Resets that found the next hop's ring full. A reset is the last segment of its connection, which is gone by the
 * time the ring refuses it, so no retransmission would ever send it again; on a lossless fabric a full ring is not
 * loss, and the peer would be left holding a connection nothing ends (a burst of thousands of closes with unread
 * data fills a ring at once). The layer keeps them here and sends them again, oldest first, when the ring has room.
 * Bounded: past {@link #CAPACITY} the newest is dropped and counted, as a reset lost on a wire.
 */
final class PendingResets {
    static final int CAPACITY = 4096;
    private static final int FIELDS = 8;

    private final int[] records = new int[CAPACITY * FIELDS];
    private int head;
    private int size;

    boolean isEmpty() {
        return size == 0;
    }

    int size() {
        return size;
    }

    /** Keeps a reset to send again; false when full. */
    boolean add(int via, int localIp, int remoteIp, int remotePort, int localPort, int seq, int ack, int flags) {
        if (size == CAPACITY) {
            return false;
        }
        int at = ((head + size) % CAPACITY) * FIELDS;
        records[at] = via;
        records[at + 1] = localIp;
        records[at + 2] = remoteIp;
        records[at + 3] = remotePort;
        records[at + 4] = localPort;
        records[at + 5] = seq;
        records[at + 6] = ack;
        records[at + 7] = flags;
        size++;
        return true;
    }

    /** The oldest reset's field {@code i} (0 via, 1 local IP, 2 remote IP, 3 remote port, 4 local port, 5 seq, 6 ack, 7 flags). */
    int oldest(int i) {
        return records[head * FIELDS + i];
    }

    void removeOldest() {
        head = (head + 1) % CAPACITY;
        size--;
    }

    void clear() {
        head = 0;
        size = 0;
    }
}
