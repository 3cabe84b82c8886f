package dev.nupa.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Address;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;

/**
 * The CPU cost of the IP stack: one UDP echo between two stacks in this thread. One op = A sends a
 * datagram to B, B's poll receives it and echoes it in place from its handler, A's poll receives the
 * echo: four passes through the stack and two through a ring, on one core (no cross-core transfer).
 * Run with {@code -prof gc}: gc.alloc.rate.norm should be ~0.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@State(Scope.Thread)
public class UdpEchoBench {
    @Param({"64", "1472", "20000"})
    int size;

    @Param({"true", "false"})
    boolean checksums;

    private Path path;
    private Fabric fabric;
    private FabricNode na;
    private FabricNode nb;
    private Link la;
    private Link lb;
    private Ipv4Stack a;
    private Ipv4Stack b;
    private MemorySegment payload;
    private long echoes;

    @Setup(Level.Trial)
    public void setUp() {
        path = Path.of("/dev/shm/nupa-bench-udp-" + ProcessHandle.current().pid());
        fabric = ShmFabric.create(path, FabricGeometry.defaults().withMaxNodes(2));
        na = fabric.attach(0);
        nb = fabric.attach(1);
        la = new Link(na);
        lb = new Link(nb);
        a = new Ipv4Stack(la, new NeighborDirectory(na),
                IpConfig.of(Ipv4Address.of(10, 0, 0, 1), 24).withChecksums(checksums, checksums));
        b = new Ipv4Stack(lb, new NeighborDirectory(nb),
                IpConfig.of(Ipv4Address.of(10, 0, 0, 2), 24).withChecksums(checksums, checksums));
        b.bindUdp(7, (src, srcPort, dst, mem, off, len) -> b.sendUdp(7, src, srcPort, mem, off, len));
        a.bindUdp(5000, (src, srcPort, dst, mem, off, len) -> echoes++);
        payload = Arena.ofAuto().allocate(size);
    }

    @Benchmark
    public long echo() {
        long before = echoes;
        a.sendUdp(5000, b.address(), 7, payload, 0, size);
        long now = System.nanoTime();
        while (echoes == before) {
            lb.poll(16, now);
            la.poll(16, now);
        }
        return echoes;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        na.close();
        nb.close();
        fabric.close();
        Files.deleteIfExists(path);
    }
}
