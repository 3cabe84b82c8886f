package dev.nupa.node.telemetry;

import dev.nupa.perf.TraceLog;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpError;
import dev.nupa.tcp.TcpObserver;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;

/**
 * A node's TCP as OpenTelemetry sees it: spans of connection openings ({@code tcp connect}, {@code tcp accept}) and
 * closings ({@code tcp close}), and histograms of round-trip times and handshakes. The layer's loop only copies
 * each event into a preallocated ring (no allocation, nothing built); a thread of its own drains the ring every
 * {@link #DRAIN_MS} ms and builds the spans and records the histograms. Events that find the ring full are counted
 * ({@link #dropped}), not kept.
 */
public final class TcpTelemetry extends TelemetryDrainer implements TcpObserver {
    static final int CAPACITY = 1 << 16;
    static final AttributeKey<String> LOCAL = AttributeKey.stringKey("nupa.tcp.local");
    static final AttributeKey<String> REMOTE = AttributeKey.stringKey("nupa.tcp.remote");
    static final AttributeKey<String> ERROR = AttributeKey.stringKey("nupa.tcp.error");

    private static final int RTT = 0;
    private static final int CONNECTED = 1;
    private static final int ACCEPTED = 2;
    private static final int CLOSED = 3;
    private static final TcpError[] ERRORS = TcpError.values();

    // The ring: one writer (the layer's loop), one reader (the drainer).
    private final int[] kind = new int[CAPACITY];
    private final long[] start = new long[CAPACITY];
    private final long[] end = new long[CAPACITY];
    private final int[] localIp = new int[CAPACITY];
    private final int[] ports = new int[CAPACITY];
    private final int[] remoteIp = new int[CAPACITY];
    private final int[] error = new int[CAPACITY];
    private final AtomicLong tail = new AtomicLong();
    private volatile long head;
    private long dropped; // written by the loop only

    private final long epochMinusNano = TraceLog.epochMinusNano();
    private volatile Tracer tracer;
    private volatile DoubleHistogram rtt;
    private volatile DoubleHistogram handshake;

    public TcpTelemetry() {
        super("nupa-tcp-telemetry");
        startDraining();
    }

    /** Spans of openings and closings go to {@code t} (null: none). */
    public void tracer(Tracer t) {
        this.tracer = t;
    }

    /** Round trips and handshakes (seconds) go to these histograms. */
    public void histograms(DoubleHistogram roundTrips, DoubleHistogram handshakes) {
        this.rtt = roundTrips;
        this.handshake = handshakes;
    }

    /** Events that found the ring full. */
    long dropped() {
        return dropped;
    }

    // ---- the layer's loop: copy and publish ------------------------------------------------

    @Override
    public void rttSample(TcpConnection c, long ns) {
        put(RTT, c, 0, ns, -1);
    }

    @Override
    public void established(TcpConnection c, boolean active, long openedAt, long now) {
        put(active ? CONNECTED : ACCEPTED, c, openedAt, now, -1);
    }

    @Override
    public void closed(TcpConnection c, TcpError e, long closingAt, long now) {
        put(CLOSED, c, closingAt, now, e == null ? -1 : e.ordinal());
    }

    private void put(int k, TcpConnection c, long from, long to, int err) {
        long t = tail.get();
        if (t - head >= CAPACITY) {
            dropped++;
            return;
        }
        int i = (int) t & (CAPACITY - 1);
        kind[i] = k;
        start[i] = from;
        end[i] = to;
        localIp[i] = c.localIp();
        ports[i] = c.localPort() << 16 | c.remotePort();
        remoteIp[i] = c.remoteIp();
        error[i] = err;
        tail.lazySet(t + 1); // the slot's stores before the tail's
    }

    // ---- the drainer -------------------------------------------------------------------------

    /** Whether the drainer has built everything the loop queued so far (a test waits on it, not on the drain period). */
    public synchronized boolean drained() {
        return head == tail.get();
    }

    /** Builds what the ring holds; on the drainer's thread (or the closer's, once the drainer is done). */
    @Override
    synchronized void drain() {
        long t = tail.get();
        for (long h = head; h < t; h++) {
            int i = (int) h & (CAPACITY - 1);
            switch (kind[i]) {
                case RTT -> {
                    DoubleHistogram r = rtt;
                    if (r != null) {
                        r.record(end[i] / 1e9);
                    }
                }
                case CONNECTED, ACCEPTED -> {
                    DoubleHistogram hs = handshake;
                    if (hs != null) {
                        hs.record((end[i] - start[i]) / 1e9);
                    }
                    span(i, kind[i] == CONNECTED ? "tcp connect" : "tcp accept", kind[i] == CONNECTED ? SpanKind.CLIENT : SpanKind.SERVER);
                }
                case CLOSED -> span(i, "tcp close", SpanKind.INTERNAL);
                default -> {
                }
            }
        }
        head = t;
    }

    private void span(int i, String name, SpanKind spanKind) {
        Tracer tr = tracer;
        if (tr == null) {
            return;
        }
        Span s = tr.spanBuilder(name).setNoParent().setSpanKind(spanKind)
                .setStartTimestamp(start[i] + epochMinusNano, TimeUnit.NANOSECONDS)
                .setAttribute(LOCAL, Ipv4Address.toString(localIp[i]) + ":" + (ports[i] >>> 16))
                .setAttribute(REMOTE, Ipv4Address.toString(remoteIp[i]) + ":" + (ports[i] & 0xFFFF)).startSpan();
        if (error[i] >= 0) {
            s.setAttribute(ERROR, ERRORS[error[i]].name());
            s.setStatus(StatusCode.ERROR, ERRORS[error[i]].name());
        }
        s.end(end[i] + epochMinusNano, TimeUnit.NANOSECONDS);
    }
}
