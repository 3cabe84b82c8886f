package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.nupa.tcp.LayerWire.Got;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpRepr.SackBlock;
import dev.nupa.tcp.wire.TcpRepr.Timestamps;
import dev.nupa.tcp.wire.TcpRepr;

/**
 * Scripted tests of a listener's {@link TcpLayer} on virtual time: a raw peer on another node sends
 * segments written here and the test checks exactly what the layer answers. The subject is SYN
 * cookies under a full backlog (RFC 4987 3.6) and the options they keep in the timestamp (Linux's
 * cookie_init_timestamp / cookie_timestamp_decode). Each test is named after the rule it checks.
 */
class TcpListenerTest {
    static final int PORT = 80;
    static final int CLIENT_ISN = 0x7000_0000;
    static final int FLOOD_PORT = 39_999;
    static final int CLIENT_PORT = 40_000;
    static final int SYN = TcpHeader.SYN;
    static final int ACK = TcpHeader.ACK;
    static final int RST = TcpHeader.RST;
    /** 1 MiB buffers: the receive window needs shift 5 (RFC 7323 2.3). */
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withBuffers(1 << 20, 1 << 20).withDelayedAck(0);

    private final LayerWire wire = new LayerWire(3);
    private final List<TcpConnection> accepted = new ArrayList<>();
    private TcpLayer server;
    private LayerWire.Raw peer;

    @AfterEach
    void close() {
        wire.close();
    }

    /** The server on node 0 listening on {@link #PORT} with {@code backlog}; the raw peer on node 1. */
    private void listen(int backlog) {
        server = wire.tcp(0, CONFIG);
        server.listen(PORT, backlog, CONFIG, accepted::add);
        peer = wire.raw(1);
    }

    private static TcpRepr syn(int port, int isn, int wscale, boolean sack, Timestamps ts) {
        return new TcpRepr(port, PORT, isn, 0, SYN, 65_535, 0, 1460, wscale, sack, ts, List.of());
    }

    private static TcpRepr segment(int flags, int seq, int ack, int window, Timestamps ts, SackBlock... blocks) {
        return new TcpRepr(CLIENT_PORT, PORT, seq, ack, flags, window, 0, -1, -1, false, ts, List.of(blocks));
    }

    /** What the peer got for {@link #CLIENT_PORT} (the flood port's SYN-ACK retransmissions left out). */
    private List<Got> toClient() {
        return peer.take().stream().filter(g -> g.h().destinationPort() == CLIENT_PORT).toList();
    }

    private Got onlyToClient() {
        List<Got> l = toClient();
        assertEquals(1, l.size(), "one segment: " + l);
        return l.get(0);
    }

    /** Fills the backlog of 1 with a half-open connection, then sends the client's SYN: the answer is a cookie. */
    private Got cookieSynAck(int wscale, boolean sack, Timestamps ts) {
        listen(1);
        peer.send(LayerWire.ip(0), syn(FLOOD_PORT, 1, -1, false, null));
        assertEquals(1, server.connections(), "the first SYN took the backlog's one place");
        peer.take();
        peer.send(LayerWire.ip(0), syn(CLIENT_PORT, CLIENT_ISN, wscale, sack, ts));
        assertEquals(1, server.counter(TcpCounter.SYN_COOKIES_SENT));
        Got synAck = onlyToClient();
        assertEquals(SYN | ACK, synAck.h().flags());
        assertEquals(CLIENT_ISN + 1, synAck.h().acknowledgmentNumber());
        assertEquals(8960, synAck.h().mss(), "our MSS");
        return synAck;
    }

