package dev.nupa.ip;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.l2.Datapath;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A node's loopback interface, as Linux's {@code lo}: datagrams a node sends to itself (127.0.0.0/8, or one of its
 * own addresses) wait in this queue and are received on the node's loop on its next round, with no fabric frame and
 * no checksum. The queue is a byte ring of records {@code [length][datagram]}, 8-byte aligned, one writer and one
 * reader, both the loop; it is allocated on first use, so a node that never talks to itself pays nothing. A full
 * queue refuses the datagram ({@link FabricDevice#BACK_PRESSURED}: TCP tries again, a UDP send fails), as Linux's
 * backlog drops: waiting would wait on the loop itself.
 */
public final class LoopbackInterface implements Datapath.Source {
    /** The MTU Linux gives {@code lo}; IPv4 caps a datagram at 65,535 bytes anyway. */
    public static final int MTU = Ipv4Header.MAX_TOTAL_LENGTH;
    /**
     * Default capacity in bytes: more than a connection with 4 MiB windows has in flight both ways, so one bulk
     * connection never finds it full (a refused segment waits out TCP's retry of a full ring).
     */
    public static final int DEFAULT_CAPACITY = 16 << 20;

    private static final int RECORD_HEADER = 8;
    private static final int WRAP = -1;

    private final Receiver receiver;
    private final int capacity;
    private MemorySegment ring;
    private long head; // next record to read (monotonic byte position)
    private long tail; // where the next record goes
    private long claimAt = -1;
    private long datagrams;
    private long bytes;
    private long drops;

    /** Where the interface hands what it received: the node's IP input. */
    @FunctionalInterface
    interface Receiver {
        void receive(MemorySegment mem, long off, int len);
    }

    LoopbackInterface(Receiver receiver, int capacity) {
        if (capacity < 2 * (MTU + RECORD_HEADER)) {
            throw new IllegalArgumentException("a loopback queue of " + capacity + " bytes cannot hold two datagrams of "
                    + MTU + " bytes; give it at least " + 2 * (MTU + RECORD_HEADER));
        }
        this.receiver = receiver;
        this.capacity = Integer.highestOneBit(capacity - 1) << 1;
    }

    private static int align(int n) {
        return (n + 7) & ~7;
    }

    /**
     * Claims room for a datagram of {@code length} bytes; returns the offset in {@link #memory()} to write it at, or
     * -1 when the queue is full. {@link #publish} makes it visible.
     */
    long claim(int length) {
        if (ring == null) {
            ring = Arena.ofAuto().allocate(capacity, 8);
        }
        int need = RECORD_HEADER + align(length);
        long at = tail & (capacity - 1);
        long pad = at + need > capacity ? capacity - at : 0; // a record never wraps: skip to the start
        if (tail + pad + need - head > capacity) {
            drops++;
            return -1;
        }
        if (pad > 0) {
            ring.set(ValueLayout.JAVA_INT, at, WRAP);
            tail += pad;
            at = 0;
        }
        ring.set(ValueLayout.JAVA_INT, at, length);
        claimAt = at;
        return at + RECORD_HEADER;
    }

    MemorySegment memory() {
        return ring;
    }

    /** Makes the datagram claimed last visible to the next poll. */
    void publish() {
        int length = ring.get(ValueLayout.JAVA_INT, claimAt);
        tail += RECORD_HEADER + align(length);
        claimAt = -1;
        datagrams++;
        bytes += length;
    }

    @Override
    public boolean ready() {
        return head != tail;
    }

    /**
     * Receives up to {@code limit} queued datagrams. What they cause to be sent to the node itself is queued behind
     * them and received on a later round, as Linux's backlog defers it, so no call nests in another.
     */
    @Override
    public int poll(int limit, long now) {
        int n = 0;
        long end = tail; // what was queued before this poll
        while (head != end && n < limit) {
            long at = head & (capacity - 1);
            int length = ring.get(ValueLayout.JAVA_INT, at);
            if (length == WRAP) {
                head += capacity - at;
                continue;
            }
            try {
                receiver.receive(ring, at + RECORD_HEADER, length);
            } finally {
                head += RECORD_HEADER + align(length); // what receive() queued lies beyond: never overwritten here
            }
            n++;
        }
        return n;
    }

    /** Datagrams queued so far. */
    public long datagrams() {
        return datagrams;
    }

    /** Bytes of the datagrams queued so far. */
    public long bytes() {
        return bytes;
    }

    /** Datagrams refused because the queue was full. */
    public long drops() {
        return drops;
    }
}
