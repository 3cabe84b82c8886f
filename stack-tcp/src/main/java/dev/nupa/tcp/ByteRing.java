package dev.nupa.tcp;

import java.lang.foreign.MemorySegment;

/**
 * A byte ring buffer in native memory: the send and receive buffers of a connection. Positions are
 * longs that only grow (head = first byte held, tail = one past the last), so offsets never wrap.
 * Its memory comes from its layer's {@link BufferBudget} on first use and goes back there, for reuse,
 * once the connection is done with it. Not thread-safe: the connection's owner serializes access.
 */
final class ByteRing {
    private MemorySegment memory;
    private int capacity;
    private final BufferBudget budget;
    private final boolean send;
    /** Set by {@link #release}: no memory is taken again, and what the ring holds goes back once read. */
    private boolean released;
    /** Whether this ring's bytes count as held in the budget (from its take until they are given back). */
    private boolean counted;
    private long head;
    private long tail;
    /** One past the furthest byte placed ({@link #writeAt}), committed or not: out-of-order data keeps the memory. */
    private long placedEnd;

    ByteRing(int capacity) {
        this(capacity, BufferBudget.UNLIMITED);
    }

    ByteRing(int capacity, BufferBudget budget) {
        this(capacity, budget, false);
    }

    /** A ring whose memory comes from {@code budget}; a {@code send} ring takes none past the budget's pressure mark. */
    ByteRing(int capacity, BufferBudget budget, boolean send) {
        if (capacity < 1) {
            throw new IllegalArgumentException("buffer capacity must be positive, got " + capacity);
        }
        this.capacity = capacity;
        this.budget = budget;
        this.send = send;
    }

    /**
     * Empty again, of {@code capacity} bytes, for the next connection of the object that holds it: memory
     * still held (unread bytes of a connection closed under them) goes back to the budget first.
     */
    void reset(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("buffer capacity must be positive, got " + capacity);
        }
        released = true;
        uncount();
        head = tail;
        forgetIfEmpty();
        this.capacity = capacity;
        released = false;
        head = tail = placedEnd = 0;
    }

    /**
     * Makes sure the memory is there, allocated on first use: a connection that never carries data (or
     * one that only sends) does not pay for zeroing a buffer it does not use (connect-request-close
     * rates). False, with nothing changed, when the budget or the JVM has no room for it (a later call
     * tries again), or when the ring was released without memory (or emptied since).
     */
    boolean reserve() {
        if (memory != null) {
            return true;
        }
        if (released) {
            return false;
        }
        memory = budget.take(capacity, send);
        counted = memory != null;
        return counted;
    }

    /** Whether the budget could give this ring its memory at all, every other ring's memory given back. */
    boolean couldEverFit() {
        return budget.couldFit(capacity, send);
    }

    /** Whether the memory was allocated (a ring never written holds none). */
    boolean allocated() {
        return memory != null;
    }

    /**
     * The connection is done with the ring (it waits in TIME-WAIT): no memory is taken after this, and
     * the memory goes back to the budget, and into its pool, once nothing unread is left in it (at once
     * if it is empty). Unread bytes stay readable and counted meanwhile.
     */
    void release() {
        released = true;
        forgetIfEmpty();
    }

    /**
     * The connection closed: as {@link #release}, but its bytes stop counting at once, so a socket that
     * nobody reads any more cannot hold the budget; its memory goes to the pool, or to the collector.
     */
    void releaseNow() {
        released = true;
        uncount();
        forgetIfEmpty();
    }

    /**
     * The connection closed and nothing it holds will be sent: the bytes are dropped and the memory goes back
     * now (to the pool, or freed), not when the closed connection is next reused.
     */
    void discard() {
        released = true;
        uncount();
        head = tail;
        placedEnd = tail;
        forgetIfEmpty();
    }

    private void uncount() {
        if (counted) {
            counted = false;
            budget.give(capacity);
        }
    }

    /**
     * An empty ring keeps its memory for its next bytes, unless it is released or the layer is under memory
     * pressure (Linux's tcp_mem: under pressure {@code sk_mem_reclaim} gives back what a socket does not hold).
     */
    private void forgetIfEmpty() {
        if ((released || budget.underPressure() && placedEnd <= tail) && tail == head && memory != null) {
            uncount();
            budget.recycle(memory);
            memory = null;
        }
    }

    private MemorySegment memory() {
        if (!reserve()) {
            throw new BufferUnavailableException(capacity, budget, send);
        }
        return memory;
    }

    int capacity() {
        return capacity;
    }

    /** Bytes held. */
    int size() {
        return (int) (tail - head);
    }

    int free() {
        return capacity - size();
    }

    /** Appends up to {@code length} bytes; returns how many fit. */
    int write(MemorySegment src, long offset, int length) {
        int n = Math.min(length, free());
        writeAt(0, src, offset, n);
        tail += n;
        return n;
    }

    /**
     * Writes {@code length} bytes at {@code at} bytes past the tail without moving it (data that
     * arrived out of order waits there); the caller keeps {@code at + length <= free()}.
     */
    void writeAt(int at, MemorySegment src, long offset, int length) {
        int pos = (int) ((tail + at) % capacity);
        int first = Math.min(length, capacity - pos);
        if (length == 0) {
            return;
        }
        if (released) {
            throw new IllegalStateException("a released TCP buffer takes no more bytes (its connection is done)");
        }
        MemorySegment m = memory();
        placedEnd = Math.max(placedEnd, tail + at + length);
        MemorySegment.copy(src, offset, m, pos, first);
        if (length > first) {
            MemorySegment.copy(src, offset + first, m, 0, length - first);
        }
    }

    /** Counts {@code length} bytes already placed by {@link #writeAt} as held. */
    void commit(int length) {
        tail += length;
    }

    /** Copies up to {@code length} bytes from {@code at} bytes past the head, without consuming them; returns the count. */
    int peek(int at, MemorySegment dst, long offset, int length) {
        int n = Math.max(0, Math.min(length, size() - at));
        int pos = (int) ((head + at) % capacity);
        int first = Math.min(n, capacity - pos);
        if (n == 0) {
            return 0;
        }
        MemorySegment.copy(memory, pos, dst, offset, first);
        if (n > first) {
            MemorySegment.copy(memory, 0, dst, offset + first, n - first);
        }
        return n;
    }

    /** Removes {@code length} bytes from the head. */
    void consume(int length) {
        head += Math.min(length, size());
        forgetIfEmpty();
    }

    /** The memory holding the buffer's bytes; with {@link #offsetOf} and {@link #contiguous} it names a range to send in place. */
    MemorySegment segment() {
        return memory();
    }

    long offsetOf(int at) {
        return (head + at) % capacity;
    }

    /** How many bytes from {@code at} lie in one piece before the ring wraps (at most {@code size() - at}). */
    int contiguous(int at) {
        int pos = (int) ((head + at) % capacity);
        return Math.max(0, Math.min(size() - at, capacity - pos));
    }
}
