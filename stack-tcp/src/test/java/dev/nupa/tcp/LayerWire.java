package dev.nupa.tcp;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.IpProtocolHandler;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.LoopGroup;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpOptions;
import dev.nupa.tcp.wire.TcpRepr;

/**
 * Test support for whole {@link TcpLayer}s: nodes with IPv4 stacks on a fresh fabric file, driven by
 * hand on virtual time ({@link #pump}, {@link #advance}). A node runs either a TcpLayer or a
 * {@link Raw} peer that sends segments written by the test and records every segment it gets, in
 * the manner of packetdrill. Node i is 10.0.0.(i+1)/24.
 */
final class LayerWire implements AutoCloseable {
    static final long MS = 1_000_000L;

    /** One segment a raw peer received: the header as a value, the payload, and the checksum field as sent. */
    record Got(TcpRepr h, byte[] data, int checksum, int fromNode) {
        boolean has(int flag) {
            return (h.flags() & flag) != 0;
        }

        @Override
        public String toString() {
            return h + " len " + data.length;
        }
    }

    /** A node that speaks TCP by hand: segments in are recorded, segments out are what the test writes. */
    final class Raw implements IpProtocolHandler {
        final Ipv4Stack ip;
        final List<Got> got = new ArrayList<>();
        private final TcpHeader header = new TcpHeader();
        private final TcpOptions options = new TcpOptions();

        Raw(Ipv4Stack ip) {
            this.ip = ip;
            ip.register(Ipv4Header.PROTOCOL_TCP, this);
        }

        @Override
        public void onDatagram(Ipv4Header iph, long now) {
            int status = header.wrap(iph.segment(), iph.payloadOffset(), iph.payloadLength(), iph.sourceAddress(),
                    iph.destinationAddress(), ip.config().verifyChecksums());
            if (status != WireStatus.OK) {
                throw new AssertionError("the layer sent a bad segment: status " + status);
            }
            options.clear().parse(header);
            byte[] data = header.segment().asSlice(header.payloadOffset(), header.payloadLength()).toArray(
                    java.lang.foreign.ValueLayout.JAVA_BYTE);
            got.add(new Got(TcpRepr.parse(header, options), data, header.checksum(), ip.receivedFrom()));
        }

        /** Sends {@code h} with {@code data} to {@code destination}, checksummed, and lets the nodes run. */
        void send(int destination, TcpRepr h, byte[] data) {
            byte[] bytes = new byte[h.headerLength() + data.length];
            MemorySegment seg = MemorySegment.ofArray(bytes);
            h.emitInto(seg, 0, ip.address(), destination, MemorySegment.ofArray(data), 0, data.length, true);
            int rc = ip.sendDatagram(destination, Ipv4Header.PROTOCOL_TCP, true, seg, 0, bytes.length, seg, 0, 0);
            if (rc != 0) {
                throw new AssertionError("send failed: " + rc);
            }
            pump();
        }

        void send(int destination, TcpRepr h) {
            send(destination, h, new byte[0]);
        }

        /** Takes what arrived since the last call. */
        List<Got> take() {
            List<Got> l = new ArrayList<>(got);
            got.clear();
            return l;
        }

        Got only() {
            List<Got> l = take();
            if (l.size() != 1) {
                throw new AssertionError("expected one segment, got " + l);
            }
            return l.get(0);
        }
    }

    final Path path = Path.of("/dev/shm/nupa-tcp-layer-test-" + UUID.randomUUID());
    private final Fabric fabric;
    private final List<Ipv4Stack> stacks = new ArrayList<>();
    private final List<TcpLayer> layers = new ArrayList<>();
    private final List<FabricDevice> devices = new ArrayList<>();
    private final Deque<AutoCloseable> open = new ArrayDeque<>();
    long now = 1_000 * MS;

    LayerWire(int nodes) {
        this(nodes, true);
    }

    /** With {@code checksums} false every node runs the lossless-fabric policy: TCP checksums neither computed nor verified. */
    LayerWire(int nodes, boolean checksums) {
        this(nodes, checksums, 1);
    }

