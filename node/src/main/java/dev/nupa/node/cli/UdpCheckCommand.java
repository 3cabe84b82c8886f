package dev.nupa.node.cli;

import dev.nupa.node.NupaNode;
import dev.nupa.node.options.CommandNode;
import dev.nupa.node.options.NodeOptions;
import java.nio.ByteBuffer;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import dev.nupa.ip.IpCounter;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `nupa udp-check`: sends datagrams of random sizes to a UDP echo server over the fabric, a window
 * at a time, and checks every echo: each datagram carries its number and a CRC32C of the rest, so
 * a lost, duplicated, changed or reordered echo is named. Exit status 0 only when all came back.
 */
@Command(name = "udp-check", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Send datagrams of random sizes to a UDP echo server and check every echo (count, order-free, CRC32C).")
final class UdpCheckCommand implements Callable<Integer> {
    @Parameters(paramLabel = "HOST", description = "IPv4 address of the echo server.")
    String host;

    @Option(names = "--port", defaultValue = "7", description = "Echo port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--count", defaultValue = "10000", description = "Datagrams to send (default: ${DEFAULT-VALUE}).")
    int count;

    @Option(names = "--max-size", defaultValue = "60000", description = "Largest datagram, bytes; sizes are uniform in 12..max (default: ${DEFAULT-VALUE}).")
    int maxSize;

    @Option(names = "--window", defaultValue = "8", description = "Datagrams in flight (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--timeout", defaultValue = "120", description = "Seconds allowed for the whole run (default: ${DEFAULT-VALUE}).")
    int timeout;

    @Option(names = "--seed", defaultValue = "1", description = "Random seed of the sizes and bytes.")
    long seed;

    @Mixin
    NodeOptions options;

    @Override
    public Integer call() throws Exception {
        if (count < 1 || maxSize < 12 || maxSize > 65_507 || window < 1) {
            throw new IllegalArgumentException("need --count >= 1, 12 <= --max-size <= 65507 and --window >= 1");
        }
        options.requireExistingFabric("udp-check");
        return CommandNode.run(options, (vertx, node) -> run(vertx, node));
    }

    private int run(Vertx vertx, NupaNode node) throws Exception {
        DatagramSocket socket = vertx.createDatagramSocket(); // Vert.x's own, on the node's transport
        boolean[] echoed = new boolean[count];
        AtomicLong good = new AtomicLong();
        AtomicLong bad = new AtomicLong();
        AtomicLong duplicates = new AtomicLong();
        AtomicLong failedSends = new AtomicLong();
        AtomicLong bytes = new AtomicLong();
        CompletableFuture<Void> done = new CompletableFuture<>();
        SplittableRandom random = new SplittableRandom(seed);
        int[] next = {0};
        CRC32C crc = new CRC32C();
        Runnable[] sendNext = new Runnable[1];
        sendNext[0] = () -> {
            if (next[0] >= count) {
                return;
            }
            int i = next[0]++;
            byte[] d = new byte[12 + random.nextInt(maxSize - 11)];
            random.nextBytes(d);
            ByteBuffer bb = ByteBuffer.wrap(d);
            bb.putInt(0, i);
            crc.reset();
            crc.update(d, 8, d.length - 8);
            bb.putInt(4, (int) crc.getValue());
            socket.send(Buffer.buffer(d), port, host).onFailure(t -> {
                if (failedSends.incrementAndGet() == 1) {
                    System.err.println("nupa udp-check: send failed: " + t.getMessage());
                }
                finish(good, bad, failedSends, done);
            });
        };
        CRC32C check = new CRC32C();
        socket.handler(dg -> {
            byte[] d = dg.data().getBytes();
            int i = d.length >= 12 ? ByteBuffer.wrap(d).getInt(0) : -1;
            check.reset();
            check.update(d, 8, Math.max(0, d.length - 8));
            if (i < 0 || i >= count || ByteBuffer.wrap(d).getInt(4) != (int) check.getValue()) {
                bad.incrementAndGet();
            } else if (echoed[i]) {
                duplicates.incrementAndGet();
            } else {
                echoed[i] = true;
                good.incrementAndGet();
                bytes.addAndGet(d.length);
            }
            sendNext[0].run();
            finish(good, bad, failedSends, done);
        });
        socket.listen(0, "0.0.0.0").await(5, TimeUnit.SECONDS);
        long start = System.nanoTime();
        vertx.runOnContext(v -> {
            for (int w = 0; w < window; w++) {
                sendNext[0].run();
            }
        });
        try {
            done.get(timeout, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            // reported below as missing echoes
        }
        double secs = (System.nanoTime() - start) / 1e9;
        long missing = count - good.get();
        System.out.printf(Locale.ROOT, "udp-check: %d datagrams of 12..%d bytes to %s:%d: %d echoed intact, %d missing, "
                        + "%d corrupt, %d duplicate, %d sends failed; %.1f MB each way in %.2f s (%.0f datagrams/s)%n",
                count, maxSize, host, port, good.get(), missing, bad.get(), duplicates.get(), failedSends.get(),
                bytes.get() / 1e6, secs, good.get() / secs);
        if (missing > 0) {
            int shown = 0;
            StringBuilder sb = new StringBuilder("udp-check: missing, e.g.:");
            for (int i = 0; i < count && shown < 10; i++) {
                if (!echoed[i]) {
                    sb.append(' ').append(i);
                    shown++;
                }
            }
            System.out.println(sb + "; node counters: " + node.ip().counters().entrySet().stream()
                    .filter(e -> e.getValue() != 0).map(e -> e.getKey().label() + "=" + e.getValue()).toList());
        }
        socket.close();
        boolean ok = missing == 0 && bad.get() == 0 && duplicates.get() == 0 && failedSends.get() == 0
                && node.ip().counter(IpCounter.UDP_RCVBUF_ERRORS) == 0;
        return ok ? 0 : 1;
    }

    private void finish(AtomicLong good, AtomicLong bad, AtomicLong failed, CompletableFuture<Void> done) {
        if (good.get() + bad.get() + failed.get() >= count) {
            done.complete(null);
        }
    }
}
