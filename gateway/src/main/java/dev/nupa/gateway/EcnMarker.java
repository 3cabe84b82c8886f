package dev.nupa.gateway;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * ECN marking at the gateway's queues, as a switch's RED/ECN with a step threshold does (DCTCP's and DCQCN's "K"):
 * an IPv4 datagram that is ECN-capable (ECT(0) or ECT(1)) and leaves while the queue it waited in is at least
 * {@link #threshold} frames deep is marked Congestion Experienced (RFC 3168 5); one that is not ECN-capable is left
 * alone (a router drops those instead; the gateway's queues push back and do not drop). The IPv4 header checksum is
 * updated incrementally (RFC 1624 3), so the rest of the datagram (a RoCEv2 ICRC, which masks the TOS byte,
 * IBA A17.4.1) stays valid.
 *
 * <p>The queue's depth is what the gateway's loop drains in one round: the loop reads its inputs in batches (up to
 * {@link EthernetInterface#BATCH} frames from the TAP, a fabric ring's backlog toward the TAP), so the k-th frame
 * handled in a round waited behind k-1 others. The count starts over at {@link #roundEnded} and whenever a datagram
 * comes at another {@code now} than the last (each round of the loop has its own).
 */
final class EcnMarker {
    /** Default threshold in frames: half a TAP read batch. */
    static final int DEFAULT_THRESHOLD = 32;
    static final int NOT_ECT = 0;
    static final int ECT_1 = 1;
    static final int ECT_0 = 2;
    static final int CE = 3;
    private static final ValueLayout.OfShort BE_SHORT = EthernetFrame.BE_SHORT;

    private int threshold;
    private int depth;
    /** The time of the round being counted: a datagram at another time starts a new round. */
    private long roundAt = Long.MIN_VALUE;

    EcnMarker(int threshold) {
        threshold(threshold);
    }

    /** Frames of backlog at or past which ECN-capable datagrams are marked; {@link Integer#MAX_VALUE}: never. */
    void threshold(int frames) {
        if (frames < 1) {
            throw new IllegalArgumentException("ECN threshold " + frames + " frames: must be at least 1 (Integer.MAX_VALUE"
                    + " turns marking off)");
        }
        this.threshold = frames;
    }

    int threshold() {
        return threshold;
    }

    /** The loop's round is over: the backlog it drained is gone. */
    void roundEnded() {
        depth = 0;
    }

    /**
     * One more datagram leaves in this round; marks it CE when it is ECN-capable and the frames ahead of it reach the
     * threshold. Returns whether it was marked. {@code length} bytes of IPv4 at {@code offset}, not yet validated.
     */
    boolean onDatagram(MemorySegment m, long offset, int length, long now) {
        if (now != roundAt) {
            roundAt = now;
            depth = 0;
        }
        int ahead = depth++;
        if (ahead < threshold || length < 20) {
            return false;
        }
        int vihl = m.get(ValueLayout.JAVA_BYTE, offset) & 0xFF;
        if (vihl >>> 4 != 4) {
            return false;
        }
        return markCe(m, offset);
    }

    /**
     * Sets CE in the IPv4 header at {@code offset} if it is ECT(0) or ECT(1), updating the header checksum as RFC 1624
     * eqn. 3 does: HC' = ~(~HC + ~m + m'), over the 16-bit word that holds version, IHL and TOS.
     */
    static boolean markCe(MemorySegment m, long offset) {
        int word = m.get(BE_SHORT, offset) & 0xFFFF;
        int ecn = word & 3;
        if (ecn == NOT_ECT || ecn == CE) {
            return false;
        }
        int marked = word | CE;
        int hc = m.get(BE_SHORT, offset + 10) & 0xFFFF;
        int sum = (~hc & 0xFFFF) + (~word & 0xFFFF) + marked;
        sum = (sum & 0xFFFF) + (sum >>> 16);
        sum = (sum & 0xFFFF) + (sum >>> 16);
        m.set(BE_SHORT, offset, (short) marked);
        m.set(BE_SHORT, offset + 10, (short) ~sum);
        return true;
    }
}
