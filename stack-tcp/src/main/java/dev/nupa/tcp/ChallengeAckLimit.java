package dev.nupa.tcp;

/**
 * RFC 5961 section 7: at most {@link TcpConnection#CHALLENGE_ACKS_PER_SECOND} challenge ACKs in any one-second
 * window, for a connection or for its layer's TIME-WAIT records. Driven with {@code now}; allocation-free.
 */
final class ChallengeAckLimit {
    private long windowStart;
    private int sent;

    /** Whether one more challenge ACK may leave at {@code now}; counts it if so. */
    boolean tryTake(long now) {
        if (now - windowStart >= 1_000_000_000L) {
            windowStart = now;
            sent = 0;
        }
        if (sent < TcpConnection.CHALLENGE_ACKS_PER_SECOND) {
            sent++;
            return true;
        }
        return false;
    }

    /** As new (a reused connection starts over). */
    void clear() {
        windowStart = 0;
        sent = 0;
    }
}
