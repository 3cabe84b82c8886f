package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Stateless SYN cookies (RFC 4987 section 3.6) as {@link SynCookies} lays them out, and the options
 * they keep in the SYN-ACK's timestamp (Linux's cookie_init_timestamp / cookie_timestamp_decode).
 */
class SynCookiesTest {
    private static final long K0 = 0x0706050403020100L;
    private static final long K1 = 0x0f0e0d0c0b0a0908L;
    private static final long TICK = SynCookies.TICK_NS;
    private static final int SERVER = 0x0a000001; // 10.0.0.1:80
    private static final int CLIENT = 0xc0a80102; // 192.168.1.2:51000
    private static final int CLIENT_ISN = 0x12345678;

    private final SynCookies cookies = new SynCookies(K0, K1);

    /** The server's side of the ACK: decode with SEQ = client ISN + 1 and ACK = cookie + 1. */
    private int ack(long now, int cookie, int clientIsn) {
        int seg = clientIsn + 1;
        int ackNumber = cookie + 1;
        return cookies.decode(now, SERVER, 80, CLIENT, 51000, seg, ackNumber - 1);
    }

    @Test
    void rfc4987_3_6_aCookieRoundTripsToTheLargestTableMssNotAboveTheOffer() {
        long now = 1_000 * TICK + 12_345;
        int[][] offerAndPromise = {
            {536, 536}, {1460, 1460}, {1459, 1440}, {1300, 1300}, {1400, 1300}, {1440, 1440},
            {4056, 4056}, {8960, 8960}, {9000, 8960}, {16344, 16344}, {65535, 65495}, {65495, 65495},
            {100, 536}, // below the table: 536, as Linux
        };
        for (int[] pair : offerAndPromise) {
            int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, pair[0]);
            assertEquals(pair[1], ack(now, cookie, CLIENT_ISN), "offer " + pair[0]);
        }
    }

    @Test
    void rfc4987_3_6_theMssTableIsAscendingAndHoldsEthernetAndTheFabricMtu() {
        int[] table = SynCookies.MSS_TABLE;
        assertEquals(8, table.length, "3 bits");
        for (int i = 1; i < table.length; i++) {
            assertTrue(table[i - 1] < table[i]);
        }
        assertEquals(3, SynCookies.indexFor(1460));
        assertEquals(5, SynCookies.indexFor(9000 - 40));
        assertEquals(0, SynCookies.indexFor(0));
        assertEquals(0, SynCookies.indexFor(-1));
        assertEquals(7, SynCookies.indexFor(Integer.MAX_VALUE));
    }

    @Test
    void rfc4987_3_6_aCookieIsAcceptedUntilTheCountHasMovedTwoTicks() {
        long start = 500 * TICK; // the first nanosecond of a tick
        int early = cookies.encode(start, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        assertEquals(1460, ack(start, early, CLIENT_ISN));
        assertEquals(1460, ack(start + 2 * TICK - 1, early, CLIENT_ISN), "almost 128 s old: accepted");
        assertEquals(-1, ack(start + 2 * TICK, early, CLIENT_ISN), "the count moved two ticks: expired");

        long last = start + TICK - 1; // the last nanosecond of the same tick
        int late = cookies.encode(last, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        assertEquals(1460, ack(last + TICK, late, CLIENT_ISN), "64 s old, one tick on");
        assertEquals(-1, ack(last + TICK + 1, late, CLIENT_ISN), "64 s + 1 ns old, but two ticks on");
        assertEquals(-1, ack(start - 1, early, CLIENT_ISN), "a cookie from the future is refused");
    }

    @Test
    void rfc4987_3_6_theFiveBitCountWrapsWhileTheMacKeepsTheFullCount() {
        long tick31 = 31 * TICK;
        int cookie = cookies.encode(tick31, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 8960);
        assertEquals(8960, ack(32 * TICK, cookie, CLIENT_ISN), "count bits 31 -> 0 is one tick");
        // 32 ticks later the 5 count bits read the same again; the MAC over the full count fails.
        long tick5 = 5 * TICK;
        int old = cookies.encode(tick5, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 8960);
        assertEquals(-1, ack(tick5 + 32 * TICK, old, CLIENT_ISN));
        assertEquals(-1, ack(tick5 + 33 * TICK, old, CLIENT_ISN));
        assertEquals(-1, ack(tick5 + 32L * 1_000 * TICK, old, CLIENT_ISN));
    }

    @Test
    void rfc4987_3_6_sequenceArithmeticWrapsModulo2To32() {
        long now = 77 * TICK;
        int[] clientIsns = {-1, -2, 0, Integer.MAX_VALUE, Integer.MIN_VALUE};
        for (int clientIsn : clientIsns) {
            // For 0xffffffff the ACK's sequence number, client ISN + 1, wraps to 0.
            int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, clientIsn, 1460);
            assertEquals(1460, ack(now, cookie, clientIsn), "client ISN " + Integer.toHexString(clientIsn));
        }
        Random random = new Random(6528);
        int wrapped = 0;
        for (int i = 0; i < 4096; i++) {
            int clientIsn = random.nextInt();
            int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, clientIsn, 536);
            assertEquals(536, ack(now, cookie, clientIsn));
            if (Integer.compareUnsigned(cookie, clientIsn) < 0) {
                wrapped++; // value + H0 + client ISN passed 2^32
            }
        }
        assertTrue(wrapped > 1000, "about half the sums wrap: " + wrapped);
    }

    @Test
    void rfc4987_3_6_nowMayBeNegative() {
        int cookie = cookies.encode(-1, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        assertEquals(1460, ack(0, cookie, CLIENT_ISN), "tick -1 to tick 0 is one tick");
        assertEquals(-1, ack(2 * TICK, cookie, CLIENT_ISN));
    }

    @Test
    void rfc4987_3_6_aCookieIsBoundToItsFourTuple() {
        long now = 9 * TICK;
        int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        int seg = CLIENT_ISN + 1;
        assertEquals(1460, cookies.decode(now, SERVER, 80, CLIENT, 51000, seg, cookie));
        assertEquals(-1, cookies.decode(now, SERVER + 1, 80, CLIENT, 51000, seg, cookie), "local address");
        assertEquals(-1, cookies.decode(now, SERVER, 8080, CLIENT, 51000, seg, cookie), "local port");
        assertEquals(-1, cookies.decode(now, SERVER, 80, CLIENT + 1, 51000, seg, cookie), "remote address");
        assertEquals(-1, cookies.decode(now, SERVER, 80, CLIENT, 51001, seg, cookie), "remote port");
        assertEquals(-1, cookies.decode(now, CLIENT, 51000, SERVER, 80, seg, cookie), "reversed");
    }

    @Test
    void rfc4987_3_6_flippingAnyBitOfTheAckOrItsSequenceNumberFails() {
        long now = 9 * TICK;
        int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        for (int bit = 0; bit < 32; bit++) {
            assertEquals(-1, cookies.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, cookie ^ (1 << bit)),
                    "acknowledgment bit " + bit);
            assertEquals(-1, cookies.decode(now, SERVER, 80, CLIENT, 51000, (CLIENT_ISN + 1) ^ (1 << bit), cookie),
                    "sequence bit " + bit);
        }
    }

    @Test
    void rfc4987_3_6_theMssIndexIsAuthenticatedNotJustHidden() {
        long now = 9 * TICK;
        int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 536);
        // Adding k << 24 moves the index field by k (the sum is modulo 2^32): every other MSS fails.
        for (int k = 1; k < 8; k++) {
            assertEquals(-1, ack(now, cookie + (k << 24), CLIENT_ISN), "index + " + k);
        }
    }

    @Test
    void rfc4987_3_6_anotherSecretRejectsTheCookie() {
        long now = 9 * TICK;
        int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        SynCookies other = new SynCookies(K0, K1 + 1);
        assertEquals(-1, other.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, cookie));
        SynCookies random = new SynCookies();
        assertEquals(-1, random.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, cookie));
    }

    @Test
    void rfc4987_3_6_randomAcksAreRefusedAndNeverThrow() {
        Random random = new Random(4987);
        long now = 3 * TICK;
        for (int i = 0; i < 200_000; i++) {
            int mss = cookies.decode(now, random.nextInt(), random.nextInt(), random.nextInt(), random.nextInt(),
                    random.nextInt(), random.nextInt());
            assertEquals(-1, mss);
        }
    }

    @Test
    void rfc6528_cookieIsnsDoNotShowTheClockInTheirTopBits() {
        long now = 9 * TICK;
        Set<Integer> topBits = new HashSet<>();
        for (int port = 1024; port < 1024 + 256; port++) {
            topBits.add(cookies.encode(now, SERVER, 80, CLIENT, port, CLIENT_ISN, 1460) >>> 27);
        }
        assertTrue(topBits.size() > 24, "the count bits are masked by H0: " + topBits.size() + " of 32");
    }
    // ---- options in the timestamp ---------------------------------------------------------------

    @Test
    void linuxCookieInitTimestamp_windowScaleAndSackTakeTheLowFiveBitsAsLinuxLaysThemOut() {
        assertEquals(7 | 1 << 4, SynCookies.options(7, true));
        assertEquals(0, SynCookies.options(0, false), "shift 0 is a shift, not its absence");
        assertEquals(0xf, SynCookies.options(-1, false), "15: no window scale in the SYN");
        assertEquals(0xf | 1 << 4, SynCookies.options(-1, true));
        assertEquals(14, SynCookies.options(15, false), "RFC 7323 2.3: above 14 counts as 14");
        for (int shift = -1; shift <= 14; shift++) {
            for (boolean sack : new boolean[] {false, true}) {
                int options = SynCookies.options(shift, sack);
                assertTrue(options >= 0 && options < 1 << SynCookies.TS_OPTION_BITS, "fits 6 bits: " + options);
                assertEquals(0, options & 1 << 5, "Linux's ECN bit stays 0");
                assertEquals(shift, SynCookies.windowShift(options), "shift " + shift);
                assertEquals(sack, SynCookies.sackPermitted(options), "shift " + shift);
            }
        }
        assertEquals(-1, SynCookies.windowShift(SynCookies.NO_TIMESTAMPS));
        assertFalse(SynCookies.sackPermitted(SynCookies.NO_TIMESTAMPS));
    }

    @Test
    void linuxCookieTimestampDecode_theOptionsAreTheLowSixBitsOfTheEchoOrNoneWithoutATimestamp() {
        assertEquals(0x17, SynCookies.optionsFromEcho(true, 0x1234_5697));
        assertEquals(0x3f, SynCookies.optionsFromEcho(true, -1));
        assertEquals(SynCookies.NO_TIMESTAMPS, SynCookies.optionsFromEcho(false, 0x17));
    }

    @Test
    void rfc7323_5_3_theCookieTsvalIsNeverAheadOfTheClockAndAtMost63TicksBehind() {
        Random random = new Random(7323);
        int[] clocks = {0, 1, 63, 64, 65, 0x7fff_ffff, 0x8000_0000, -1, -64, -63, 0xffff_ffc0};
        for (int i = 0; i < 20_000; i++) {
            int clock = i < clocks.length ? clocks[i] : random.nextInt();
            int options = random.nextInt(1 << SynCookies.TS_OPTION_BITS);
            int ts = SynCookies.timestampValue(clock, options);
            assertEquals(options, ts & 63, "the options survive in the low bits");
            int behind = clock - ts; // modulo 2^32, as PAWS compares (RFC 7323 5.3)
            assertTrue(behind >= 0 && behind <= 63, "clock " + Integer.toHexString(clock) + " options " + options
                    + ": " + behind + " ticks behind");
        }
        assertEquals(0x1017, SynCookies.timestampValue(0x1020, 0x17), "above 0x17 in its block of 64: same block");
        assertEquals(0x0fd7, SynCookies.timestampValue(0x1010, 0x17), "below: the block before");
    }

    @Test
    void rfc4987_3_6_aCookieRoundTripsItsOptionsAndTheMssThroughTheEcho() {
        long now = 9 * TICK;
        for (int options = 0; options < 32; options++) {
            int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460, options);
            int echo = SynCookies.timestampValue(123_456_789, options);
            assertEquals(1460, cookies.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, cookie,
                    SynCookies.optionsFromEcho(true, echo)), "options " + options);
        }
        int plain = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460, SynCookies.NO_TIMESTAMPS);
        assertEquals(plain, cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460), "the old form: no timestamps");
        assertEquals(1460, cookies.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, plain));
    }

    @Test
    void rfc4987_3_6_theEchoedOptionsAreAuthenticatedSoAChangedOrDroppedEchoFails() {
        long now = 9 * TICK;
        int sent = SynCookies.options(7, true);
        int cookie = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460, sent);
        for (int echoed = 0; echoed <= SynCookies.NO_TIMESTAMPS; echoed++) {
            int mss = cookies.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, cookie, echoed);
            assertEquals(echoed == sent ? 1460 : -1, mss, "echoed options " + echoed);
        }
        int plain = cookies.encode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460);
        for (int echoed = 0; echoed < SynCookies.NO_TIMESTAMPS; echoed++) {
            assertEquals(-1, cookies.decode(now, SERVER, 80, CLIENT, 51000, CLIENT_ISN + 1, plain, echoed),
                    "a timestamp on the ACK of a cookie sent without: " + echoed);
        }
    }

    @Test
    void encodingOptionsOutsideTheSixBitsIsMisuse() {
        for (int bad : new int[] {-1, 65, 1 << 10, Integer.MIN_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cookies.encode(0, SERVER, 80, CLIENT, 51000, CLIENT_ISN, 1460, bad));
            assertTrue(e.getMessage().contains("cookie options " + bad), e.getMessage());
        }
    }

    @Test
    void linuxSecureTcpTsOff_theTimestampClockBaseIsPerFourTupleAndSecret() {
        long base = cookies.timestampBase(SERVER, 80, CLIENT, 51000);
        assertEquals(base, new SynCookies(K0, K1).timestampBase(SERVER, 80, CLIENT, 51000), "a function of secret and 4-tuple");
        assertNotEquals(base, cookies.timestampBase(SERVER, 80, CLIENT, 51001));
        assertNotEquals(base, new SynCookies(K0, K1 + 1).timestampBase(SERVER, 80, CLIENT, 51000));
        assertEquals(0, base % 1_000_000L, "whole milliseconds");
        assertTrue(base <= 0 && base > -(1L << 32) * 1_000_000L, "a 32-bit offset of milliseconds: " + base);
        // The clock under that base ticks once a millisecond from wherever the offset put it.
        int at = TcpConnection.timestampClock(5_000_000_000L, base);
        assertEquals(1000, TcpConnection.timestampClock(6_000_000_000L, base) - at);
        assertEquals(at, TcpConnection.timestampClock(5_000_999_999L, base));
    }
}
