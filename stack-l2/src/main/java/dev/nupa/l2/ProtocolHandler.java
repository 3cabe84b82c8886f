package dev.nupa.l2;

import java.lang.foreign.MemorySegment;

/**
 * What an upper layer registers with {@link Link#register} for one protocol. Called in place on
 * the datapath thread: {@code [offset, offset + length)} of {@code memory} is the payload (the
 * link header already stripped) and belongs to the handler only until it returns, after which the
 * fabric slot is reused. Copy what must outlive the call. An exception is counted
 * ({@link DropReason#HANDLER_ERROR}) and the datapath goes on.
 */
@FunctionalInterface
public interface ProtocolHandler {
    void onPacket(int sourceNode, MemorySegment memory, long offset, int length);
}
