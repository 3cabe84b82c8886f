package dev.nupa.roce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * {@link Icrc} is a face of dev.nupa.l2.RoceV2, whose RoceV2Test (module stack-l2) holds the test
 * vectors and the bitwise reference; this checks the face against the ConnectX-4 capture.
 */
class IcrcTest {
    /** A RoCEv2 CNP captured from a ConnectX-4 Lx (scapy's test/contrib/roce.uts), IPv4 at offset 0; ICRC 82 fd 00 2a. */
    static final byte[] CNP = HexFormat.of().parseHex("45c2003c718c400040119161" + "0a0011010a001201"
            + "000012b700280000" + "8100ffff" + "40000118" + "00000000" + "00000000000000000000000000000000" + "82fd002a");

    @Test
    void computeVerifyAndWriteAgreeWithTheConnectX4Capture() {
        int covered = CNP.length - Icrc.LENGTH;
        MemorySegment s = MemorySegment.ofArray(CNP);
        assertEquals(0x2A00FD82, Icrc.compute(s, 0, covered));
        assertTrue(Icrc.verify(s, 0, covered));
        byte[] c = CNP.clone();
        c[covered] = 0;
        assertFalse(Icrc.verify(MemorySegment.ofArray(c), 0, covered));
        Icrc.write(MemorySegment.ofArray(c), 0, covered);
        assertTrue(Icrc.verify(MemorySegment.ofArray(c), 0, covered));
        assertEquals(4791, Icrc.UDP_PORT);
        assertThrows(IllegalArgumentException.class, () -> Icrc.compute(s, 0, 39));
    }
}
