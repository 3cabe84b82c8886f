package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.IpCounter;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.Ipv4Repr;
import dev.nupa.l2.EtherType;
import dev.nupa.tcp.wire.TcpRepr;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node talks to itself as a Linux host does through {@code lo}: TCP to 127.0.0.1 and to its own address is
 * carried by its loopback interface (no fabric frame, no checksum), and a datagram from the fabric that claims a
 * loopback or the node's own address is dropped as a martian (RFC 1122 3.2.1.3).
 */
class TcpLoopbackTest {
    static final int PORT = 8080;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(2);
    private final List<TcpConnection> accepted = new ArrayList<>();

    @AfterEach
    void close() {
        wire.close();
    }

    /** The MSS each end of the last {@link #transfer} sent with: the client's and the server's. */
    private final int[] sendMss = new int[2];

    private byte[] transfer(TcpLayer layer, int to) {
        return transfer(layer, to, CONFIG);
    }

    private byte[] transfer(TcpLayer layer, int to, TcpConfig config) {
        layer.listen(PORT, 8, config, accepted::add);
        TcpConnection c = layer.connect(to, PORT, config, null, wire.now);
        wire.pump();
        assertSame(TcpState.ESTABLISHED, c.state());
        TcpConnection s = accepted.getFirst();
        sendMss[0] = c.sendMss();
        sendMss[1] = s.sendMss();
        assertEquals(to, s.localIp());
        assertEquals(to, c.remoteIp());
        byte[] data = new byte[3 << 20];
        new Random(5).nextBytes(data);
        byte[] got = new byte[data.length];
        int sent = 0;
        int read = 0;
        while (read < data.length) {
            if (sent < data.length) {
                sent += c.write(MemorySegment.ofArray(data), sent, data.length - sent, wire.now);
            }
            wire.pump();
            read += s.read(MemorySegment.ofArray(got), read, got.length - read, wire.now);
        }
        assertArrayEquals(data, got);
        c.close(wire.now);
        s.close(wire.now);
        wire.pump();
        return got;
    }

