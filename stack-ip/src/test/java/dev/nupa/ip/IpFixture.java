package dev.nupa.ip;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.function.UnaryOperator;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;

/**
 * Test support: nodes with links, neighbor directories and IPv4 stacks on a fresh fabric file,
 * driven by hand on virtual time ({@link #pump}); everything closed and the file deleted by {@link #close()}.
 */
final class IpFixture implements AutoCloseable {
    static final long MS = 1_000_000L;

    /** Node i is 10.0.0.(i+1)/24 on fabric address i. */
    static int ip(int node) {
        return Ipv4Address.of(10, 0, 0, node + 1);
    }

    final Path path = Path.of("/dev/shm/nupa-ip-test-" + UUID.randomUUID());
    final Fabric fabric;
    final List<Ipv4Stack> stacks = new ArrayList<>();
    final List<Link> links = new ArrayList<>();
    private final Deque<AutoCloseable> open = new ArrayDeque<>();
    long now = 1_000 * MS;

    /** {@code nodes} nodes, 64 slots of 9216 bytes per ring. */
    IpFixture(int nodes) {
        this(nodes, 64);
    }

    IpFixture(int nodes, int slots) {
        fabric = ShmFabric.create(path, new FabricGeometry(Math.max(nodes, 2), 1, slots, 9216, 8, 64 * 1024, 10 * MS,
                100 * MS, 10_000 * MS));
        open.push(fabric);
    }

    /** Attaches node {@code address} with the default config, its device wrapped by {@code wrap}. */
    Ipv4Stack node(int address, UnaryOperator<FabricDevice> wrap, UnaryOperator<IpConfig> config) {
        return node(address, Link.DEFAULT_MTU, wrap, config);
    }

    /** Node {@code address} with a link MTU of its own. */
    Ipv4Stack node(int address, int mtu, UnaryOperator<FabricDevice> wrap, UnaryOperator<IpConfig> config) {
        FabricDevice dev = wrap.apply(fabric.attach(address));
        open.push(dev);
        Link link = new Link(dev, mtu);
        NeighborDirectory nd = new NeighborDirectory(dev);
        open.push(nd);
        Ipv4Stack s = new Ipv4Stack(link, nd, config.apply(IpConfig.of(ip(address), 24)));
        stacks.add(s);
        links.add(link);
        return s;
    }

    Ipv4Stack node(int address) {
        return node(address, d -> d, c -> c);
    }

    /** Polls every node (and its timers) until a whole round finds nothing; returns the frames taken. */
    int pump() {
        int total = 0;
        for (int round = 0; round < 100_000; round++) {
            int n = 0;
            for (Ipv4Stack s : stacks) {
                n += s.link().poll(64, now);
                s.poll(now);
            }
            total += n;
            if (n == 0) {
                return total;
            }
        }
        throw new AssertionError("the nodes never went quiet");
    }

    /** Moves virtual time on and runs the timers. */
    void advance(long ns) {
        now += ns;
        for (Ipv4Stack s : stacks) {
            s.poll(now);
        }
    }

    static MemorySegment bytes(int n, long seed) {
        byte[] b = new byte[n];
        new java.util.Random(seed).nextBytes(b);
        return MemorySegment.ofArray(b);
    }

    @Override
    public void close() {
        try {
            while (!open.isEmpty()) {
                open.pop().close();
            }
            Files.deleteIfExists(path);
        } catch (Exception e) {
            throw new IllegalStateException("fixture cleanup failed", e);
        }
    }
}
