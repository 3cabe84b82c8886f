package dev.nupa.ip;

/**
 * A token bucket driven with {@code now}: {@code rate} tokens a second, at most {@code burst}
 * saved. Used to rate-limit ICMP errors (RFC 1812 4.3.2.8; RFC 1122 3.2.2). Thread-safe (senders
 * and the datapath both ask), allocation-free.
 */
final class TokenBucket {
    private final long nanosPerToken;
    private final long depthNs;
    private long availableSince; // tokens = (now - availableSince) / nanosPerToken, capped at burst

    TokenBucket(int perSecond, int burst) {
        this.nanosPerToken = perSecond == 0 ? Long.MAX_VALUE : 1_000_000_000L / perSecond;
        this.depthNs = perSecond == 0 ? 0 : nanosPerToken * burst;
        this.availableSince = Long.MIN_VALUE / 4;
    }

    synchronized boolean tryTake(long now) {
        if (nanosPerToken == Long.MAX_VALUE) {
            return false;
        }
        if (now - availableSince > depthNs) {
            availableSince = now - depthNs; // a full bucket, no more
        }
        if (now - availableSince >= nanosPerToken) {
            availableSince += nanosPerToken;
            return true;
        }
        return false;
    }
}
