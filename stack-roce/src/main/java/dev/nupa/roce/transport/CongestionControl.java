package dev.nupa.roce.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import dev.nupa.roce.verbs.QpType;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.wire.Bth;
import dev.nupa.roce.wire.Cnp;

/**
 * DCQCN for QPs that speak RoCEv2 to IP peers (Zhu et al., SIGCOMM 2015), in the roles a RoCEv2 NIC plays: the
 * notification point answers a datagram that arrived with ECN CE (RFC 3168) with a CNP (IBA annex A17.9) to the QP
 * that sent it, at most one per QP per {@link #cnpIntervalNs}; the reaction point takes CNPs and lowers the QP's rate
 * ({@link Dcqcn}), and the requester paces its packets to it. QPs with fabric peers are untouched: the fabric is
 * lossless and has no congestion point. Outgoing RoCEv2 is ECT(0), written by the IP layer.
 */
public final class CongestionControl {
    /** The rate of an unthrottled QP: a 100 Gbit/s port's. */
    public static final double DEFAULT_LINE_RATE = 100e9;
    /** mlx5's min_time_between_cnps default, in ns (one CNP per QP per 4 us). */
    public static final long DEFAULT_CNP_INTERVAL_NS = 4_000;
    private static final int ECN_CE = 3;

    private final RdmaDevice device;
    private boolean enabled = true;
    private double lineRate = DEFAULT_LINE_RATE;
    private long cnpIntervalNs = DEFAULT_CNP_INTERVAL_NS;

    CongestionControl(RdmaDevice device) {
        this.device = device;
    }

    /** Turns DCQCN on or off (on by default): off, CE is ignored, CNPs are counted and dropped, nothing is paced. */
    public void enabled(boolean on) {
        this.enabled = on;
    }

    public boolean enabled() {
        return enabled;
    }

    /** The line rate, bits per second, of QPs created after this call: where their rate starts and what it returns to. */
    public void lineRate(double bitsPerSecond) {
        if (!(bitsPerSecond >= Dcqcn.MIN_RATE)) {
            throw new IllegalArgumentException("line rate " + bitsPerSecond + " bit/s: must be at least " + Dcqcn.MIN_RATE);
        }
        this.lineRate = bitsPerSecond;
    }

    public double lineRate() {
        return lineRate;
    }

    /** The least time between two CNPs to one QP, ns (0: one per marked datagram). */
    public void cnpInterval(long ns) {
        if (ns < 0) {
            throw new IllegalArgumentException("CNP interval " + ns + " ns: must be 0 or more");
        }
        this.cnpIntervalNs = ns;
    }

    /** The reaction state of QP {@code qpn}, or null when there is no such QP; for tests and tools. */
    public Dcqcn rateOf(int qpn) {
        QpTransport qp = device.qp(qpn);
        return qp == null ? null : qp.requester.rate;
    }

    /**
     * A RoCEv2 datagram whose ICRC held, from {@code source}: its IPv4 header at {@code ipOffset} of {@code ip}, its
     * transport packet ({@code length} bytes, ICRC excluded) at {@code offset} of {@code data}. Returns true when it
     * was a CNP (taken here); otherwise, if it carries CE, a CNP goes back to its sender, and the packet goes on.
     */
    boolean onDatagram(int source, MemorySegment ip, long ipOffset, MemorySegment data, long offset, int length, long now) {
        if (length >= Bth.LENGTH && Bth.opcode(data, offset) == Cnp.OPCODE) {
            onCnp(source, data, offset, length, now);
            return true;
        }
        if (enabled && (ip.get(ValueLayout.JAVA_BYTE, ipOffset + 1) & 3) == ECN_CE && length >= Bth.LENGTH) {
            QpTransport qp = device.qp(Bth.destQp(data, offset));
            // RC only: the CNP names the sender's QP, which an RC QP knows as its peer (a UD sender is not tracked).
            if (qp != null && qp.type == QpType.RC && qp.attr.destIp == source
                    && qp.requester.rate.cnpDue(now, cnpIntervalNs)) {
                sendCnp(source, qp);
            }
        }
        return false;
    }

    private void onCnp(int source, MemorySegment data, long offset, int length, long now) {
        if (!Cnp.isCnp(data, offset, length)) {
            device.counters.add(RdmaCounter.MALFORMED, 1);
            return;
        }
        device.counters.add(RdmaCounter.CNPS_RECEIVED, 1);
        QpTransport qp = device.qp(Cnp.destQp(data, offset));
        if (qp == null || qp.type != QpType.RC || qp.attr.destIp != source) {
            device.counters.add(RdmaCounter.CNPS_UNKNOWN_QP, 1);
            return;
        }
        if (enabled) {
            qp.requester.rate.onCnp(now);
            device.counters.add(RdmaCounter.RATE_DECREASES, 1);
        }
    }

    /** Best effort, as a NIC's: a CNP that finds the way back-pressured is not sent (the next CE asks again). */
    private void sendCnp(int destination, QpTransport qp) {
        long o = device.claim(-1, destination, qp.qpn, Cnp.LENGTH);
        if (o < 0) {
            return;
        }
        Cnp.write(device.txMemory(), o, qp.attr.destQpNum);
        device.publish();
        device.counters.add(RdmaCounter.CNPS_SENT, 1);
    }
}
