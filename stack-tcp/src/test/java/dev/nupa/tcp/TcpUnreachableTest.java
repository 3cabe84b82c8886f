package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.wire.IcmpHeader;
import dev.nupa.ip.wire.IcmpRepr;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.Ipv4Repr;
import dev.nupa.tcp.wire.TcpRepr;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.NoRouteToHostException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A connect that cannot succeed fails at once, as Linux's: without a route (ENETUNREACH), toward an address no
 * fabric node holds or whose node is not up (EHOSTUNREACH), and on a hard ICMP error while in SYN-SENT (RFC 1122
 * 4.2.3.9, Linux's tcp_v4_err); an ICMP error that quotes a sequence number this end never sent is ignored.
 */
class TcpUnreachableTest {
    static final TcpConfig CONFIG = TcpConfig.defaults(9000);

    private final LayerWire wire = new LayerWire(3);

    @AfterEach
    void close() {
        wire.close();
    }

    private static NoRouteToHostException refused(TcpLayer layer, int ip) {
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> layer.connect(ip, 80, CONFIG, null, 0));
        return assertInstanceOf(NoRouteToHostException.class, e.getCause());
    }

    @Test
    void aConnectWithoutARouteFailsAtOnceWithNetworkUnreachable() {
        TcpLayer client = wire.tcp(1, CONFIG);
        NoRouteToHostException e = refused(client, Ipv4Address.of(192, 168, 7, 7));
        assertTrue(e.getMessage().startsWith("Network is unreachable: 192.168.7.7:80"), e.getMessage());
        assertEquals(1, client.counter(TcpCounter.CONNECTS_UNREACHABLE));
        assertEquals(0, client.connections(), "nothing was left behind");
        assertEquals(0, client.counter(TcpCounter.SEGMENTS_OUT), "no SYN went into nothing");
    }

    @Test
    void aConnectToAnOnLinkAddressNoNodeHoldsFailsAtOnceWithNoRouteToHost() {
        TcpLayer client = wire.tcp(1, CONFIG);
        NoRouteToHostException e = refused(client, Ipv4Address.of(10, 0, 0, 77));
        assertTrue(e.getMessage().startsWith("No route to host: 10.0.0.77:80"), e.getMessage());
        assertEquals(0, client.connections());
    }

    @Test
    void aConnectToANodeThatLeftTheFabricFailsAtOnceWithNoRouteToHost() {
        TcpLayer client = wire.tcp(1, CONFIG);
        wire.leave(2);
        NoRouteToHostException e = refused(client, LayerWire.ip(2));
        assertTrue(e.getMessage().startsWith("No route to host: 10.0.0.3:80"), e.getMessage());
    }

    /** A raw node 0 takes the SYN and answers with ICMP destination unreachable of {@code code}, quoting it. */
    private TcpConnection synAnsweredWithIcmp(TcpLayer client, int code, int seqDelta) {
        LayerWire.Raw peer = wire.raw(0);
        TcpConnection c = client.connect(LayerWire.ip(0), 80, CONFIG, null, wire.now);
        wire.pump();
        LayerWire.Got syn = peer.only();
        assertTrue(syn.has(Segment.SYN));
        TcpRepr quotedTcp = new TcpRepr(syn.h().sourcePort(), syn.h().destinationPort(), syn.h().sequenceNumber() + seqDelta,
                0, Segment.SYN, 65535);
        byte[] tcp = new byte[quotedTcp.headerLength()];
        quotedTcp.emitInto(MemorySegment.ofArray(tcp), 0, LayerWire.ip(1), LayerWire.ip(0), MemorySegment.ofArray(new byte[0]),
                0, 0, true);
        Ipv4Repr ip = new Ipv4Repr(LayerWire.ip(1), LayerWire.ip(0), Ipv4Header.PROTOCOL_TCP, tcp.length, 64);
        byte[] quoted = new byte[ip.headerLength() + 8];
        ip.emitInto(MemorySegment.ofArray(quoted), 0, true);
        System.arraycopy(tcp, 0, quoted, ip.headerLength(), 8);
        IcmpRepr icmp = IcmpRepr.destinationUnreachable(code, quoted);
        byte[] msg = new byte[icmp.length()];
        icmp.emitInto(MemorySegment.ofArray(msg), 0);
        MemorySegment m = MemorySegment.ofArray(msg);
        assertEquals(0, peer.ip.sendDatagram(LayerWire.ip(1), Ipv4Header.PROTOCOL_ICMP, false, m, 0, msg.length, m, 0, 0));
        wire.pump();
        return c;
    }

    @Test
    void rfc1122_4_2_3_9_aHostUnreachableInSynSentEndsTheConnectWithNoRouteToHost() {
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection c = synAnsweredWithIcmp(client, IcmpHeader.UNREACHABLE_HOST, 0);
        assertSame(TcpState.CLOSED, c.state());
        assertSame(TcpError.HOST_UNREACHABLE, c.error());
        assertEquals(1, client.counter(TcpCounter.ICMP_ABORTS));
        assertEquals(0, client.connections());
    }

    @Test
    void aPortUnreachableInSynSentIsARefusal() {
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection c = synAnsweredWithIcmp(client, IcmpHeader.UNREACHABLE_PORT, 0);
        assertSame(TcpError.REFUSED, c.error());
    }

    @Test
    void rfc5927_anIcmpErrorQuotingASequenceNumberNeverSentIsIgnored() {
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection c = synAnsweredWithIcmp(client, IcmpHeader.UNREACHABLE_HOST, 12345);
        assertSame(TcpState.SYN_SENT, c.state(), "a blind attacker cannot end a connect");
        assertEquals(1, client.counter(TcpCounter.ICMP_OUT_OF_WINDOW));
    }

    @Test
    void fragmentationNeededIsASoftErrorThatEndsNothing() {
        TcpLayer client = wire.tcp(1, CONFIG);
        TcpConnection c = synAnsweredWithIcmp(client, IcmpHeader.UNREACHABLE_FRAGMENTATION_NEEDED, 0);
        assertSame(TcpState.SYN_SENT, c.state());
        assertEquals(1, client.counter(TcpCounter.ICMP_ERRORS_IGNORED));
    }
}