    /**
     * {@code nodes} nodes, the first of which has {@code loops} event loops sharing its address
     * ({@link LoopGroup}); its extra loops are fabric nodes {@code nodes, nodes + 1, ...} ({@link #loopStack}).
     */
    LayerWire(int nodes, boolean checksums, int loops) {
        fabric = ShmFabric.create(path, new FabricGeometry(Math.max(nodes + loops - 1, 2), 1, 256, 9216, 8, 64 * 1024,
                10 * MS, 100 * MS, 10_000 * MS));
        open.push(fabric);
        LoopGroup group = new LoopGroup(loops);
        for (int i = 0; i < nodes + loops - 1; i++) {
            FabricDevice dev = fabric.attach(i);
            open.push(dev);
            devices.add(dev);
            NeighborDirectory nd = new NeighborDirectory(dev);
            open.push(nd);
            IpConfig config = IpConfig.of(ip(i < nodes ? i : 0), 24).withChecksums(checksums, checksums);
            int loop = i == 0 ? 0 : i < nodes ? -1 : i - nodes + 1;
            stacks.add(loop < 0 ? new Ipv4Stack(new Link(dev), nd, config) : new Ipv4Stack(new Link(dev), nd, config, group, loop));
        }
    }

    /** The stack of loop {@code loop} (1..) of node 0. */
    Ipv4Stack loopStack(int nodes, int loop) {
        return stacks.get(nodes + loop - 1);
    }

    /** Runs the TcpLayer of an extra loop of node 0 beside {@code primary}, node 0's. */
    TcpLayer loopTcp(int nodes, int loop, TcpLayer primary) {
        return add(new TcpLayer(loopStack(nodes, loop), primary));
    }

    static int ip(int node) {
        return Ipv4Address.of(10, 0, 0, node + 1);
    }

    /** Runs a TcpLayer on {@code node}. */
    TcpLayer tcp(int node, TcpConfig defaults) {
        return add(new TcpLayer(stacks.get(node), defaults));
    }

    /** Runs a TcpLayer on {@code node} whose connection buffers may hold {@code bufferMemoryLimit} bytes together. */
    TcpLayer tcp(int node, TcpConfig defaults, long bufferMemoryLimit) {
        return add(new TcpLayer(stacks.get(node), defaults, bufferMemoryLimit));
    }

    private TcpLayer add(TcpLayer l) {
        layers.add(l);
        return l;
    }

    /** {@code node} leaves the fabric (its device closes): it is no longer up in the node table. */
    void leave(int node) {
        try {
            devices.get(node).close();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Makes {@code node} a raw peer. */
    Raw raw(int node) {
        return new Raw(stacks.get(node));
    }

    /** Events that send back what arrives (16 bytes a read at most) and, when {@code closing}, close once the peer closed. */
    TcpConnection.Events echo(boolean closing) {
        MemorySegment scratch = MemorySegment.ofArray(new byte[16]);
        return new TcpConnection.Events() {
            @Override
            public void onReadable(TcpConnection c) {
                int n = c.read(scratch, 0, 16, now);
                c.write(scratch, 0, n, now);
            }

            @Override
            public void onPeerClosed(TcpConnection c) {
                if (closing) {
                    c.close(now);
                }
            }
        };
    }

    /** Polls every node, its IP and TCP timers, until a whole round after the first finds nothing. */
    void pump() {
        for (int round = 0; round < 100_000; round++) {
            int n = 0;
            for (int i = 0; i < stacks.size(); i++) { // by index: the churn test counts allocations around it
                Ipv4Stack s = stacks.get(i);
                n += s.link().poll(64, now);
                s.poll(now); // takes what waits in its loopback interface too (no datapath polls it here)
                if (s.loopback().ready()) {
                    n++; // what that delivery sent the node itself: another round
                }
            }
            for (int i = 0; i < layers.size(); i++) {
                layers.get(i).poll(now);
            }
            if (n == 0 && round > 0) {
                return; // not after the first round: what the timers sent in it is read in the next
            }
        }
        throw new AssertionError("the nodes never went quiet");
    }

    /** Moves virtual time on by {@code ns} and lets the nodes run. */
    void advance(long ns) {
        now += ns;
        pump();
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
