package dev.nupa.roce.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;

class CnpTest {
    /** IBA annex A17.9.2: BTH opcode 0x81, BECN set, P_Key 0xFFFF, DestQP, PSN 0; 16 reserved bytes. */
    private static final byte[] CNP_TO_QP_0x12345 = {
            (byte) 0x81, 0x00, (byte) 0xFF, (byte) 0xFF, 0x40, 0x01, 0x23, 0x45, 0x00, 0x00, 0x00, 0x00,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

    @Test
    void writesTheAnnexLayout() {
        MemorySegment m = MemorySegment.ofArray(new byte[Cnp.LENGTH]);
        m.fill((byte) 0x5A); // reserved bytes must be written as 0, not left
        Cnp.write(m, 0, 0x12345);
        assertArrayEquals(CNP_TO_QP_0x12345, m.toArray(ValueLayout.JAVA_BYTE));
        assertEquals(28, Cnp.LENGTH);
    }

    @Test
    void roundTrips() {
        MemorySegment m = MemorySegment.ofArray(CNP_TO_QP_0x12345.clone());
        assertTrue(Cnp.isCnp(m, 0, Cnp.LENGTH));
        CnpRepr r = CnpRepr.parse(m, 0, Cnp.LENGTH);
        assertEquals(new CnpRepr(0x12345, true), r);
        MemorySegment out = MemorySegment.ofArray(new byte[r.length()]);
        r.emitInto(out, 0);
        assertArrayEquals(CNP_TO_QP_0x12345, out.toArray(ValueLayout.JAVA_BYTE));
    }

    @Test
    void refusesATruncatedCnp() {
        MemorySegment m = MemorySegment.ofArray(CNP_TO_QP_0x12345.clone());
        assertFalse(Cnp.isCnp(m, 0, Cnp.LENGTH - 1));
        assertFalse(Cnp.isCnp(m, 0, Bth.LENGTH));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CnpRepr.parse(m, 0, Bth.LENGTH));
        assertTrue(e.getMessage().contains("needs 28"), e.getMessage());
    }

    @Test
    void refusesAnotherOpcode() {
        byte[] b = CNP_TO_QP_0x12345.clone();
        b[0] = Opcode.RC_ACKNOWLEDGE;
        MemorySegment m = MemorySegment.ofArray(b);
        assertFalse(Cnp.isCnp(m, 0, Cnp.LENGTH));
        assertThrows(IllegalArgumentException.class, () -> CnpRepr.parse(m, 0, Cnp.LENGTH));
        assertThrows(IllegalArgumentException.class, () -> new CnpRepr(1 << 24, true));
    }
}
