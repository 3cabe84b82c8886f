package dev.nupa.tcp;

/**
 * Per-connection TCP settings (socket options), checked on construction; {@link #defaults(int)}
 * and the {@code with...} methods build them.
 *
 * @param mss              the MSS this end advertises (link MTU - 40)
 * @param sendBuffer       bytes the send buffer holds
 * @param receiveBuffer    bytes the receive buffer holds (the most this end advertises)
 * @param windowScaling    offer RFC 7323 window scaling
 * @param timestamps       offer RFC 7323 timestamps (RTTM and PAWS)
 * @param sack             offer RFC 2018 selective acknowledgment
 * @param noDelay          TCP_NODELAY: no Nagle (RFC 9293 3.7.4)
 * @param delayedAckNs     longest an ACK is delayed (RFC 1122 4.2.3.2: at most 500 ms; every second full segment is acked at once); 0 = off
 * @param minRtoNs         least retransmission timeout (RFC 6298 says 1 s; Linux 200 ms)
 * @param maxRtoNs         greatest (RFC 6298 2.5: at least 60 s)
 * @param synRetries       SYN (and SYN-ACK) retransmissions before the connect fails
 * @param maxRetries       data retransmissions of one segment before the connection is dropped (RFC 9293 3.8.3 R2)
 * @param timeWaitNs       TIME-WAIT length, 2*MSL (RFC 9293 3.4.2: MSL 2 minutes; Linux uses 60 s in all)
 * @param finWait2TimeoutNs how long a connection the application closed fully waits in FIN-WAIT-2 for
 *                         the peer's FIN before it is reset (Linux's tcp_fin_timeout, 60 s); 0 = wait for
 *                         ever. A half-closed connection that still reads waits for ever regardless (RFC 9293)
 * @param keepAliveIdleNs  idle time before keep-alive probes (RFC 1122 4.2.3.6: at least 2 hours by default); 0 = off
 * @param keepAliveIntervalNs time between unanswered probes
 * @param keepAliveProbes  unanswered probes before the connection is dropped
 * @param userTimeoutNs    RFC 5482 / RFC 9293 3.8.3: data unacknowledged this long drops the connection; 0 = off
 * @param congestionControl "newreno" or "cubic"
 * @param maxOutOfOrderRanges bound on out-of-order ranges kept
 */
