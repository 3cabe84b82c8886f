package dev.nupa.ip;

import java.lang.foreign.MemorySegment;

/** Receives ICMP echo replies (and errors about echo requests) for one identifier; called on the datapath thread, in place. */
public interface EchoListener {
    void onEchoReply(int from, int sequence, int ttl, MemorySegment data, long offset, int length, long now);

    /** An ICMP error about an echo request of this identifier (e.g. destination unreachable, time exceeded). */
    default void onError(int from, int type, int code, int sequence, long now) {
    }
}
