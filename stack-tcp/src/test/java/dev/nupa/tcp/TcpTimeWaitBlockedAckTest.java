package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricDevice;
import dev.nupa.tcp.LayerWire.Got;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpRepr;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The ACK of the peer's FIN that puts a connection into TIME-WAIT may meet a full ring (back-pressure, not loss): the
 * connection keeps it and sends it again shortly, as for any segment, before it goes on waiting as a record. A record
 * sends once, so an ACK it took over unsent would be lost and leave the peer in LAST-ACK.
 */
class TcpTimeWaitBlockedAckTest {
    private static final int PORT = 7000;
    private static final int PEER_PORT = 40_000;
    private static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0).withNoDelay(true)
            .withTimeWait(1_000 * LayerWire.MS);

    private final LayerWire wire = new LayerWire(3);

    @AfterEach
    void close() {
        wire.close();
    }

    @Test
    void theAckThatEntersTimeWaitIsSentAgainWhenTheRingWasFull() {
        TcpLayer layer = wire.tcp(0, CONFIG);
        List<TcpConnection> accepted = new ArrayList<>();
        layer.listen(PORT, 8, CONFIG, accepted::add);
        LayerWire.Raw peer = wire.raw(1);
        LayerWire.Raw filler = wire.raw(2);
        peer.send(LayerWire.ip(0), new TcpRepr(PEER_PORT, PORT, 1000, 0, TcpHeader.SYN, 65_535));
        int iss = peer.only().h().sequenceNumber();
        peer.send(LayerWire.ip(0), new TcpRepr(PEER_PORT, PORT, 1001, iss + 1, TcpHeader.ACK, 65_535));
        accepted.get(0).close(wire.now); // our FIN: we close first, so we are the end that waits
        wire.pump();
        assertTrue(peer.only().has(TcpHeader.FIN));
        // Node 2 fills the peer's ring with frames nobody reads as TCP, so our ACK of the peer's FIN finds no room.
        MemorySegment frame = MemorySegment.ofArray(new byte[64]);
        int filled = 0;
        while (filler.ip.link().send(1, 0x88B5, frame, 0, 64) == FabricDevice.OK) {
            filled++;
        }
        assertTrue(filled > 0, "the ring filled");
        long deferred = layer.counter(TcpCounter.SEND_DEFERRED);
        peer.send(LayerWire.ip(0), new TcpRepr(PEER_PORT, PORT, 1001, iss + 2, TcpHeader.FIN | TcpHeader.ACK, 65_535));
        assertTrue(layer.counter(TcpCounter.SEND_DEFERRED) > deferred, "the ACK met the full ring");
        assertEquals(List.of(), peer.take(), "nothing reached the peer yet");
        wire.advance(LayerWire.MS); // past TcpConnection.BLOCKED_RETRY_NS
        Got ack = peer.only();
        assertEquals(TcpHeader.ACK, ack.h().flags(), "the ACK, sent again: " + ack);
        assertEquals(iss + 2, ack.h().sequenceNumber());
        assertEquals(1002, ack.h().acknowledgmentNumber());
        assertEquals(Map.of(TcpState.TIME_WAIT, 1), layer.states());
    }
}
