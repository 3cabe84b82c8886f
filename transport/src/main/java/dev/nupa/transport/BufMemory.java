package dev.nupa.transport;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import io.netty.buffer.ByteBuf;

/**
 * A ByteBuf's bytes as a (segment, offset) the stack copies to or from, without a new segment per
 * call where it can: a direct buffer's bytes are addressed in one segment over all native memory
 * (offset = the buffer's address), a heap buffer's in a segment over its array kept while the same
 * array comes back (Vert.x writes the same buffer's array over and over). Only the bounds of the
 * live buffer are ever used, so the segment's unbounded size is never reached.
 */
final class BufMemory {
    /** All native memory: offsets are addresses. Restricted (native access), as the fabric's mapping already is. */
    private static final MemorySegment NATIVE = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private byte[] array;
    private MemorySegment arraySegment;
    private MemorySegment segment;
    private long offset;

    /** Points at {@code length} bytes of {@code buf} from {@code index}; then read {@link #segment()} at {@link #offset()}. */
    void of(ByteBuf buf, int index, int length) {
        if (buf.hasMemoryAddress()) {
            segment = NATIVE;
            offset = buf.memoryAddress() + index;
        } else if (buf.hasArray()) {
            of(buf.array(), buf.arrayOffset() + index);
        } else {
            // One view (a composite's parts go one by one: PartsSink). A heap ByteBuffer's bytes by its array.
            ByteBuffer nio = buf.nioBuffer(index, length);
            if (nio.hasArray()) {
                of(nio.array(), nio.arrayOffset() + nio.position());
            } else {
                segment = MemorySegment.ofBuffer(nio);
                offset = 0;
            }
        }
    }

    /** Points at {@code a} from {@code at}. */
    void of(byte[] a, int at) {
        if (a != array) {
            array = a;
            arraySegment = MemorySegment.ofArray(a);
        }
        segment = arraySegment;
        offset = at;
    }

    MemorySegment segment() {
        return segment;
    }

    long offset() {
        return offset;
    }

    /** Lets go of a heap array held between calls (the channel is done with it). */
    void clear() {
        array = null;
        arraySegment = null;
        segment = null;
    }
}
