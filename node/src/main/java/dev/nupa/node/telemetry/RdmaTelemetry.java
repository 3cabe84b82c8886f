package dev.nupa.node.telemetry;

import dev.nupa.perf.TraceLog;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaObserver;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;

/**
 * A node's RDMA work requests as OpenTelemetry sees them, whoever posts them: one signaled send in
 * {@link #SAMPLE_EVERY} is timed from its post to its completion and becomes a span ({@code rdma IBV_WR_...}) and a
 * point of the {@code nupa.rdma.work_request.duration} histogram. On the context's thread it only notes the post
 * time in a preallocated table and, on the completion, copies the result into a preallocated ring (no allocation);
 * a thread of its own builds spans and records points every {@link TelemetryDrainer#DRAIN_MS} ms.
 */
public final class RdmaTelemetry extends TelemetryDrainer implements RdmaObserver {
    public static final int SAMPLE_EVERY = 64;
    /** The attributes of a work request's span, here and on the gRPC Verbs service's spans. */
    public static final AttributeKey<Long> QP_NUM = AttributeKey.longKey("nupa.qp_num");
    public static final AttributeKey<Long> WR_ID = AttributeKey.longKey("nupa.wr_id");
    public static final AttributeKey<String> STATUS = AttributeKey.stringKey("nupa.wc_status");
    private static final int PENDING = 4096;
    private static final int PROBES = 8;
    private static final int RING = 1 << 14;

    // The context's thread: sampled posts waiting for their completion (open addressing; key 0 = free).
    private final long[] pendingKey = new long[PENDING];
    private final long[] pendingAt = new long[PENDING];
    private final int[] pendingOp = new int[PENDING];
    private int pendingCount;
    private int countdown = SAMPLE_EVERY;

    // Completed samples, from the context's thread to the drainer.
    private final long[] ringStart = new long[RING];
    private final long[] ringEnd = new long[RING];
    private final long[] ringWrId = new long[RING];
    private final int[] ringQp = new int[RING];
    private final int[] ringOp = new int[RING];
    private final int[] ringStatus = new int[RING];
    private final AtomicLong tail = new AtomicLong();
    private volatile long head;
    private long dropped;

    private final long epochMinusNano = TraceLog.epochMinusNano();
    private volatile Tracer tracer;
    private volatile DoubleHistogram duration;

    public RdmaTelemetry() {
        super("nupa-rdma-telemetry");
        startDraining();
    }

    public void tracer(Tracer t) {
        this.tracer = t;
    }

    public void histogram(DoubleHistogram h) {
        this.duration = h;
    }

    /** Samples lost: no room in the table or the ring. */
    long dropped() {
        return dropped;
    }

    private static long key(int qpNum, long wrId) {
        return ((long) qpNum << 40 ^ wrId) | Long.MIN_VALUE; // never 0
    }

    @Override
    public void posted(QueuePair qp, SendWorkRequest wr, long now) {
        if (--countdown > 0) {
            return;
        }
        countdown = SAMPLE_EVERY;
        long k = key(qp.qpNum(), wr.wrId);
        int at = (int) (k ^ k >>> 29) & (PENDING - 1);
        for (int p = 0; p < PROBES; p++) {
            int i = (at + p) & (PENDING - 1);
            if (pendingKey[i] == 0 || pendingKey[i] == k) {
                if (pendingKey[i] == 0) {
                    pendingCount++;
                }
                pendingKey[i] = k;
                pendingAt[i] = now;
                pendingOp[i] = wr.opcode;
                return;
            }
        }
        pendingKey[at] = k; // crowded: the oldest guess goes (a request that never completed, as on a destroyed QP)
        pendingAt[at] = now;
        pendingOp[at] = wr.opcode;
        dropped++;
    }

    @Override
    public void completed(int qpNum, long wrId, int opcode, int status, long now) {
        if (pendingCount == 0) {
            return;
        }
        long k = key(qpNum, wrId);
        int at = (int) (k ^ k >>> 29) & (PENDING - 1);
        for (int p = 0; p < PROBES; p++) {
            int i = (at + p) & (PENDING - 1);
            if (pendingKey[i] == k) {
                pendingKey[i] = 0;
                pendingCount--;
                publish(qpNum, wrId, pendingOp[i], status, pendingAt[i], now);
                return;
            }
        }
    }

    private void publish(int qpNum, long wrId, int op, int status, long from, long to) {
        long t = tail.get();
        if (t - head >= RING) {
            dropped++;
            return;
        }
        int i = (int) t & (RING - 1);
        ringQp[i] = qpNum;
        ringWrId[i] = wrId;
        ringOp[i] = op;
        ringStatus[i] = status;
        ringStart[i] = from;
        ringEnd[i] = to;
        tail.lazySet(t + 1);
    }

    @Override
    synchronized void drain() {
        long t = tail.get();
        for (long h = head; h < t; h++) {
            int i = (int) h & (RING - 1);
            DoubleHistogram d = duration;
            if (d != null) {
                d.record((ringEnd[i] - ringStart[i]) / 1e9);
            }
            Tracer tr = tracer;
            if (tr != null) {
                Span s = tr.spanBuilder("rdma " + WrOpcode.name(ringOp[i])).setNoParent()
                        .setStartTimestamp(ringStart[i] + epochMinusNano, TimeUnit.NANOSECONDS)
                        .setAttribute(QP_NUM, (long) ringQp[i]).setAttribute(WR_ID, ringWrId[i])
                        .setAttribute(STATUS, WcStatus.name(ringStatus[i])).startSpan();
                if (ringStatus[i] != WcStatus.SUCCESS) {
                    s.setStatus(StatusCode.ERROR, WcStatus.name(ringStatus[i]));
                }
                s.end(ringEnd[i] + epochMinusNano, TimeUnit.NANOSECONDS);
            }
        }
        head = t;
    }
}