public record TcpConfig(int mss, int sendBuffer, int receiveBuffer, boolean windowScaling, boolean timestamps, boolean sack,
                        boolean noDelay, long delayedAckNs, long minRtoNs, long maxRtoNs, int synRetries, int maxRetries,
                        long timeWaitNs, long finWait2TimeoutNs, long keepAliveIdleNs, long keepAliveIntervalNs,
                        int keepAliveProbes, long userTimeoutNs, String congestionControl, int maxOutOfOrderRanges) {
    public TcpConfig {
        check(mss >= 88 && mss <= 65_495, "MSS " + mss + " is outside 88..65495");
        check(sendBuffer >= mss && sendBuffer <= (1 << 30), "send buffer " + sendBuffer + " must hold at least one MSS and at most 1 GiB");
        check(receiveBuffer >= mss && receiveBuffer <= (1 << 30), "receive buffer " + receiveBuffer + " must hold at least one MSS and at most 1 GiB");
        check(delayedAckNs >= 0 && delayedAckNs <= 500_000_000L, "delayed ACK must be 0..500 ms (RFC 1122 4.2.3.2)");
        check(minRtoNs > 0 && maxRtoNs >= 60_000_000_000L && minRtoNs <= maxRtoNs, "RTO bounds need 0 < min <= max and max >= 60 s (RFC 6298 2.5)");
        check(synRetries >= 0 && maxRetries >= 1, "retries must be >= 0 (SYN) and >= 1 (data)");
        check(timeWaitNs >= 0, "TIME-WAIT must not be negative");
        check(finWait2TimeoutNs >= 0, "finWait2TimeoutNs is " + finWait2TimeoutNs
                + " ns; it must be 0 (wait for the peer's FIN for ever) or positive (Linux's tcp_fin_timeout is 60 s)");
        check(keepAliveIdleNs >= 0 && keepAliveIntervalNs > 0 && keepAliveProbes >= 1, "keep-alive needs idle >= 0, interval > 0, probes >= 1");
        check(userTimeoutNs >= 0, "user timeout must not be negative");
        check(congestionControl.equals("newreno") || congestionControl.equals("cubic"),
                "congestion control \"" + congestionControl + "\" is unknown; choose newreno or cubic");
        check(maxOutOfOrderRanges >= 1 && maxOutOfOrderRanges <= 1024, "out-of-order ranges must be 1..1024");
    }

    /** The MSS of an interface of {@code mtu}: the MTU less the IPv4 and TCP headers (RFC 9293 3.7.1). */
    public static int mssFor(int mtu) {
        return mtu - 40;
    }

    /** Defaults for a link of {@code mtu}: 256 KiB buffers, scaling, timestamps and SACK on, Nagle on, 40 ms delayed ACK, CUBIC. */
    public static TcpConfig defaults(int mtu) {
        return new TcpConfig(mssFor(mtu), 256 * 1024, 256 * 1024, true, true, true, false, 40_000_000L, 200_000_000L,
                120_000_000_000L, 6, 15, 60_000_000_000L, 60_000_000_000L, 0, 75_000_000_000L, 9, 0, "cubic", 64);
    }

    public TcpConfig withBuffers(int send, int receive) {
        return new TcpConfig(mss, send, receive, windowScaling, timestamps, sack, noDelay, delayedAckNs, minRtoNs,
                maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs, keepAliveIntervalNs,
                keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withOptions(boolean windowScaling, boolean timestamps, boolean sack) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs,
                keepAliveIntervalNs, keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withNoDelay(boolean on) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, on, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs,
                keepAliveIntervalNs, keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withDelayedAck(long ns) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, ns, minRtoNs,
                maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs, keepAliveIntervalNs,
                keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withRto(long minNs, long maxNs) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minNs, maxNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs,
                keepAliveIntervalNs, keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withRetries(int syn, int data) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, syn, data, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs, keepAliveIntervalNs,
                keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withTimeWait(long ns) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, ns, finWait2TimeoutNs, keepAliveIdleNs, keepAliveIntervalNs,
                keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    /** {@code ns}: how long FIN-WAIT-2 may last after a full close; 0 = for ever. */
    public TcpConfig withFinWait2Timeout(long ns) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, ns, keepAliveIdleNs, keepAliveIntervalNs,
                keepAliveProbes, userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withKeepAlive(long idleNs, long intervalNs, int probes) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, idleNs, intervalNs, probes,
                userTimeoutNs, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withUserTimeout(long ns) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs,
                keepAliveIntervalNs, keepAliveProbes, ns, congestionControl, maxOutOfOrderRanges);
    }

    public TcpConfig withCongestionControl(String name) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs,
                keepAliveIntervalNs, keepAliveProbes, userTimeoutNs, name, maxOutOfOrderRanges);
    }

    public TcpConfig withMaxOutOfOrder(int ranges) {
        return new TcpConfig(mss, sendBuffer, receiveBuffer, windowScaling, timestamps, sack, noDelay, delayedAckNs,
                minRtoNs, maxRtoNs, synRetries, maxRetries, timeWaitNs, finWait2TimeoutNs, keepAliveIdleNs,
                keepAliveIntervalNs, keepAliveProbes, userTimeoutNs, congestionControl, ranges);
    }

    /** RFC 7323 2.3: the least shift whose scaled 16-bit window covers the receive buffer, at most 14. */
    public int receiveWindowShift() {
        int shift = 0;
        while (shift < 14 && (65_535L << shift) < receiveBuffer) {
            shift++;
        }
        return shift;
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
