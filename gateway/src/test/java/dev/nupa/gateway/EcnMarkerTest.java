package dev.nupa.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

import dev.nupa.ip.wire.Checksum;

class EcnMarkerTest {
    /** RFC 791 example-shaped header: 20 bytes of IPv4/UDP from 10.0.0.2 to 192.168.77.1, TOS {@code tos}, its checksum right. */
    private static MemorySegment datagram(int tos) {
        byte[] b = {0x45, (byte) tos, 0x00, 0x30, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,
                10, 0, 0, 2, (byte) 192, (byte) 168, 77, 1};
        MemorySegment m = MemorySegment.ofArray(new byte[48]);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, m, 0, b.length);
        m.set(EthernetFrame.BE_SHORT, 10, (short) Checksum.finish(Checksum.sum(m, 0, 20)));
        return m;
    }

    private static int tos(MemorySegment m) {
        return m.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 1) & 0xFF;
    }

    private static boolean checksumHolds(MemorySegment m) {
        return Checksum.finish(Checksum.sum(m, 0, 20)) == 0;
    }

    @Test
    void marksEctDatagramsOnlyPastTheThresholdAndKeepsTheChecksum() {
        EcnMarker e = new EcnMarker(2);
        MemorySegment first = datagram(0xB8 | EcnMarker.ECT_0); // DSCP 46 kept
        MemorySegment second = datagram(EcnMarker.ECT_1);
        MemorySegment third = datagram(0xB8 | EcnMarker.ECT_0);
        assertFalse(e.onDatagram(first, 0, 48, 7));
        assertFalse(e.onDatagram(second, 0, 48, 7));
        assertTrue(e.onDatagram(third, 0, 48, 7), "two frames ahead reach the threshold of 2");
        assertEquals(EcnMarker.ECT_0 | 0xB8, tos(first));
        assertEquals(0xB8 | EcnMarker.CE, tos(third));
        assertTrue(checksumHolds(third), "RFC 1624 incremental update");
        e.roundEnded();
        e.onDatagram(datagram(0), 0, 48, 7);
        MemorySegment next = datagram(EcnMarker.ECT_0);
        assertFalse(e.onDatagram(next, 0, 48, 7), "a new round starts with no backlog");
        assertEquals(EcnMarker.ECT_0, tos(next));
        assertTrue(e.onDatagram(datagram(EcnMarker.ECT_0), 0, 48, 7), "the third of the round again");
        assertFalse(e.onDatagram(datagram(EcnMarker.ECT_0), 0, 48, 8), "another now is another round");
    }

    @Test
    void leavesNotEctAndCeAlone() {
        EcnMarker e = new EcnMarker(1);
        e.onDatagram(datagram(0), 0, 48, 7);
        MemorySegment notEct = datagram(0x10);
        assertFalse(e.onDatagram(notEct, 0, 48, 7));
        assertEquals(0x10, tos(notEct));
        assertTrue(checksumHolds(notEct));
        MemorySegment ce = datagram(EcnMarker.CE);
        assertFalse(e.onDatagram(ce, 0, 48, 7), "already marked");
        assertTrue(checksumHolds(ce));
    }

    @Test
    void checksumHoldsForEveryTosAndHeader() {
        for (int tos = 0; tos < 256; tos++) {
            for (int id = 0; id < 0x10000; id += 0x1111) {
                MemorySegment m = datagram(tos);
                m.set(EthernetFrame.BE_SHORT, 4, (short) id);
                m.set(EthernetFrame.BE_SHORT, 10, (short) 0);
                m.set(EthernetFrame.BE_SHORT, 10, (short) Checksum.finish(Checksum.sum(m, 0, 20)));
                boolean marked = EcnMarker.markCe(m, 0);
                assertEquals((tos & 3) == 1 || (tos & 3) == 2, marked, "tos " + tos);
                assertTrue(checksumHolds(m), "tos " + tos + " id " + id);
            }
        }
    }

    @Test
    void refusesAThresholdBelowOne() {
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> new EcnMarker(0));
        assertTrue(x.getMessage().contains("Integer.MAX_VALUE"));
    }
}
