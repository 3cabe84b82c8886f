package dev.nupa.l2;

import java.lang.foreign.MemorySegment;

/**
 * Receives a copy of every frame a {@link Link} sends or receives, while set with
 * {@link Link#setCapture}. Called on the thread that sends or polls (the datapath thread), in place:
 * {@code [off, off + len)} of {@code mem} is the payload after the link header, valid only during the
 * call. An exception is counted by the link and otherwise ignored.
 */
@FunctionalInterface
public interface PacketCapture {
    /**
     * @param timestampNanos nanoseconds since the Unix epoch
     * @param outbound       true for a frame this node sent, false for one it received
     */
    void capture(long timestampNanos, boolean outbound, int srcNode, int dstNode, int protocol,
                 MemorySegment mem, long off, int len);
}
