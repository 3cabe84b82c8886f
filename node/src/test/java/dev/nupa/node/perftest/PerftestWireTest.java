package dev.nupa.node.perftest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** perftest's side-channel messages, byte for byte, as perftest 6.x writes and reads them (its KEY_PRINT_FMT_GID). */
class PerftestWireTest {
    /** As ib_write_lat writes it: lid, out_reads, qpn, psn, rkey, vaddr, the 16 GID bytes, srqn, a colon after each. */
    private static final String RXE = "0000:0001:000011:5a3c21:00001234:000055d0c8a4b000:"
            + "00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:01:0a:00000000:";

    @Test
    void qpDetailsAre107CharactersAndANul() {
        PerftestWire.Dest d = PerftestWire.Dest.ipv4(1, 0x11, 0x5a3c21, 0x1234, 0x55d0c8a4b000L, 0xC0A8010A);
        Buffer b = d.encode();
        assertEquals(PerftestWire.DEST_BYTES, b.length());
        assertEquals(RXE + "\0", b.toString(StandardCharsets.US_ASCII));
    }

    @Test
    void qpDetailsFromPerftestDecode() {
        PerftestWire.Dest d = PerftestWire.Dest.decode(Buffer.buffer((RXE + "\0").getBytes(StandardCharsets.US_ASCII)));
        assertEquals(0, d.lid());
        assertEquals(1, d.outReads());
        assertEquals(0x11, d.qpn());
        assertEquals(0x5a3c21, d.psn());
        assertEquals(0x1234, d.rkey());
        assertEquals(0x55d0c8a4b000L, d.vaddr());
        assertEquals(0xC0A8010A, d.ipv4Address());
        assertArrayEquals(d.gid(), PerftestWire.Dest.ipv4(0, 0, 0, 0, 0, 0xC0A8010A).gid());
        // the largest values of every field still fit the 108 bytes
        PerftestWire.Dest max = new PerftestWire.Dest(0xFFFF, 0xFFFF, 0xFFFFFF, 0xFFFFFF, -1, -1L, new byte[16], -1);
        PerftestWire.Dest back = PerftestWire.Dest.decode(max.encode());
        assertEquals(-1, back.rkey());
        assertEquals(-1L, back.vaddr());
        assertEquals(0xFFFFFF, back.psn());
    }

    @Test
    void malformedDetailsAndGidsOtherThanIpv4AreRefusedWithTheReason() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerftestWire.Dest.decode(Buffer.buffer(new byte[PerftestWire.DEST_BYTES])));
        assertTrue(e.getMessage().contains("malformed QP details"), e.getMessage());
        String notHex = RXE.replace("5a3c21", "5a3cz1");
        e = assertThrows(IllegalArgumentException.class,
                () -> PerftestWire.Dest.decode(Buffer.buffer((notHex + "\0").getBytes(StandardCharsets.US_ASCII))));
        assertTrue(e.getMessage().contains("not hex"), e.getMessage());
        String linkLocal = RXE.replace("00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:01:0a", "fe:80:00:00:00:00:00:00:50:54:00:ff:fe:77:00:02");
        PerftestWire.Dest d = PerftestWire.Dest.decode(Buffer.buffer((linkLocal + "\0").getBytes(StandardCharsets.US_ASCII)));
        e = assertThrows(IllegalArgumentException.class, d::ipv4Address);
        assertTrue(e.getMessage().contains("run it with -x N"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new PerftestWire.Dest(0, 1 << 16, 0, 0, 0, 0, new byte[16], 0).encode());
    }

    @Test
    void versionSizesAndMtu() {
        Buffer v = PerftestWire.version();
        assertEquals(16, v.length());
        assertEquals("6.06", v.getString(0, 4, "US-ASCII"));
        assertEquals(0, v.getByte(4));
        assertEquals(6.28, PerftestWire.version(Buffer.buffer(new byte[16]).setString(0, "6.28", "US-ASCII")));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerftestWire.version(Buffer.buffer(new byte[16]).setString(0, "5.60", "US-ASCII")));
        assertTrue(e.getMessage().contains("5.7 or newer"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PerftestWire.version(Buffer.buffer("GET / HTTP/1.1\r\n")));
        assertTrue(e.getMessage().contains("no perftest version"), e.getMessage());
        assertArrayEquals(new byte[] {0, 0, 0x10, 0}, PerftestWire.int32(4096).getBytes());
        assertArrayEquals(new byte[] {'3', 0}, PerftestWire.mtu(1024).getBytes());
        assertEquals(1024, PerftestWire.mtu(Buffer.buffer(new byte[] {'5', 0}), 1024), "the smaller of the two");
        assertEquals(512, PerftestWire.mtu(Buffer.buffer(new byte[] {'2', 0}), 1024));
        assertEquals(1024, PerftestWire.mtu(Buffer.buffer(new byte[] {'9', 0}), 1024), "an offer out of range leaves ours");
        assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, PerftestWire.done().getBytes());
        assertEquals(8, PerftestWire.double64(1.5).length());
        assertEquals(1.5, PerftestWire.double64(1.5).getDouble(0));
    }

    /** With -R the details go as perftest's struct pingpong_dest itself: 56 bytes, big-endian, 4 bytes of padding after rkey. */
    @Test
    void qpDetailsOverRdmaCmAreTheStructBigEndian() {
        PerftestWire.Dest d = PerftestWire.Dest.ipv4(16, 0x11, 0x5a3c21, 0x1234, 0x55d0c8a4b000L, 0xC0A8010A);
        Buffer b = d.encodeBinary();
        assertEquals(PerftestWire.CM_DEST_BYTES, b.length());
        assertEquals("00000000" + "00000010" + "00000011" + "005a3c21" + "00001234" + "00000000" + "000055d0c8a4b000"
                + "00000000000000000000ffffc0a8010a" + "00000000" + "00000001", java.util.HexFormat.of().formatHex(b.getBytes()));
        PerftestWire.Dest back = PerftestWire.Dest.decodeBinary(b);
        assertEquals(d.toString(), back.toString());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerftestWire.Dest.decodeBinary(Buffer.buffer(new byte[16])));
        assertTrue(e.getMessage().contains("perftest -R sends 56"), e.getMessage());
    }
}
