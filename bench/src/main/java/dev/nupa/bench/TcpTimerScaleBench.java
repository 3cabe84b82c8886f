package dev.nupa.bench;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpLayer;

/**
 * What one run of a TCP layer's timers costs when it holds many idle connections (not JMH): node A
 * accepts {@code idle + 50} connections from node B on virtual time; then B stops answering (its ring
 * is drained unread), and A writes 10 bytes on the last 50, so their retransmission timers fire, back
 * off and finally give up. Each {@code TcpLayer.poll} at the next deadline is timed. Idle connections
 * have no timer pending, so the cost should not grow with their number.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar dev.nupa.bench.TcpTimerScaleBench [idle=10000] [rounds=3]
 * </pre>
 */
public final class TcpTimerScaleBench {
    private static final long MS = 1_000_000L;
    private static final int ACTIVE = 50;
    private static final int PORT = 80;

    public static void main(String[] args) throws Exception {
        int idle = 10_000;
        int rounds = 3;
        for (String a : args) {
            if (a.startsWith("idle=")) {
                idle = Integer.parseInt(a.substring(5));
            } else if (a.startsWith("rounds=")) {
                rounds = Integer.parseInt(a.substring(7));
            } else {
                System.err.println("usage: TcpTimerScaleBench [idle=N] [rounds=N]");
                System.exit(2);
            }
        }
        for (int r = 0; r < rounds; r++) {
            for (int n : new int[] {100, idle}) {
                System.out.printf("idle connections %6d: %s%n", n, run(n));
            }
        }
    }

    private static String run(int idle) throws Exception {
        Path path = Files.createTempFile(Path.of("/dev/shm"), "nupa-timers-", ".fabric");
        Files.delete(path);
        try (Fabric fabric = ShmFabric.create(path, FabricGeometry.defaults().withMaxNodes(2));
             FabricNode na = fabric.attach(0); FabricNode nb = fabric.attach(1)) {
            TcpConfig config = TcpConfig.defaults(9000).withDelayedAck(0).withBuffers(16_384, 16_384);
            Link la = new Link(na);
            Link lb = new Link(nb);
            Ipv4Stack a = new Ipv4Stack(la, new NeighborDirectory(na), IpConfig.of(Ipv4Address.of(10, 0, 0, 1), 24));
            Ipv4Stack b = new Ipv4Stack(lb, new NeighborDirectory(nb), IpConfig.of(Ipv4Address.of(10, 0, 0, 2), 24));
            TcpLayer server = new TcpLayer(a, config);
            TcpLayer client = new TcpLayer(b, config);
            List<TcpConnection> accepted = new ArrayList<>();
            server.listen(PORT, 65_535, config, accepted::add);
            long now = 1_000 * MS;
            long deadline = System.nanoTime() + 10_000_000_000L; // the directory publishes A's address shortly after attach
            int total = idle + ACTIVE;
            for (int i = 0; i < total; i++) {
                client.connect(a.address(), PORT, config, null, now);
                while (accepted.size() <= i) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("only " + accepted.size() + " of " + total + " connections opened");
                    }
                    la.poll(64, now);
                    lb.poll(64, now);
                    if (accepted.size() <= i && i == 0) {
                        now += MS; // the first SYN may have found no neighbor yet: its retransmission comes later
                        server.poll(now);
                        client.poll(now);
                        Thread.sleep(1);
                    }
                }
            }
            // B goes silent: what reaches it is drained unread, so A's data is never acknowledged.
            for (TcpConnection c : accepted.subList(idle, total)) {
                c.write(MemorySegment.ofArray(new byte[10]), 0, 10, now);
                now += MS;
                nb.poll((source, mem, off, len) -> { }, 1024);
            }
            long polls = 0;
            long ns = 0;
            while (true) {
                long due = server.poll(now);
                if (due == Long.MAX_VALUE) {
                    break;
                }
                now = Math.max(now, due);
                long t0 = System.nanoTime();
                server.poll(now);
                ns += System.nanoTime() - t0;
                polls++;
                nb.poll((source, mem, off, len) -> { }, 1024);
            }
            return String.format("%d timer polls, %.2f us each", polls, ns / 1e3 / polls);
        } finally {
            Files.deleteIfExists(path);
        }
    }
}
