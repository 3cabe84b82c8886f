package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.WireBytes.hex;
import static dev.nupa.ip.wire.WireBytes.naiveSum;
import static dev.nupa.ip.wire.WireBytes.seg;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ChecksumTest {

    @Test
    void rfc1071Section3ExampleSumsToDdf2AndChecksumIs220d() {
        // RFC 1071 section 3, "Numerical Examples": bytes 00 01 f2 03 f4 f5 f6 f7, sum 2ddf0 folds to ddf2.
        MemorySegment s = seg("0001f203f4f5f6f7");
        assertEquals(0xDDF2, Checksum.sum(s, 0, 8));
        assertEquals(0x220D, Checksum.compute(s, 0, 8));
        assertEquals(0xDDF2, naiveSum(hex("0001f203f4f5f6f7")));
    }

    @Test
    void swappingEveryWordOfTheRfc1071ExampleSwapsTheSum() {
        // RFC 1071 2(B), byte order independence: swapped words give the swapped sum, f2dd.
        assertEquals(0xF2DD, Checksum.sum(seg("0100 03f2 f5f4 f7f6"), 0, 8));
        assertEquals(0xF2DD, Checksum.swap(0xDDF2));
    }

    @Test
    void oddLengthPadsTheLastByteWithZeroOnTheRight() {
        // RFC 1071 4.1: "Add left-over byte, if any".
        assertEquals(0xAB00, Checksum.sum(seg("ab"), 0, 1));
        assertEquals(0x0102 + 0x0300, Checksum.sum(seg("010203"), 0, 3));
        assertEquals(0, Checksum.sum(seg(""), 0, 0));
    }

    @Test
    void fastSumEqualsNaiveWordSumForEveryLengthAndAlignment() {
        Random r = new Random(1071);
        byte[] b = new byte[600];
        for (int round = 0; round < 20; round++) {
            r.nextBytes(b);
            for (int from = 0; from < 9; from++) {
                for (int len = 0; from + len <= 300; len++) {
                    assertEquals(naiveSum(b, from, from + len), Checksum.sum(seg(b), from, len),
                            "from " + from + " len " + len);
                }
            }
        }
    }

    @Test
    void allOnesDataSumsToFfffAndLargeBuffersDoNotOverflowTheAccumulator() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment big = arena.allocate(16L << 20);
            big.fill((byte) 0xFF);
            assertEquals(0xFFFF, Checksum.sum(big, 0, big.byteSize()));
            assertEquals(0xFFFF, Checksum.sum(big, 3, big.byteSize() - 4));
            assertEquals(0xFF00, Checksum.sum(big, 3, big.byteSize() - 3), "odd count: the last ff is padded to ff00");
            Random r = new Random(7);
            byte[] b = new byte[65536 + 7];
            r.nextBytes(b);
            MemorySegment.copy(b, 0, big, ValueLayout.JAVA_BYTE, 0, b.length);
            assertEquals(naiveSum(b), Checksum.sum(big, 0, b.length));
        }
    }

    @Test
    void combineOfTwoPiecesEqualsSumOfTheWholeAtEvenAndOddSplits() {
        Random r = new Random(2);
        byte[] b = new byte[97];
        r.nextBytes(b);
        int whole = Checksum.sum(seg(b), 0, b.length);
        for (int k = 0; k <= b.length; k++) {
            int a = Checksum.sum(seg(b), 0, k);
            int c = Checksum.sum(seg(b), k, b.length - k);
            assertEquals(whole % 0xFFFF, Checksum.combine(a, c, k) % 0xFFFF, "split at " + k);
        }
    }

    @Test
    void pseudoHeaderSumEqualsSumOfTheRfc768PseudoHeaderBytes() {
        Random r = new Random(768);
        for (int i = 0; i < 1000; i++) {
            int src = r.nextInt();
            int dst = r.nextInt();
            int proto = r.nextInt(256);
            int len = r.nextInt(65536);
            assertEquals(naiveSum(WireBytes.pseudoHeader(src, dst, proto, len)) % 0xFFFF,
                    Checksum.pseudoHeaderSum(src, dst, proto, len) % 0xFFFF);
        }
    }

    @Test
    void rfc1624Section4ExampleUpdateGivesZeroNotNegativeZero() {
        // RFC 1624 section 4: HC = 0xDD2F, field 0x5555 becomes 0x3285; eqn. 3 gives 0x0000.
        assertEquals(0x0000, Checksum.update(0xDD2F, 0x5555, 0x3285));
    }

    @Test
    void rfc1624IncrementalUpdateMatchesFullRecomputationOfIpv4Headers() {
        Random r = new Random(1624);
        byte[] b = new byte[20];
        MemorySegment s = seg(b);
        for (int i = 0; i < 10_000; i++) {
            r.nextBytes(b);
            b[0] = 0x45;
            b[10] = 0;
            b[11] = 0;
            int checksum = Checksum.compute(s, 0, 20);
            b[10] = (byte) (checksum >>> 8);
            b[11] = (byte) checksum;
            int word = 2 * (r.nextInt(10));
            if (word == 10) {
                continue;
            }
            int old = WireBytes.u16(b, word);
            int neu = r.nextInt(65536);
            if (word == 0) {
                neu = 0x4500 | (neu & 0xFF);
            }
            b[word] = (byte) (neu >>> 8);
            b[word + 1] = (byte) neu;
            int updated = Checksum.update(checksum, old, neu);
            b[10] = 0;
            b[11] = 0;
            assertEquals(Checksum.compute(s, 0, 20), updated, "word " + word);
        }
    }

    @Test
    void update32ChangesBothHalvesOfAnAddress() {
        byte[] b = hex("4500007300004000401100000a0000010a000002");
        MemorySegment s = seg(b);
        int checksum = Checksum.compute(s, 0, 20);
        s.set(Checksum.BE_INT, 12, 0xC0A80001);
        assertEquals(Checksum.compute(s, 0, 20), Checksum.update32(checksum, 0x0A000001, 0xC0A80001));
    }

    @Test
    void verifyFailsOnEverySingleBitFlip() {
        byte[] b = hex("4500003c4b6440004001f15a7f0000017f000001");
        assertTrue(Checksum.verifies(seg(b), 0, 20));
        for (int bit = 0; bit < 160; bit++) {
            b[bit / 8] ^= (byte) (1 << (bit % 8));
            assertFalse(Checksum.verifies(seg(b), 0, 20), "bit " + bit);
            b[bit / 8] ^= (byte) (1 << (bit % 8));
        }
    }
}
