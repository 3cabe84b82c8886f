package dev.nupa.device;

/** One node's counters, read from its node table entry. */
public record FabricCounters(long framesSent, long bytesSent, long backPressured, long sendsToDownPeers,
                             long lateDrops, long framesReceived, long bytesReceived, long stallSkips,
                             long wakeups, long discarded, long handlerErrors, long corrupt, long interruptsSent,
                             long interruptsReceived) {
}
