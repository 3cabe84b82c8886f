package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Stateless SYN cookies (RFC 4987 section 3.6) as {@link SynCookies} lays them out. */
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
}
