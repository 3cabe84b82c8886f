package dev.nupa.tcp;

/**
 * Drives a congestion controller on virtual time the way a sender that keeps its window full sees
 * ACKs: each RTT, the window sent at its start comes back as ACKs spread evenly over the RTT, and
 * the sender refills the window after each, so FlightSize before every ACK equals cwnd.
 */
final class AckClock {
    private AckClock() {
    }

    /**
     * One RTT of ACKs, each acknowledging {@code bytesPerAck}, for the window as it stood at
     * {@code now}.
     *
     * @return the time at the end of the RTT (the last ACK's time)
     */
    static long oneRtt(CongestionControl cc, long now, long rttNs, int bytesPerAck) {
        int window = cc.cwnd();
        int acks = Math.max(1, window / bytesPerAck);
        for (int i = 1; i <= acks; i++) {
            cc.onAck(now + rttNs * i / acks, bytesPerAck, rttNs, cc.cwnd());
        }
        return now + rttNs;
    }

    /** RTTs of ACKs until {@code until} is reached; returns the time after the last full RTT. */
    static long until(CongestionControl cc, long now, long until, long rttNs, int bytesPerAck) {
        while (now + rttNs <= until) {
            now = oneRtt(cc, now, rttNs, bytesPerAck);
        }
        return now;
    }
}
