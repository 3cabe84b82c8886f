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
    private final int capacity;
    private final BufferBudget budget;
    /** Set by {@link #release}: the budget has this ring's bytes back; no memory is taken again. */
    private boolean released;
    private long head;
    private long tail;

    ByteRing(int capacity) {
        this(capacity, BufferBudget.UNLIMITED);
    }

    ByteRing(int capacity, BufferBudget budget) {
        if (capacity < 1) {
            throw new IllegalArgumentException("buffer capacity must be positive, got " + capacity);
        }
        this.capacity = capacity;
        this.budget = budget;
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
        memory = budget.take(capacity);
        return memory != null;
    }

    /** Whether the memory was allocated (a ring never written holds none). */
    boolean allocated() {
        return memory != null;
    }

    /**
     * Gives the ring's bytes back to the budget (the connection closed, or waits in TIME-WAIT). What is
     * left unread stays readable; the memory goes back to the budget's pool as soon as nothing is left in
     * it, and none is taken after this.
     */
    void release() {
        if (!released && memory != null) {
            budget.give(capacity);
        }
        released = true;
        forgetIfEmpty();
    }

    private void forgetIfEmpty() {
        if (released && tail == head && memory != null) {
            budget.recycle(memory);
            memory = null;
        }
    }

    private MemorySegment memory() {
        if (!reserve()) {
            throw new BufferUnavailableException(capacity, budget);
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
        MemorySegment m = memory();
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
