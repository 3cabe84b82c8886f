package dev.nupa.node.soak;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramPacket;
import io.vertx.core.datagram.DatagramSocket;

/**
 * UDP traffic of a soak: sequence-numbered datagrams of varied length to each node's echo server, a window at a time,
 * each echo checked byte for byte against what was sent. A datagram not back within {@link #LOST_NS} is lost: expected
 * when its node was killed after it was sent (counted), a failure otherwise (the fabric is lossless). Runs on the
 * node's event loop.
 */
final class SoakUdp {
    private static final int WINDOW = 32; // per node
    private static final long LOST_NS = 5_000_000_000L;

    private record Sent(SoakChild node, int generation, int length, long at) {
    }

    final AtomicLong bytesChecked = new AtomicLong();
    final AtomicLong datagrams = new AtomicLong();
    final AtomicLong lost = new AtomicLong();
    private final Vertx vertx;
    private final int port;
    private final SoakFailures failures;
    private final SplittableRandom random;
    private final Map<Long, Sent> outstanding = new HashMap<>();
    private final Map<SoakChild, Integer> inFlight = new HashMap<>();
    private DatagramSocket socket;
    private long nextSeq;
    private long pump;
    private volatile boolean stopping;

    SoakUdp(Vertx vertx, int port, long seed, SoakFailures failures) {
        this.vertx = vertx;
        this.port = port;
        this.random = new SplittableRandom(seed);
        this.failures = failures;
    }

    /** Datagram {@code seq}: its sequence number, then a pattern that follows from it. */
    static void fill(Buffer b, long seq, int length) {
        b.appendLong(seq);
        for (int i = 8; i < length; i++) {
            b.appendByte((byte) (seq * 31 + i * 17));
        }
    }

    void start(List<SoakChild> nodes) throws Exception {
        socket = vertx.createDatagramSocket();
        socket.handler(this::echoed);
        socket.listen(0, "0.0.0.0").await(5, TimeUnit.SECONDS);
        vertx.runOnContext(v -> pump = vertx.setPeriodic(2, t -> {
            for (SoakChild n : nodes) {
                send(n);
            }
            sweep();
        }));
    }

    void stop() {
        stopping = true;
        vertx.runOnContext(v -> vertx.cancelTimer(pump));
        try {
            socket.close().await(5, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            failures.add("udp: the socket did not close within 5 s");
        }
    }

    private void send(SoakChild n) {
        int generation = n.generation;
        while (n.up && inFlight.getOrDefault(n, 0) < WINDOW) {
            int length = 8 + random.nextInt(1400);
            long seq = nextSeq++;
            Buffer b = Buffer.buffer(length);
            fill(b, seq, length);
            outstanding.put(seq, new Sent(n, generation, length, System.nanoTime()));
            inFlight.merge(n, 1, Integer::sum);
            socket.send(b, port, n.ip());
        }
    }

    private void echoed(DatagramPacket p) {
        Buffer b = p.data();
        if (b.length() < 8) {
            failures.add("udp: an echo of " + b.length() + " bytes, shorter than a sequence number");
            return;
        }
        long seq = b.getLong(0);
        Sent s = outstanding.remove(seq);
        if (s == null) {
            failures.add("udp: an echo of datagram " + seq + ", which is not outstanding (a duplicate, or a changed number)");
            return;
        }
        inFlight.merge(s.node(), -1, Integer::sum);
        Buffer want = Buffer.buffer(s.length());
        fill(want, seq, s.length());
        if (!want.equals(b)) {
            failures.add("udp: node " + s.node().address + " echoed datagram " + seq + " changed (" + b.length() + " bytes, sent "
                    + s.length() + ")");
            return;
        }
        datagrams.incrementAndGet();
        bytesChecked.addAndGet(b.length());
    }

    private void sweep() {
        long now = System.nanoTime();
        var it = outstanding.entrySet().iterator();
        while (it.hasNext()) {
            var e = it.next();
            Sent s = e.getValue();
            if (now - s.at() > LOST_NS) {
                it.remove();
                inFlight.merge(s.node(), -1, Integer::sum);
                if (s.node().generation != s.generation()) {
                    lost.incrementAndGet();
                } else if (!stopping) {
                    failures.add("udp: datagram " + e.getKey() + " to node " + s.node().address + " was lost while its node lived");
                }
            }
        }
    }
}
