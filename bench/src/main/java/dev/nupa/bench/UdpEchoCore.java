package dev.nupa.bench;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongUnaryOperator;

/**
 * One thread's UDP echo through two stacks on a fresh fabric (what {@link UdpEchoBench} measures), as a
 * {@link LongUnaryOperator} for {@link BuildAbBench}: {@code applyAsLong(n)} runs n echoes of 64 bytes and
 * returns the nanoseconds they took. Public API only, so one compiled copy runs against two builds.
 * {@link UdpEchoBench} runs its {@link #echo} at other sizes.
 */
public final class UdpEchoCore implements LongUnaryOperator, AutoCloseable {
    private final Path path;
    private final Fabric fabric;
    private final FabricNode na;
    private final FabricNode nb;
    private final Link la;
    private final Link lb;
    private final Ipv4Stack a;
    private final int port;
    private final int server = Ipv4Address.of(10, 0, 0, 2);
    private final MemorySegment payload;
    private final int size;
    private long expected;
    private boolean answered;
    private long seq;

    /** {@code checksums}: "on" or "off", the stacks' UDP checksum policy; 64-byte echoes (BuildAbBench's constructor). */
    public UdpEchoCore(String checksums) throws Exception {
        this(checksums.equals("on"), 64);
    }

    /** Echoes of {@code size} bytes (fragmented above the MTU), checksums computed and verified or not. */
    public UdpEchoCore(boolean on, int size) throws Exception {
        this.size = size;
        payload = Arena.ofAuto().allocate(size, 64);
        path = Files.createTempFile(Path.of("/dev/shm"), "nupa-ab-", ".fabric");
        Files.delete(path);
        fabric = ShmFabric.create(path, FabricGeometry.defaults().withMaxNodes(2));
        na = fabric.attach(0);
        nb = fabric.attach(1);
        la = new Link(na);
        lb = new Link(nb);
        a = new Ipv4Stack(la, new NeighborDirectory(na), IpConfig.of(Ipv4Address.of(10, 0, 0, 1), 24).withChecksums(on, on));
        Ipv4Stack b = new Ipv4Stack(lb, new NeighborDirectory(nb), IpConfig.of(server, 24).withChecksums(on, on));
        b.bindUdp(7, (src, srcPort, dst, mem, off, len) -> b.sendUdp(7, src, srcPort, mem, off, len));
        port = a.bindUdp(0, (src, srcPort, dst, mem, off, len) -> {
            if (mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == expected) {
                answered = true;
            }
        });
        long deadline = System.nanoTime() + 10_000_000_000L; // the directory publishes B's address shortly after attach
        while (a.sendUdp(port, server, 7, payload, 0, size) != SendStatus.OK) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("node B's address never appeared in the directory");
            }
            Thread.sleep(1);
        }
        awaitEcho(); // the first echo: sequence 0, the expected value before any echo()
    }

    @Override
    public long applyAsLong(long n) {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            echo();
        }
        return System.nanoTime() - t0;
    }

    /** One echo: A sends, B's poll echoes it from its handler, A's poll takes the echo. Returns its sequence number. */
    public long echo() {
        long s = ++seq;
        payload.set(ValueLayout.JAVA_LONG, 0, s);
        expected = s;
        answered = false;
        if (a.sendUdp(port, server, 7, payload, 0, size) != SendStatus.OK) {
            throw new IllegalStateException("echo " + s + " was not sent");
        }
        awaitEcho();
        return s;
    }

    private void awaitEcho() {
        long now = System.nanoTime();
        for (int polls = 0; !answered; polls++) {
            if (polls == 1000) { // one pass of each poll suffices in one thread; fragments take a few more
                throw new IllegalStateException("echo " + expected + " was lost");
            }
            lb.poll(16, now);
            la.poll(16, now);
        }
    }

    @Override
    public void close() throws Exception {
        na.close();
        nb.close();
        fabric.close();
        Files.deleteIfExists(path);
    }
}
