package dev.nupa.tcp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A byte ring buffer in native memory: the send and receive buffers of a connection. Positions are
 * longs that only grow (head = first byte held, tail = one past the last), so offsets never wrap.
 * Allocation-free after construction. Not thread-safe: the connection's owner serializes access.
 */
final class ByteRing {
    private final MemorySegment memory;
    private final int capacity;
    private long head;
    private long tail;

    ByteRing(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("buffer capacity must be positive, got " + capacity);
        }
        this.capacity = capacity;
        this.memory = Arena.ofAuto().allocate(capacity, 64);
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
        MemorySegment.copy(src, offset, memory, pos, first);
        if (length > first) {
            MemorySegment.copy(src, offset + first, memory, 0, length - first);
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
        MemorySegment.copy(memory, pos, dst, offset, first);
        if (n > first) {
            MemorySegment.copy(memory, 0, dst, offset + first, n - first);
        }
        return n;
    }

    /** Removes {@code length} bytes from the head. */
    void consume(int length) {
        head += Math.min(length, size());
    }

    /** The memory holding the byte {@code at} past the head; with {@link #contiguous} it names a range to send in place. */
    MemorySegment memory() {
        return memory;
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
