package dev.nupa.node.cli;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import dev.nupa.node.options.CommandNode;
import dev.nupa.node.options.NodeOptions;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpState;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetClientOptions;
import io.vertx.core.net.NetSocket;
import io.vertx.core.streams.WriteStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `nupa tcp-check`: opens connections to a TCP echo server over the fabric with Vert.x's NetClient,
 * all at once (or a window at a time), sends each its own random bytes, checks the echo (length and
 * CRC32C), closes, and then checks that no connection is left open (TIME-WAIT, which the closing side
 * owes, is counted apart; --wait-time-wait waits it out). Exit status 0 only when every connection
 * echoed intact and closed cleanly.
 */
@Command(name = "tcp-check", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Open connections to a TCP echo server, check every echoed byte, close, and check nothing is left.")
final class TcpCheckCommand implements Callable<Integer> {
    @Parameters(paramLabel = "HOST", description = "IPv4 address of the echo server.")
    String host;

    @Option(names = "--port", defaultValue = "7", description = "Echo port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--connections", defaultValue = "100", description = "Connections (default: ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--window", defaultValue = "0", description = "Connections open at once (default: all).")
    int window;

    @Option(names = "--bytes", defaultValue = "100000", description = "Bytes each connection sends and gets back (default: ${DEFAULT-VALUE}).")
    long bytes;

    @Option(names = "--timeout", defaultValue = "300", description = "Seconds allowed for the whole run (default: ${DEFAULT-VALUE}).")
    int timeout;

    @Option(names = "--wait-time-wait", description = "Wait until the connections' TIME-WAIT is over too (--tcp-time-wait sets it).")
    boolean waitTimeWait;

    @Mixin
    NodeOptions options;

    @Mixin
    TcpSocketOptions sockets;

    @Override
    public Integer call() throws Exception {
        if (connections < 1 || bytes < 1 || window < 0) {
            throw new IllegalArgumentException("need --connections >= 1, --bytes >= 1 and --window >= 0");
        }
        // Checked before the node starts; the socket options become the node's TCP defaults.
        NodeConfig nodeConfig = options.config();
        TcpConfig config = sockets.firstGiven() != null ? sockets.apply(nodeConfig.tcpOrDefault()) : nodeConfig.tcpOrDefault();
        options.requireExistingFabric("tcp-check"); // after the options: a wrong one is named first
        return CommandNode.run(nodeConfig.withTcp(config), (vertx, node) -> run(vertx, node, config));
    }

    private int run(Vertx vertx, NupaNode node, TcpConfig config) throws Exception {
        System.out.println("tcp-check: socket options: " + sockets.describe(config));
        NetClient client = vertx.createNetClient(sockets.vertxOptions(new NetClientOptions(), config));
        AtomicInteger intact = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger closed = new AtomicInteger();
        AtomicLong echoed = new AtomicLong();
        AtomicInteger started = new AtomicInteger();
        CompletableFuture<Void> done = new CompletableFuture<>();
        String[] firstError = new String[1];
        int inFlight = window == 0 ? connections : Math.min(window, connections);
        byte[] pattern = new byte[(int) Math.min(bytes, 1 << 20)];
        new SplittableRandom(1).nextBytes(pattern);
        Runnable[] next = new Runnable[1];
        next[0] = () -> {
            int i = started.getAndIncrement();
            if (i >= connections) {
                return;
            }
            // One shared pattern, each connection reading it from its own offset: nothing is generated per connection
            // before it connects, and a byte handed to the wrong connection still fails its check.
            int from = (int) ((i * 4099L) % pattern.length);
            client.connect(port, host).onComplete(ar -> {
                if (ar.failed()) {
                    failure(firstError, "connection " + i + ": " + ar.cause().getMessage(), failed, done, intact, closed);
                    next[0].run();
                    return;
                }
                NetSocket s = ar.result();
                CRC32C want = new CRC32C();
                forEachPiece(pattern, from, bytes, want::update);
                CRC32C got = new CRC32C();
                long[] count = {0};
                s.handler(b -> {
                    byte[] chunk = b.getBytes();
                    got.update(chunk);
                    count[0] += chunk.length;
                    echoed.addAndGet(chunk.length);
                    if (count[0] == bytes) {
                        if (got.getValue() == want.getValue()) {
                            intact.incrementAndGet();
                        } else {
                            failure(firstError, "connection " + i + ": echo changed", failed, done, intact, closed);
                        }
                        // FIN (or, with --linger 0, RST); the server's pipe ends and closes too
                        s.close().onFailure(t -> failure(firstError, "connection " + i + ": " + t.getMessage(), failed,
                                done, intact, closed));
                    }
                });
                s.exceptionHandler(t -> failure(firstError, "connection " + i + ": " + t.getMessage(), failed, done, intact,
                        closed));
                s.closeHandler(v -> {
                    closed.incrementAndGet();
                    finish(done, intact, failed, closed);
                    next[0].run();
                });
                writePaced(s, pattern, from, bytes);
            });
        };
        long start = System.nanoTime();
        vertx.runOnContext(v -> {
            for (int w = 0; w < inFlight; w++) {
                next[0].run();
            }
        });
        try {
            done.get(timeout, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            // reported below
        }
        double secs = (System.nanoTime() - start) / 1e9;
        client.close().await(10, TimeUnit.SECONDS);
        // No state may outlive the run but TIME-WAIT (RFC 9293 3.6.1: the side that closes first waits
        // 2 MSL): wait a little for the last FINs, then count what is left. --wait-time-wait waits it out.
        long waitUntil = System.nanoTime() + (waitTimeWait ? node.tcp().defaults().timeWaitNs() : 0) + 5_000_000_000L;
        Map<TcpState, Integer> states = node.tcp().states(); // one snapshot, taken on the node's loop
        while (remaining(states, waitTimeWait) > 0 && System.nanoTime() < waitUntil) {
            Thread.sleep(20);
            states = node.tcp().states();
        }
        int timeWait = states.getOrDefault(TcpState.TIME_WAIT, 0);
        int left = remaining(states, false);
        System.out.printf(Locale.ROOT, "tcp-check: %d connections of %d bytes to %s:%d: %d echoed intact, %d failed, %d closed, "
                        + "%d left open, %d in TIME-WAIT; %.1f MB echoed in %.2f s%n", connections, bytes, host, port, intact.get(),
                failed.get(), closed.get(), left, timeWait, echoed.get() / 1e6, secs);
        if (firstError[0] != null) {
            System.out.println("tcp-check: first failure: " + firstError[0]);
        }
        return intact.get() == connections && failed.get() == 0 && closed.get() == connections && left == 0 ? 0 : 1;
    }

    /** Connections in {@code states}: all of them, or all but those in TIME-WAIT. */
    private static int remaining(Map<TcpState, Integer> states, boolean withTimeWait) {
        int n = 0;
        for (Map.Entry<TcpState, Integer> e : states.entrySet()) {
            if (withTimeWait || e.getKey() != TcpState.TIME_WAIT) {
                n += e.getValue();
            }
        }
        return n;
    }

    private void failure(String[] first, String what, AtomicInteger failed, CompletableFuture<Void> done,
                         AtomicInteger intact, AtomicInteger closed) {
        synchronized (first) {
            if (first[0] == null) {
                first[0] = what;
            }
        }
        failed.incrementAndGet();
        finish(done, intact, failed, closed);
    }

    private void finish(CompletableFuture<Void> done, AtomicInteger intact, AtomicInteger failed, AtomicInteger closed) {
        if (closed.get() + failed.get() >= connections && closed.get() >= intact.get()) {
            done.complete(null);
        }
    }

    /** A piece of a pattern: {@code pattern[offset, offset + length)}. */
    interface Piece {
        void accept(byte[] pattern, int offset, int length);
    }

    /** Hands {@code total} bytes of {@code pattern}, read cyclically from {@code from}, to {@code to} in pieces. */
    static void forEachPiece(byte[] pattern, int from, long total, Piece to) {
        int at = from;
        for (long left = total; left > 0; ) {
            int n = (int) Math.min(left, pattern.length - at);
            to.accept(pattern, at, n);
            left -= n;
            at = (at + n) % pattern.length;
        }
    }

    /**
     * Writes {@code total} bytes of {@code pattern} (cyclically from {@code from}) in pieces of at most 64 KiB as the
     * socket's write queue drains, the way applications meet back-pressure (writeQueueFull, then the drain handler).
     */
    static void writePaced(WriteStream<Buffer> s, byte[] pattern, int from, long total) {
        long[] sent = {0};
        int[] at = {from};
        Runnable pump = () -> {
            while (sent[0] < total && !s.writeQueueFull()) {
                int n = (int) Math.min(Math.min(64 * 1024, total - sent[0]), pattern.length - at[0]);
                s.write(Buffer.buffer(java.util.Arrays.copyOfRange(pattern, at[0], at[0] + n)));
                sent[0] += n;
                at[0] = (at[0] + n) % pattern.length;
            }
        };
        s.drainHandler(v -> pump.run());
        pump.run();
    }
}
