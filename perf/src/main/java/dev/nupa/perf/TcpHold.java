package dev.nupa.perf;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.tcp.TcpLayer;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf tcp-hold`: the memory a node holds for connections whose peer never reads. A Vert.x server on
 * fabric node 0 (this process) writes to every connection until its write queue is full; a client on node 1
 * (a child JVM) opens {@code --connections} connections and never reads them; then it is killed (SIGKILL; the
 * node learns it from the fabric's liveness) or, with {@code --end close}, closes them all (a close with unread data
 * resets, as Linux's does). Prints this process's RSS (VmRSS of /proc/self/status) idle, holding the connections,
 * and 5 s after the client's end, with the TCP layer's buffer memory; exits 1 if a connection was still open then.
 */
@Command(name = "tcp-hold", mixinStandardHelpOptions = true,
        description = "RSS of a node whose TCP peers never read: idle, holding N connections, 5 s after their client died (or closed them).")
public final class TcpHold implements Callable<Integer> {
    static final int PORT = 7000;

    @Option(names = {"-c", "--connections"}, paramLabel = "N", defaultValue = "10000", description = "Connections (default: ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--end", paramLabel = "HOW", defaultValue = "kill",
            description = "How the client's connections end: kill (SIGKILL the client process; the node learns it from the fabric's"
                    + " liveness) or close (the client closes them all; with unread data, a reset each) (default: ${DEFAULT-VALUE}).")
    String end;

    @Option(names = "--fabric", paramLabel = "PATH", description = "Fabric file to create and remove (default: a fresh one in /dev/shm).")
    Path fabric;

    @Option(names = "--client", hidden = true, description = "Run the never-reading client side on an existing fabric file.")
    boolean client;

    /** Started on its own (`java -cp ... dev.nupa.perf.TcpHold`) rather than as `nupa perf tcp-hold`. */
    private static boolean standalone;

    public static void main(String[] args) {
        standalone = true;
        Children.launcher(TcpHold.class);
        System.exit(new picocli.CommandLine(new TcpHold()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (connections < 1 || connections > 60_000) {
            throw new IllegalArgumentException("--connections takes 1..60000, not " + connections);
        }
        if (!end.equals("kill") && !end.equals("close")) {
            throw new IllegalArgumentException("--end takes kill or close, not " + end);
        }
        return client ? client() : server();
    }

    private int server() throws Exception {
        Path f = fabric != null ? fabric : PerfRunner.freshFabricPath("perf-tcp-hold");
        if (Files.exists(f)) {
            throw new IllegalArgumentException("fabric file " + f + " exists; give a fresh path with --fabric");
        }
        Vertx vertx = NupaVertx.create(StackConfig.defaults(f, 0));
        Process child = null;
        try {
            TcpLayer tcp = NupaVertx.stack(vertx).tcp();
            AtomicInteger open = new AtomicInteger();
            AtomicLong written = new AtomicLong();
            Buffer chunk = Buffer.buffer(new byte[16 * 1024]);
            NetServer server = vertx.createNetServer().connectHandler(s -> {
                open.incrementAndGet();
                s.handler(b -> { });
                s.exceptionHandler(e -> { });
                s.closeHandler(v -> open.decrementAndGet());
                fill(s, chunk, written);
            });
            server.listen(PORT, "10.0.0.1").await(10, TimeUnit.SECONDS);
            Thread.sleep(2000); // the JIT and the pollers settle before the idle figure
            long idle = rss();
            line("idle", idle, tcp);

            List<String> args = new ArrayList<>(standalone ? List.of() : List.of("perf", "tcp-hold"));
            args.addAll(List.of("--client", "--fabric", f.toString(), "-c", Integer.toString(connections)));
            child = Children.start(args);
            BufferedReader out = Children.stdout(child);
            Children.awaitLine(child, out, "connected");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (open.get() < connections && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            long last = -1;
            while (written.get() != last && System.nanoTime() < deadline) { // until the writers stop: every queue full
                last = written.get();
                Thread.sleep(2000);
            }
            long held = rss();
            line("holding " + open.get() + " connections (" + written.get() / (1 << 20) + " MiB written)", held, tcp);

            long ended = System.nanoTime();
            if (end.equals("kill")) {
                child.destroyForcibly();
            } else {
                Writer in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
                in.write("close\n");
                in.flush();
            }
            deadline = ended + TimeUnit.SECONDS.toNanos(60);
            while (open.get() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            line("ended (" + open.get() + " still open after " + (System.nanoTime() - ended) / 1_000_000 + " ms)", rss(), tcp);
            long at5s = ended + TimeUnit.SECONDS.toNanos(5);
            while (System.nanoTime() < at5s) { // the figure is the RSS 5 s after the client's end, whatever came before
                Thread.sleep(10);
            }
            long after = rss();
            line("5 s after the client's " + (end.equals("kill") ? "death" : "close"), after, tcp);
            System.out.printf("tcp-hold: connections=%d end=%s idle_mib=%.1f held_mib=%.1f after5s_mib=%.1f after_vs_idle=%+.1f%%%n",
                    connections, end, idle / 1048576.0, held / 1048576.0, after / 1048576.0, 100.0 * (after - idle) / idle);
            Children.waitFor(child, 30);
            return open.get() == 0 ? 0 : 1;
        } finally {
            Children.kill(child);
            vertx.close().await(10, TimeUnit.SECONDS);
            Files.deleteIfExists(f);
        }
    }

    /** Writes until the write queue is full, and again each time it drains: a writer that honours back-pressure. */
    private static void fill(NetSocket s, Buffer chunk, AtomicLong written) {
        while (!s.writeQueueFull()) {
            s.write(chunk); // the same bytes each time: the harness itself allocates next to nothing
            written.addAndGet(chunk.length());
        }
        s.drainHandler(v -> fill(s, chunk, written));
    }

    private int client() throws Exception {
        Vertx vertx = NupaVertx.create(StackConfig.defaults(fabric, 1));
        try {
            NetClient nc = vertx.createNetClient();
            List<NetSocket> sockets = java.util.Collections.synchronizedList(new ArrayList<>());
            CountDownLatch all = new CountDownLatch(connections);
            AtomicInteger next = new AtomicInteger();
            AtomicInteger failed = new AtomicInteger();
            for (int i = 0; i < Math.min(256, connections); i++) { // 256 connects outstanding at a time
                connectNext(nc, sockets, next, all, failed);
            }
            if (!all.await(120, TimeUnit.SECONDS) || failed.get() > 0) {
                System.err.println("tcp-hold client: " + sockets.size() + " connected, " + failed.get() + " failed");
                return 1;
            }
            System.out.println("connected");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (!"close".equals(in.readLine())) {
                Thread.sleep(10);
            }
            List<io.vertx.core.Future<Void>> closes = new ArrayList<>();
            synchronized (sockets) {
                for (NetSocket s : sockets) {
                    closes.add(s.close());
                }
            }
            io.vertx.core.Future.join(closes).await(30, TimeUnit.SECONDS);
            return 0;
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
        }
    }

    private void connectNext(NetClient nc, List<NetSocket> sockets, AtomicInteger next, CountDownLatch all, AtomicInteger failed) {
        if (next.getAndIncrement() >= connections) {
            return;
        }
        nc.connect(PORT, "10.0.0.1").onComplete(ar -> {
            if (ar.succeeded()) {
                ar.result().pause(); // never read
                sockets.add(ar.result());
            } else {
                failed.incrementAndGet();
            }
            all.countDown();
            connectNext(nc, sockets, next, all, failed);
        });
    }

    private static void line(String what, long rss, TcpLayer tcp) {
        System.out.printf("%-50s RSS %8.1f MiB  TCP buffers held %7.1f MiB, pooled %5.1f MiB (bound %.0f MiB)%n", what,
                rss / 1048576.0, tcp.bufferMemoryUsed() / 1048576.0, tcp.bufferMemoryPooled() / 1048576.0,
                tcp.bufferMemoryLimit() / 1048576.0);
    }

    /** This process's resident memory, from VmRSS in /proc/self/status. */
    static long rss() throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("VmRSS:")) {
                return Long.parseLong(l.substring(6).trim().split("\\s+")[0]) * 1024;
            }
        }
        throw new IOException("no VmRSS in /proc/self/status");
    }
}
