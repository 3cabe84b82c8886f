package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.nupa.tcp.LayerWire.Got;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpRepr;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The checksum policy of the IP configuration (docs/link-layer.md): on the lossless fabric a node may
 * neither compute nor verify TCP checksums, as Linux does on lo; otherwise every segment carries one.
 */
class TcpChecksumPolicyTest {
    static final int PORT = 5001;
    static final TcpConfig CONFIG = TcpConfig.defaults(9000).withDelayedAck(0);

    private static Got synAck(boolean checksums) {
        try (LayerWire wire = new LayerWire(2, checksums)) {
            TcpLayer server = wire.tcp(0, CONFIG);
            server.listen(PORT, 4, CONFIG, c -> { });
            LayerWire.Raw peer = wire.raw(1);
            peer.send(LayerWire.ip(0), new TcpRepr(40000, PORT, 1000, 0, TcpHeader.SYN, 65_535, 0, 1460, -1, false, null, List.of()));
            return peer.only();
        }
    }

    @Test
    void rfc9293_3_1_withChecksumsOnASegmentCarriesItsChecksum() {
        Got g = synAck(true); // the raw peer verified it
        assertEquals(TcpHeader.SYN | TcpHeader.ACK, g.h().flags());
        assertNotEquals(0, g.checksum());
    }

    @Test
    void losslessFabricPolicy_withChecksumsOffTheSumIsNeitherComputedNorVerified() {
        Got g = synAck(false);
        assertEquals(TcpHeader.SYN | TcpHeader.ACK, g.h().flags());
        assertEquals(0, g.checksum(), "left 0, as Linux leaves it on lo");
    }
}
