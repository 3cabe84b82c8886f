package dev.nupa.roce;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.LongSupplier;

import dev.nupa.l2.Link;
import dev.nupa.roce.verbs.RoceIp;

/**
 * A test device: a switch port in front of a node's RoCEv2 receiver, on virtual time. Datagrams arriving for the node
 * wait in a FIFO of {@code capacity} frames drained at {@code rate} bits per second ({@link #drain}); one that finds it
 * full is dropped (tail drop), and an ECN-capable one (ECT(0)/ECT(1)) that finds {@code threshold} frames or more ahead
 * of it is marked CE (RFC 3168), as a switch's ECN marking with a step threshold does (DCQCN's K). What the node sends
 * passes straight through.
 */
final class BottleneckHop implements RoceIp {
    private final RoceIp inner;
    private final LongSupplier clock;
    private final double rate;
    private final int threshold;
    private final byte[][] frames;
    private final int[] lengths;
    private final int[] sources;
    private final long[] arrivals;
    private int head;
    private int size;
    private long busyUntil;
    private Listener listener;
    long marked;
    long dropped;
    long notEct;

    BottleneckHop(RoceIp inner, LongSupplier clock, double rate, int capacity, int threshold) {
        this.inner = inner;
        this.clock = clock;
        this.rate = rate;
        this.threshold = threshold;
        this.frames = new byte[capacity][65_536];
        this.lengths = new int[capacity];
        this.sources = new int[capacity];
        this.arrivals = new long[capacity];
    }

    @Override
    public void open(Listener l) {
        listener = l;
        inner.open(new Listener() {
            @Override
            public void onDatagram(int source, MemorySegment ip, long ipOffset, int ipLength, MemorySegment data, long offset,
                                   int length) {
                enqueue(source, ip, ipOffset, ipLength);
            }

            @Override
            public void onNodeLost(int node, int[] addresses) {
                l.onNodeLost(node, addresses);
            }
        });
    }

    private void enqueue(int source, MemorySegment ip, long ipOffset, int ipLength) {
        if (size == frames.length) {
            dropped++;
            return;
        }
        int i = (head + size) % frames.length;
        MemorySegment.copy(ip, ValueLayout.JAVA_BYTE, ipOffset, frames[i], 0, ipLength);
        int ecn = frames[i][1] & 3;
        if (ecn == 0) {
            notEct++;
        } else if (ecn != 3 && size >= threshold) {
            frames[i][1] |= 3; // CE; the ICRC masks the TOS byte (A17.4.1), the IP checksum was checked on the way in
            marked++;
        }
        lengths[i] = ipLength;
        sources[i] = source;
        arrivals[i] = clock.getAsLong();
        size++;
    }

    /** Hands the node what has left the queue by now; returns how many. */
    int drain() {
        long now = clock.getAsLong();
        int n = 0;
        while (size > 0) {
            int i = head;
            long start = Math.max(busyUntil, arrivals[i]);
            long departs = start + (long) (lengths[i] * 8e9 / rate);
            if (departs > now) {
                break;
            }
            busyUntil = departs;
            head = (head + 1) % frames.length;
            size--;
            MemorySegment m = MemorySegment.ofArray(frames[i]);
            int ihl = (frames[i][0] & 0xF) * 4;
            listener.onDatagram(sources[i], m, 0, lengths[i], m, ihl + 8, lengths[i] - ihl - 8);
            n++;
        }
        return n;
    }

    @Override
    public void close() {
        inner.close();
    }

    @Override
    public Link link() {
        return inner.link();
    }

    @Override
    public int address() {
        return inner.address();
    }

    @Override
    public int maxUdpPayload() {
        return inner.maxUdpPayload();
    }

    @Override
    public int send(int sourcePort, int destination, MemorySegment packet, long offset, int length) {
        return inner.send(sourcePort, destination, packet, offset, length);
    }
}