    @Test
    void tcpTo127001IsCarriedByTheLoopbackInterfaceWithNoFabricFrame() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        Ipv4Stack ip = layer.ip();
        long framesBefore = ip.link().device().counters().framesSent();
        transfer(layer, Ipv4Address.LOCALHOST);
        assertEquals(framesBefore, ip.link().device().counters().framesSent(), "nothing went through the fabric");
        assertTrue(ip.loopback().datagrams() > 48, "the segments went through lo: " + ip.loopback().datagrams());
        assertEquals(0, layer.counter(TcpCounter.BAD_CHECKSUMS));
        // Linux's MSS follows the route's interface: lo's MTU of 65,536 (ours 65,535) less 40, not the link's 8,960.
        assertArrayEquals(new int[] {65_495, 65_495}, sendMss, "both ends send with the loopback interface's MSS");
        assertTrue(ip.loopback().datagrams() < 300, "3 MiB in segments of up to 64 KiB, not 9 KB: " + ip.loopback().datagrams());
    }

    /** An MSS set apart from the link's default holds on the loopback too, as Linux's TCP_MAXSEG does. */
    @Test
    void anMssSetApartFromTheLinksIsKeptOverTheLoopback() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        TcpConfig small = TcpConfig.defaults(1500).withDelayedAck(0);
        transfer(layer, Ipv4Address.LOCALHOST, small);
        assertArrayEquals(new int[] {1460, 1460}, sendMss);
        assertTrue(layer.ip().loopback().datagrams() > 2000, "3 MiB in 1,460-byte segments: " + layer.ip().loopback().datagrams());
    }

    /** Buffers smaller than 64 KiB bound the loopback MSS, so a segment always fits the peer's window. */
    @Test
    void theLoopbackMssStaysWithinTheBuffers() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        transfer(layer, Ipv4Address.LOCALHOST, CONFIG.withBuffers(32 * 1024, 20_000));
        assertArrayEquals(new int[] {20_000, 20_000}, sendMss);
    }

    @Test
    void aCaptureSeesEachLoopbackDatagramOnceFromAndToTheNode() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        Ipv4Stack ip = layer.ip();
        int[] seen = {0, 0};
        ip.link().setCapture((ts, outbound, src, dst, protocol, mem, off, len) -> {
            seen[0]++;
            if (!outbound && src == ip.link().address() && dst == src && protocol == EtherType.IPV4
                    && Ipv4Address.isLoopback(mem.get(java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED
                            .withOrder(java.nio.ByteOrder.BIG_ENDIAN), off + 16))) {
                seen[1]++;
            }
        });
        transfer(layer, Ipv4Address.LOCALHOST);
        assertEquals(ip.loopback().datagrams(), seen[0], "one capture per datagram");
        assertEquals(seen[0], seen[1], "each from and to the node, to 127.0.0.1");
    }

    @Test
    void aRoundTripThroughLoopbackAllocatesNothing() {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        TcpConfig config = CONFIG.withNoDelay(true);
        TcpLayer layer = wire.tcp(0, config);
        layer.listen(PORT, 8, config, accepted::add);
        TcpConnection c = layer.connect(Ipv4Address.LOCALHOST, PORT, config, null, wire.now);
        wire.pump();
        TcpConnection s = accepted.getFirst();
        MemorySegment buf = MemorySegment.ofArray(new byte[64]);
        long least = Long.MAX_VALUE;
        for (int round = 0; round < 6; round++) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 5_000; i++) {
                c.write(buf, 0, 32, wire.now);
                wire.pump();
                s.read(buf, 0, 64, wire.now);
                s.write(buf, 0, 32, wire.now);
                wire.pump();
                assertEquals(32, c.read(buf, 0, 64, wire.now));
            }
            if (round >= 2) { // after the warm-up: some round allocates nothing (the JVM's own one-time bytes aside)
                least = Math.min(least, threads.getCurrentThreadAllocatedBytes() - before);
            }
        }
        assertEquals(0, least, "bytes allocated by 5,000 round trips through lo");
    }

    @Test
    void tcpToTheNodesOwnAddressIsCarriedByTheLoopbackInterfaceToo() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        transfer(layer, LayerWire.ip(0));
        assertTrue(layer.ip().loopback().datagrams() > 48);
        assertArrayEquals(new int[] {65_495, 65_495}, sendMss, "to its own address too, as Linux routes it through lo");
        // Between two nodes the link's MSS holds.
        TcpLayer other = wire.tcp(1, CONFIG);
        accepted.clear();
        other.listen(PORT + 1, 8, CONFIG, accepted::add);
        TcpConnection c = layer.connect(LayerWire.ip(1), PORT + 1, CONFIG, null, wire.now);
        wire.pump();
        assertSame(TcpState.ESTABLISHED, c.state());
        assertEquals(8960, c.sendMss());
    }

    @Test
    void rfc1122_3_2_1_3_aDatagramFromTheFabricClaimingALoopbackOrOurOwnSourceIsDropped() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        layer.listen(PORT, 8, CONFIG, accepted::add);
        LayerWire.Raw peer = wire.raw(1);
        long before = layer.ip().counters().get(IpCounter.IN_ADDR_ERRORS);
        for (int forged : new int[] {Ipv4Address.LOCALHOST, LayerWire.ip(0)}) {
            // A SYN from node 1 whose IPv4 source is forged, written to the link by hand (IP would refuse it).
            TcpRepr h = new TcpRepr(4000, PORT, 1, 0, Segment.SYN, 65535);
            Ipv4Repr ipHeader = new Ipv4Repr(forged, LayerWire.ip(0), Ipv4Header.PROTOCOL_TCP, h.headerLength(), 64);
            byte[] datagram = new byte[ipHeader.length()];
            MemorySegment m = MemorySegment.ofArray(datagram);
            ipHeader.emitInto(m, 0, true);
            h.emitInto(m, ipHeader.headerLength(), forged, LayerWire.ip(0), MemorySegment.ofArray(new byte[0]), 0, 0, true);
            assertEquals(0, peer.ip.link().send(0, EtherType.IPV4, m, 0, datagram.length));
        }
        wire.pump();
        assertEquals(0, layer.counter(TcpCounter.SYNS_RECEIVED));
        assertTrue(accepted.isEmpty());
        assertEquals(before + 2, layer.ip().counters().get(IpCounter.IN_ADDR_ERRORS));
    }
}
