package dev.nupa.roce.verbs;

import java.lang.foreign.MemorySegment;

/**
 * What takes a context's QP 1 traffic (IBA 13.4: the general services interface), as a MAD agent registers with
 * Linux's ib_mad: the connection manager. It runs on the context's thread.
 */
public interface GsiAgent {
    /**
     * A UD SEND to QP 1 from fabric node {@code srcNode}, or (node -1) from IP peer {@code srcIp}, with the Q_Key of
     * its DETH; its payload (the MAD) is {@code length} bytes at {@code offset} of {@code m}, valid during the call.
     */
    void onMessage(int srcNode, int srcIp, int qkey, MemorySegment m, long offset, int length);

    /** Runs the agent's timers; returns when it wants to run again ({@code Long.MAX_VALUE}: not before a message). */
    long poll(long now);
}