    /** A cookie connection with window scale 7, SACK and timestamps; the ACK offers a window of 1000 << 7. */
    private TcpConnection cookieConnection(Got synAck) {
        int cookie = synAck.h().sequenceNumber();
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, cookie + 1, 1000,
                new Timestamps(1001, synAck.h().timestamps().value())));
        assertEquals(1, server.counter(TcpCounter.SYN_COOKIES_ACCEPTED));
        assertEquals(1, accepted.size(), "the cookie ACK opened a connection");
        assertTrue(toClient().isEmpty(), "a bare ACK completing the handshake draws nothing");
        TcpConnection c = accepted.get(0);
        assertEquals(TcpState.ESTABLISHED, c.state());
        return c;
    }

    /** The server's connection writes {@code n} bytes; the nodes run. */
    private int written(TcpConnection c, int n) {
        int w = c.write(MemorySegment.ofArray(new byte[n]), 0, n, wire.now);
        server.touched(c);
        wire.pump();
        return w;
    }

    @Test
    void rfc4987_3_6_synsBeyondTheBacklogAreAnsweredStatelesslyWithCookies() {
        listen(4);
        for (int i = 0; i < 20; i++) {
            peer.send(LayerWire.ip(0), syn(CLIENT_PORT + i, CLIENT_ISN + i, 7, true, new Timestamps(1000 + i, 0)));
        }
        assertEquals(4, server.connections(), "only the backlog holds state");
        assertEquals(16, server.counter(TcpCounter.SYN_BACKLOG_FULL));
        assertEquals(16, server.counter(TcpCounter.SYN_COOKIES_SENT));
        List<Got> synAcks = peer.take();
        assertEquals(20, synAcks.size(), "every SYN is answered: " + synAcks);
        int carryingOptions = 0;
        for (Got g : synAcks) {
            assertEquals(SYN | ACK, g.h().flags());
            assertNotNull(g.h().timestamps(), "cookies too keep timestamps: " + g);
            assertEquals(CONFIG.receiveWindowShift(), g.h().windowScale(), "cookies too keep window scaling: " + g);
            assertTrue(g.h().sackPermitted(), "cookies too keep SACK: " + g);
            if ((g.h().timestamps().value() & 63) == (7 | 1 << 4)) {
                carryingOptions++;
            }
        }
        assertEquals(16, carryingOptions, "the cookie SYN-ACKs carry wscale 7 and SACK in their TSvals' low bits");
    }

    @Test
    void linuxCookieInitTimestamp_theSynAckCarriesTheSynsOptionsInItsTsval() {
        Got synAck = cookieSynAck(7, true, new Timestamps(1000, 0));
        assertEquals(CONFIG.receiveWindowShift(), synAck.h().windowScale(), "our shift, as a SYN-ACK without cookies offers");
        assertEquals(5, synAck.h().windowScale());
        assertTrue(synAck.h().sackPermitted());
        Timestamps ts = synAck.h().timestamps();
        assertNotNull(ts);
        assertEquals(1000, ts.echoReply(), "RFC 7323 4.3: the SYN's TSval echoed");
        assertEquals(7 | 1 << 4, ts.value() & 63, "low 6 bits: wscale 7, SACK-permitted");
        assertEquals(65_535, synAck.h().window(), "RFC 7323 2.2: a SYN's window is never scaled");
    }

    @Test
    void rfc7323_2_3_aCookieConnectionScalesThePeersWindowAndAdvertisesItsOwnScaled() {
        TcpConnection c = cookieConnection(cookieSynAck(7, true, new Timestamps(1000, 0)));
        assertEquals(1000 << 7, c.sendWindow(), "the ACK's window 1000 with the SYN's shift 7");
        assertEquals(1460, c.sendMss());

        Timestamps echo = new Timestamps(1002, 0);
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, c.sndNxt(), 1000, echo), new byte[1000]);
        Got ack = onlyToClient();
        assertEquals(CLIENT_ISN + 1001, ack.h().acknowledgmentNumber());
        int shift = CONFIG.receiveWindowShift();
        assertEquals(((1 << 20) - 1000) >>> shift, ack.h().window(), "the free megabyte, scaled by our shift");
        assertTrue(ack.h().window() << shift > 65_535, "a window beyond what 16 bits say unscaled");

        // 10 segments of the initial window (RFC 6928) go out; an unscaled window of 1000 would allow 1000 bytes.
        written(c, 40_000);
        int sent = toClient().stream().mapToInt(g -> g.data().length).sum();
        assertEquals(10 * (1460 - 12), sent, "the initial window of 1460-byte segments with timestamps");
    }

    @Test
    void rfc2018_aCookieConnectionReportsOutOfOrderDataInSackBlocks() {
        TcpConnection c = cookieConnection(cookieSynAck(7, true, new Timestamps(1000, 0)));
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1 + 3000, c.sndNxt(), 1000, new Timestamps(1002, 0)),
                new byte[500]);
        Got dupAck = onlyToClient();
        assertEquals(CLIENT_ISN + 1, dupAck.h().acknowledgmentNumber(), "the hole is still at the start");
        assertEquals(List.of(new SackBlock(CLIENT_ISN + 3001, CLIENT_ISN + 3501)), dupAck.h().sackBlocks());
    }

    @Test
    void rfc7323_5_3_aCookieConnectionsTsvalsGoOnFromTheSynAcksClockAndPawsIsOn() {
        Got synAck = cookieSynAck(7, true, new Timestamps(1000, 0));
        int synAckTsVal = synAck.h().timestamps().value();
        TcpConnection c = cookieConnection(synAck);

        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, c.sndNxt(), 1000, new Timestamps(1002, 0)), new byte[10]);
        Timestamps first = onlyToClient().h().timestamps();
        assertNotNull(first, "every segment carries timestamps (RFC 7323 3.2)");
        assertEquals(1002, first.echoReply(), "RFC 7323 4.3: TS.Recent echoed");
        int behind = first.value() - synAckTsVal;
        assertTrue(behind >= 0 && behind < 64, "never below the SYN-ACK's TSval, at most 63 ticks above: " + behind);

        wire.advance(500 * LayerWire.MS);
        written(c, 100);
        Timestamps later = onlyToClient().h().timestamps();
        assertEquals(500, later.value() - first.value(), "the clock ticks in milliseconds (RFC 7323 5.4)");

        // RFC 7323 5.3 R1: a segment whose TSval is older than TS.Recent is dropped and answered with an ACK.
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 11, c.sndNxt(), 1000, new Timestamps(5, 0)), new byte[10]);
        assertEquals(1, c.pawsDrops());
        assertEquals(10, c.readable(), "the old segment's bytes were not taken");
        assertEquals(CLIENT_ISN + 11, onlyToClient().h().acknowledgmentNumber());
    }

    @Test
    void linuxSyncookies_withoutATimestampInTheSynTheCookieConnectionGoesWithoutOptions() {
        Got synAck = cookieSynAck(7, true, null);
        assertEquals(-1, synAck.h().windowScale(), "nothing could carry the shift back");
        assertFalse(synAck.h().sackPermitted());
        assertNull(synAck.h().timestamps());

        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, synAck.h().sequenceNumber() + 1, 1000, null));
        assertEquals(1, accepted.size());
        TcpConnection c = accepted.get(0);
        assertEquals(1000, c.sendWindow(), "the peer's window unscaled (RFC 7323 2.2)");
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1 + 3000, c.sndNxt(), 1000, null), new byte[500]);
        Got dupAck = onlyToClient();
        assertEquals(CLIENT_ISN + 1, dupAck.h().acknowledgmentNumber());
        assertTrue(dupAck.h().sackBlocks().isEmpty(), "no SACK blocks: " + dupAck);
        assertNull(dupAck.h().timestamps());
        assertEquals(65_535, dupAck.h().window(), "a megabyte free, but unscaled 16 bits say at most 65535");
    }

    @Test
    void rfc4987_3_6_anAckWhoseEchoedOptionsWereChangedOrDroppedIsReset() {
        Got synAck = cookieSynAck(7, true, new Timestamps(1000, 0));
        int cookie = synAck.h().sequenceNumber();
        int tsVal = synAck.h().timestamps().value();
        int rejected = 0;
        for (int low = 0; low < 64; low++) {
            int echo = (tsVal & ~63) | low;
            if (echo == tsVal) {
                continue;
            }
            peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, cookie + 1, 1000, new Timestamps(1001, echo)));
            Got rst = onlyToClient();
            assertEquals(RST, rst.h().flags(), "echo low bits " + low + ": RFC 9293 3.10.7.2, an ACK to a listener");
            assertEquals(cookie + 1, rst.h().sequenceNumber());
            rejected++;
        }
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, cookie + 1, 1000, null));
        assertEquals(RST, onlyToClient().h().flags(), "the timestamp the cookie was sent with is missing");
        rejected++;
        assertEquals(rejected, server.counter(TcpCounter.SYN_COOKIES_REJECTED));
        assertTrue(accepted.isEmpty());
        assertEquals(1, server.connections(), "only the half-open one of the backlog");

        cookieConnection(synAck); // the genuine echo still opens it: the cookie itself was never the problem
    }

    /**
     * The race the 10,000-connection system test met: a SYN answered with a cookie while the backlog was
     * full, its retransmission answered with state once a place was free, and the client completing the
     * handshake with the cookie. The ACK must open the cookie connection, not draw the reset that RFC
     * 9293 3.10.7.4 gives a SYN-RECEIVED connection for an ACK of another ISN.
     */
    @Test
    void rfc4987_3_6_aCookieAckSupersedesTheHalfOpenConnectionOfTheSynsRetransmission() {
        Got cookieSynAck = cookieSynAck(7, true, new Timestamps(1000, 0));
        int cookie = cookieSynAck.h().sequenceNumber();
        peer.send(LayerWire.ip(0), new TcpRepr(FLOOD_PORT, PORT, 2, 0, RST, 0, 0, -1, -1, false, null, List.of()));
        assertEquals(0, server.connections(), "the flood's half-open connection reset: the backlog has room");
        peer.send(LayerWire.ip(0), syn(CLIENT_PORT, CLIENT_ISN, 7, true, new Timestamps(1500, 0)));
        Got statefulSynAck = onlyToClient();
        assertEquals(SYN | ACK, statefulSynAck.h().flags());
        assertEquals(1, server.counter(TcpCounter.SYN_COOKIES_SENT), "the retransmitted SYN got state");
        assertTrue(statefulSynAck.h().sequenceNumber() != cookie, "another ISN than the cookie");
        assertEquals(1, server.connections());

        // The client took the cookie SYN-ACK: its first segment acknowledges the cookie and carries data.
        peer.send(LayerWire.ip(0), segment(ACK, CLIENT_ISN + 1, cookie + 1, 1000,
                new Timestamps(1501, cookieSynAck.h().timestamps().value())), new byte[100]);
        Got ack = onlyToClient();
        assertEquals(ACK, ack.h().flags(), "no reset: " + ack);
        assertEquals(cookie + 1, ack.h().sequenceNumber());
        assertEquals(CLIENT_ISN + 101, ack.h().acknowledgmentNumber(), "the data taken");
        assertEquals(1, server.counter(TcpCounter.SYN_COOKIES_ACCEPTED));
        assertEquals(1, server.counter(TcpCounter.HANDSHAKES_SUPERSEDED));
        assertEquals(0, server.counter(TcpCounter.RESETS_SENT));
        assertEquals(1, server.connections(), "the cookie connection replaced the half-open one");
        assertEquals(1, accepted.size());
        TcpConnection c = accepted.get(0);
        assertEquals(TcpState.ESTABLISHED, c.state());
        assertEquals(100, c.readable());

        wire.advance(3000 * LayerWire.MS);
        assertTrue(toClient().stream().noneMatch(g -> (g.h().flags() & SYN) != 0),
                "the superseded connection's SYN-ACK is not retransmitted");
        assertEquals(1, server.counter(TcpCounter.CONNECTIONS_FAILED), "only the flood's, which was reset");
    }

    @Test
    void rfc4987_3_6_aStackClientCompletesACookieHandshakeAndTransfersWithAllOptions() {
        server = wire.tcp(0, CONFIG);
        server.listen(PORT, 1, CONFIG, accepted::add);
        TcpLayer client = wire.tcp(1, CONFIG);
        LayerWire.Raw flooder = wire.raw(2);
        flooder.send(LayerWire.ip(0), syn(FLOOD_PORT, 1, -1, false, null));

        TcpConnection cc = client.connect(LayerWire.ip(0), PORT, CONFIG, null, wire.now);
        wire.pump();
        assertEquals(1, server.counter(TcpCounter.SYN_COOKIES_ACCEPTED), server.counters().toString());
        assertEquals(TcpState.ESTABLISHED, cc.state());
        TcpConnection sc = accepted.get(0);

        byte[] up = new byte[2 << 20];
        new Random(4987).nextBytes(up);
        byte[] got = new byte[up.length];
        int sent = 0;
        int read = 0;
        for (int step = 0; step < 100_000 && read < up.length; step++) {
            if (sent < up.length) {
                sent += cc.write(MemorySegment.ofArray(up), sent, up.length - sent, wire.now);
                client.touched(cc);
            }
            read += sc.read(MemorySegment.ofArray(got), read, got.length - read, wire.now);
            server.touched(sc);
            wire.advance(LayerWire.MS / 10);
        }
        assertArrayEquals(up, got);
        assertTrue(sc.sendWindow() > 65_535, "the client's window, scaled: " + sc.sendWindow());
        assertTrue(cc.sendWindow() > 65_535, "the cookie connection's window, scaled: " + cc.sendWindow());
        assertEquals(0, cc.pawsDrops(), "the server's TSvals never went back (RFC 7323 5.3)");
        assertEquals(0, sc.pawsDrops());
        assertEquals(0, cc.retransmits() + sc.retransmits(), "a lossless fabric");
    }
}
