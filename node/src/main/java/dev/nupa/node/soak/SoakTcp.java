package dev.nupa.node.soak;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;

/**
 * TCP traffic of a soak: one connection at a time to each node's echo server, streaming a known byte pattern and
 * checking every byte that comes back. A connection ends cleanly after {@link #PER_CONNECTION} bytes and a new one
 * opens. One that breaks is expected only when its node was killed meanwhile (a reset, counted); otherwise it is a
 * failure, as is a wrong byte or a connection that stops moving while its node lives. Runs on the node's event loop.
 */
final class SoakTcp {
    static final long PER_CONNECTION = 32L << 20;
    private static final int CHUNK = 16 * 1024;
    private static final long IN_FLIGHT = 256 * 1024; // sent but not yet echoed
    private static final long STALL_NS = 30_000_000_000L;

    final AtomicLong bytesChecked = new AtomicLong();
    final AtomicLong connections = new AtomicLong();
    final AtomicLong resets = new AtomicLong();
    private final Vertx vertx;
    private final NetClient client;
    private final int port;
    private final SoakFailures failures;
    private volatile boolean stopping;
    private long nextStream;

    SoakTcp(Vertx vertx, int port, SoakFailures failures) {
        this.vertx = vertx;
        this.client = vertx.createNetClient();
        this.port = port;
        this.failures = failures;
    }

    /** The pattern's byte at {@code offset} of stream {@code stream}. */
    static byte pattern(long stream, long offset) {
        return (byte) (offset * 131 + (offset >>> 11) + stream * 7);
    }

    void start(List<SoakChild> nodes) {
        vertx.runOnContext(v -> nodes.forEach(this::open));
    }

    /** Ends the traffic: the connections close, and no new ones open. */
    void stop() {
        stopping = true;
        try {
            client.close().await(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            failures.add("tcp: the connections did not close within 10 s");
        }
    }

    private void open(SoakChild node) {
        if (stopping) {
            return;
        }
        if (!node.up) {
            vertx.setTimer(200, id -> open(node));
            return;
        }
        int generation = node.generation;
        long stream = nextStream++;
        client.connect(port, node.ip()).onComplete(ar -> {
            if (ar.failed()) {
                if (node.generation == generation) {
                    failures.add("tcp: connect to node " + node.address + " failed while it lived: " + ar.cause().getMessage());
                } else {
                    resets.incrementAndGet();
                }
                vertx.setTimer(200, id -> open(node));
                return;
            }
            connections.incrementAndGet();
            new Stream(node, generation, stream, ar.result()).run();
        });
    }

    private final class Stream {
        final SoakChild node;
        final int generation;
        final long id;
        final NetSocket s;
        long sent;
        long received;
        long lastProgress = System.nanoTime();
        boolean over;
        long timer;

        Stream(SoakChild node, int generation, long id, NetSocket s) {
            this.node = node;
            this.generation = generation;
            this.id = id;
            this.s = s;
        }

        void run() {
            s.handler(this::check);
            s.exceptionHandler(t -> finish("failed: " + t.getMessage(), false));
            s.closeHandler(v -> finish(received == PER_CONNECTION ? null : "closed after " + received + " of " + PER_CONNECTION
                    + " bytes", false));
            s.drainHandler(v -> send());
            timer = vertx.setPeriodic(1000, t -> {
                if (System.nanoTime() - lastProgress > STALL_NS) {
                    finish("made no progress for " + STALL_NS / 1_000_000_000 + " s", false);
                }
            });
            send();
        }

        void send() {
            while (!over && sent < PER_CONNECTION && sent - received < IN_FLIGHT && !s.writeQueueFull()) {
                int n = (int) Math.min(CHUNK, PER_CONNECTION - sent);
                byte[] b = new byte[n];
                for (int i = 0; i < n; i++) {
                    b[i] = pattern(id, sent + i);
                }
                sent += n;
                s.write(Buffer.buffer(b));
            }
        }

        void check(Buffer b) {
            if (over) {
                return;
            }
            int n = b.length();
            if (received + n > sent) {
                finish("echoed " + (received + n) + " bytes of " + sent + " sent", true);
                return;
            }
            for (int i = 0; i < n; i++) {
                byte want = pattern(id, received + i);
                if (b.getByte(i) != want) {
                    finish("byte " + (received + i) + " came back " + b.getByte(i) + ", sent " + want, true);
                    return;
                }
            }
            received += n;
            bytesChecked.addAndGet(n);
            lastProgress = System.nanoTime();
            if (received == PER_CONNECTION) {
                s.close(); // FIN; the echo server's pipe ends and closes too, and closeHandler opens the next
            } else {
                send();
            }
        }

        /**
         * The end of this connection, once: clean ({@code problem} null), a reset because its node was killed meanwhile
         * (expected, counted), or a failure. A wrong byte ({@code always}) is a failure whatever happened to the node.
         */
        void finish(String problem, boolean always) {
            if (over) {
                return;
            }
            over = true;
            vertx.cancelTimer(timer);
            if (problem != null) {
                if (!always && node.generation != generation) {
                    resets.incrementAndGet();
                } else if (always || !stopping) {
                    failures.add("tcp: node " + node.address + " connection " + id + " " + problem
                            + (always ? "" : " while its node lived"));
                }
                s.close();
            }
            if (!stopping) {
                vertx.setTimer(100, t -> open(node));
            }
        }
    }
}
