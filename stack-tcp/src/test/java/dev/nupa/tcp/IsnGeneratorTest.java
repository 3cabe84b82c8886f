package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** RFC 6528 section 3 (and RFC 9293 3.4.1's 4-microsecond clock). */
class IsnGeneratorTest {
    private static final long K0 = 0x0706050403020100L; // key 00 01 .. 0f
    private static final long K1 = 0x0f0e0d0c0b0a0908L;
    private static final int LOCAL = 0x0a000001; // 10.0.0.1
    private static final int REMOTE = 0x0a000002; // 10.0.0.2

    @Test
    void rfc6528_3_isnIsTheFourMicrosecondTimerPlusSipHashOfTheFourTuple() {
        IsnGenerator isns = new IsnGenerator(K0, K1);
        // F = low 32 bits of SipHash-2-4(key 00..0f, the documented 24 bytes: local ip, remote ip,
        // local port, remote port little-endian, 12 zero bytes), computed here from the bytes.
        byte[] message = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(LOCAL).putInt(REMOTE).putShort((short) 80).putShort((short) 40000).array();
        int f = (int) SipHash.hash(K0, K1, message, 0, 24);
        assertEquals(0x3f4e1b25, f, "pinned: an independent SipHash gives a5868fd13f4e1b25");
        assertEquals(f, isns.isn(0, LOCAL, 80, REMOTE, 40000));
        // M at 1 s: 1e9 ns / 4000 ns = 250000 ticks.
        assertEquals(0x3f51ebb5, isns.isn(1_000_000_000L, LOCAL, 80, REMOTE, 40000));
        assertEquals(f + 250_000, isns.isn(1_000_000_000L, LOCAL, 80, REMOTE, 40000));
    }

    @Test
    void rfc9293_3_4_1_theIsnOfOneTupleAdvancesOneEveryFourMicroseconds() {
        IsnGenerator isns = new IsnGenerator(K0, K1);
        long now = 123_456L * IsnGenerator.TICK_NS;
        int isn = isns.isn(now, LOCAL, 80, REMOTE, 40000);
        assertEquals(isn, isns.isn(now + 3_999, LOCAL, 80, REMOTE, 40000));
        assertEquals(isn + 1, isns.isn(now + 4_000, LOCAL, 80, REMOTE, 40000));
        assertEquals(isn + 250, isns.isn(now + 1_000_000, LOCAL, 80, REMOTE, 40000), "1 ms");
    }

    @Test
    void rfc9293_3_4_1_theTimerWrapsEvery2To32TicksAbout4Point77Hours() {
        IsnGenerator isns = new IsnGenerator(K0, K1);
        long period = (1L << 32) * IsnGenerator.TICK_NS; // 17179.87 s = 4.77 h
        long now = 987_654_321_000L;
        int isn = isns.isn(now, LOCAL, 80, REMOTE, 40000);
        assertEquals(isn, isns.isn(now + period, LOCAL, 80, REMOTE, 40000));
        assertEquals(isn - 1, isns.isn(now + period - IsnGenerator.TICK_NS, LOCAL, 80, REMOTE, 40000));
    }

    @Test
    void rfc6528_3_nowMayHaveAnyOriginIncludingNegative() {
        IsnGenerator isns = new IsnGenerator(K0, K1);
        int at0 = isns.isn(0, LOCAL, 80, REMOTE, 40000);
        assertEquals(at0 - 1, isns.isn(-1, LOCAL, 80, REMOTE, 40000), "floor, not truncation");
        assertEquals(at0 - 1, isns.isn(-4_000, LOCAL, 80, REMOTE, 40000));
        assertEquals(at0 - 2, isns.isn(-4_001, LOCAL, 80, REMOTE, 40000));
    }

    @Test
    void rfc6528_3_everyFieldOfTheFourTupleMovesTheOffset() {
        IsnGenerator isns = new IsnGenerator(K0, K1);
        int base = isns.isn(0, LOCAL, 80, REMOTE, 40000);
        assertNotEquals(base, isns.isn(0, LOCAL + 1, 80, REMOTE, 40000));
        assertNotEquals(base, isns.isn(0, LOCAL, 81, REMOTE, 40000));
        assertNotEquals(base, isns.isn(0, LOCAL, 80, REMOTE + 1, 40000));
        assertNotEquals(base, isns.isn(0, LOCAL, 80, REMOTE, 40001));
        assertNotEquals(base, isns.isn(0, REMOTE, 40000, LOCAL, 80), "direction matters");
        Set<Integer> offsets = new HashSet<>();
        for (int port = 1024; port < 1024 + 4096; port++) {
            offsets.add(isns.isn(0, LOCAL, 80, REMOTE, port));
        }
        assertEquals(4096, offsets.size(), "neighbouring ports get unrelated ISNs");
    }

    @Test
    void rfc6528_3_theSecretKeyDecidesTheOffset() {
        int a = new IsnGenerator(K0, K1).isn(0, LOCAL, 80, REMOTE, 40000);
        assertNotEquals(a, new IsnGenerator(K0 + 1, K1).isn(0, LOCAL, 80, REMOTE, 40000));
        assertNotEquals(a, new IsnGenerator(K0, K1 + 1).isn(0, LOCAL, 80, REMOTE, 40000));
        // Secrets from SecureRandom: two generators agree with probability 2^-32.
        assertNotEquals(new IsnGenerator().isn(0, LOCAL, 80, REMOTE, 40000),
                new IsnGenerator().isn(0, LOCAL, 80, REMOTE, 40000));
    }

    @Test
    void portsUseOnlyTheirLow16Bits() {
        IsnGenerator isns = new IsnGenerator(K0, K1);
        assertEquals(isns.isn(0, LOCAL, 80, REMOTE, 40000), isns.isn(0, LOCAL, 80 | 0x10000, REMOTE, 40000 | 0xff0000));
    }
}
