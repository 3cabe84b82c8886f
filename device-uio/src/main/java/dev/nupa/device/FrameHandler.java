package dev.nupa.device;

import java.lang.foreign.MemorySegment;

/**
 * Receives frames in place. The bytes {@code [offset, offset + length)} of {@code memory} belong
 * to the handler only until it returns; then the slot goes back to the producers.
 */
@FunctionalInterface
public interface FrameHandler {
    void onFrame(int source, MemorySegment memory, long offset, int length);
}
