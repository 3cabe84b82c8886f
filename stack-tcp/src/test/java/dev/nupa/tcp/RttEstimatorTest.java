package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** RFC 6298 (with RFC 7323 appendix G), one rule a test; times in nanoseconds. */
class RttEstimatorTest {
    private static final long MS = 1_000_000L;
    private static final long US = 1_000L;
    private static final long S = 1_000_000_000L;

    @Test
    void rfc6298_2_1_beforeAnySampleTheRtoIsOneSecond() {
        RttEstimator rtt = new RttEstimator();
        assertEquals(S, rtt.rto());
        assertFalse(rtt.hasSample());
        assertEquals(0, rtt.backoffs());
    }

    @Test
    void rfc6298_2_2_firstSampleSetsSrttToRAndRttvarToHalfR() {
        RttEstimator rtt = new RttEstimator();
        assertTrue(rtt.sample(100 * MS));
        assertEquals(100 * MS, rtt.srtt());
        assertEquals(50 * MS, rtt.rttvar());
        // RTO = SRTT + max(G, K * RTTVAR) = 100 ms + max(1 ms, 4 * 50 ms) = 300 ms.
        assertEquals(300 * MS, rtt.rto());
    }

    @Test
    void rfc6298_2_3_laterSamplesUpdateRttvarFirstThenSrttWithBetaQuarterAndAlphaEighth() {
        RttEstimator rtt = new RttEstimator();
        rtt.sample(100 * MS);
        rtt.sample(200 * MS);
        // RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 37.5 + 25 = 62.5 ms (with the old SRTT, 100 ms);
        // SRTT = 7/8 * 100 + 1/8 * 200 = 112.5 ms; RTO = 112.5 + 4 * 62.5 = 362.5 ms.
        assertEquals(62_500 * US, rtt.rttvar());
        assertEquals(112_500 * US, rtt.srtt());
        assertEquals(362_500 * US, rtt.rto());
        rtt.sample(50 * MS);
        // RTTVAR = 3/4 * 62.5 + 1/4 * |112.5 - 50| = 46.875 + 15.625 = 62.5 ms;
        // SRTT = 7/8 * 112.5 + 1/8 * 50 = 98.4375 + 6.25 = 104.6875 ms.
        assertEquals(62_500 * US, rtt.rttvar());
        assertEquals(104_687_500L, rtt.srtt());
    }

    @Test
    void rfc6298_2_3_clockGranularityFloorsTheVarianceTerm() {
        RttEstimator rtt = new RttEstimator(S, 1 * US, 60 * S, 1 * MS);
        for (int i = 0; i < 200; i++) {
            rtt.sample(10 * MS);
        }
        // Identical samples shrink RTTVAR by a quarter each, down to the 3 ns integer division keeps.
        assertTrue(rtt.rttvar() < 4, "RTTVAR " + rtt.rttvar());
        assertEquals(10 * MS + 1 * MS, rtt.rto(), "RTO = SRTT + G once 4 * RTTVAR < G");
    }

    @Test
    void rfc6298_2_4_rtoIsRoundedUpToTheConfiguredMinimum() {
        RttEstimator linuxLike = new RttEstimator();
        linuxLike.sample(20 * US); // a fabric round trip
        assertEquals(RttEstimator.DEFAULT_MIN_RTO_NS, linuxLike.rto(), "200 ms by default");

        RttEstimator rfc = new RttEstimator(S, S, 60 * S, 1 * MS);
        rfc.sample(20 * MS);
        assertEquals(S, rfc.rto(), "RFC 6298's own 1 s");

        RttEstimator fabric = new RttEstimator(S, 2 * MS, 60 * S, 10 * US);
        fabric.sample(20 * US);
        assertEquals(2 * MS, fabric.rto(), "a fabric deployment's 2 ms");
        fabric = new RttEstimator(S, 50 * US, 60 * S, 10 * US);
        fabric.sample(20 * US);
        // 20 us + max(10 us, 4 * 10 us) = 60 us, above the 50 us floor.
        assertEquals(60 * US, fabric.rto());
    }

    @Test
    void rfc6298_2_5_theMaximumRtoMustBeAtLeastSixtySecondsAndCapsTheRto() {
        assertThrows(IllegalArgumentException.class, () -> new RttEstimator(S, 200 * MS, 59 * S, MS));
        RttEstimator rtt = new RttEstimator(S, 200 * MS, 60 * S, MS);
        rtt.sample(50 * S); // 50 s + 4 * 25 s = 150 s
        assertEquals(60 * S, rtt.rto());
        rtt.sample(Long.MAX_VALUE); // clamped, no overflow
        assertEquals(60 * S, rtt.rto());
    }

    @Test
    void rfc6298_2_constructorRejectsInconsistentBounds() {
        assertThrows(IllegalArgumentException.class, () -> new RttEstimator(S, 0, 60 * S, MS));
        assertThrows(IllegalArgumentException.class, () -> new RttEstimator(100 * MS, 200 * MS, 60 * S, MS));
        assertThrows(IllegalArgumentException.class, () -> new RttEstimator(61 * S, 200 * MS, 60 * S, MS));
        assertThrows(IllegalArgumentException.class, () -> new RttEstimator(S, 200 * MS, 60 * S, -1));
    }

    @Test
    void rfc6298_5_5_eachExpiryDoublesTheRtoUpToTheMaximum() {
        RttEstimator rtt = new RttEstimator();
        rtt.backOff();
        assertEquals(2 * S, rtt.rto());
        rtt.backOff();
        assertEquals(4 * S, rtt.rto());
        for (int i = 0; i < 10; i++) {
            rtt.backOff();
        }
        assertEquals(60 * S, rtt.rto(), "1 s * 2^12 capped at 60 s");
        assertEquals(12, rtt.backoffs());
        for (int i = 0; i < 100; i++) {
            rtt.backOff();
        }
        assertEquals(60 * S, rtt.rto(), "no overflow however long it backs off");
    }

    @Test
    void rfc6298_3_karnTheBackedOffRtoStaysUntilAValidSampleCollapsesIt() {
        RttEstimator rtt = new RttEstimator();
        rtt.sample(100 * MS);
        assertEquals(300 * MS, rtt.rto());
        rtt.backOff();
        rtt.backOff();
        assertEquals(1200 * MS, rtt.rto());
        // The ACK of the retransmission gives no sample (Karn): nothing is fed, the RTO stays.
        assertEquals(1200 * MS, rtt.rto());
        // New data, sent once and acknowledged: the sample recomputes the RTO (RFC 6298 section 5,
        // note after (5.7)). RTTVAR = 3/4 * 50 = 37.5 ms, SRTT = 100 ms, RTO = 250 ms.
        rtt.sample(100 * MS);
        assertEquals(250 * MS, rtt.rto());
        assertEquals(0, rtt.backoffs());
    }

    @Test
    void rfc6298_5_7_dataAfterATimedOutSynStartsWithThreeSeconds() {
        RttEstimator rtt = new RttEstimator();
        rtt.backOff(); // the SYN timed out; the SYN-ACK answered the retransmission: no sample
        rtt.synTimedOutBeforeData();
        assertEquals(3 * S, rtt.rto());
        assertEquals(0, rtt.backoffs());

        RttEstimator measured = new RttEstimator();
        measured.sample(100 * MS);
        measured.synTimedOutBeforeData();
        assertEquals(300 * MS, measured.rto(), "a measured RTT wins");
    }

    @Test
    void rfc6298_5_mayClearSrttAndRttvarAfterBackOffsSoTheNextSampleIsAFirstSample() {
        RttEstimator rtt = new RttEstimator();
        rtt.sample(100 * MS);
        rtt.backOff();
        rtt.clear();
        assertEquals(S, rtt.rto());
        rtt.sample(400 * MS);
        assertEquals(400 * MS, rtt.srtt());
        assertEquals(200 * MS, rtt.rttvar());
    }

    @Test
    void rfc7323_G_gainsAreDividedByTheExpectedSamplesPerRtt() {
        RttEstimator rtt = new RttEstimator();
        rtt.sample(100 * MS, 20 * 1460, 1460); // a first sample is (2.2) whatever the flight
        assertEquals(100 * MS, rtt.srtt());
        assertEquals(50 * MS, rtt.rttvar());
        // FlightSize 20 SMSS: ExpectedSamples = ceil(20 / 2) = 10, beta' = 1/40, alpha' = 1/80.
        // RTTVAR = 50 + (|100 - 180| - 50) / 40 = 50.75 ms; SRTT = 100 + (180 - 100) / 80 = 101 ms.
        rtt.sample(180 * MS, 20 * 1460, 1460);
        assertEquals(50_750 * US, rtt.rttvar());
        assertEquals(101 * MS, rtt.srtt());
    }

    @Test
    void rfc7323_G_expectedSamplesIsCeilingOfFlightOverTwoSmssAndAtLeastOne() {
        assertEquals(1, RttEstimator.expectedSamples(0, 1460));
        assertEquals(1, RttEstimator.expectedSamples(1, 1460));
        assertEquals(1, RttEstimator.expectedSamples(2 * 1460, 1460));
        assertEquals(2, RttEstimator.expectedSamples(2 * 1460 + 1, 1460));
        assertEquals(10, RttEstimator.expectedSamples(20 * 1460, 1460));
        assertEquals(1, RttEstimator.expectedSamples(-5, 1460));
        assertEquals(1, RttEstimator.expectedSamples(5000, 0));
        assertEquals(1_073_741_824, RttEstimator.expectedSamples(Integer.MAX_VALUE, 1));
    }

    @Test
    void rfc7323_G_aSmallFlightIsOneSampleAnRttLikeRfc6298() {
        RttEstimator a = new RttEstimator();
        RttEstimator b = new RttEstimator();
        long[] samples = {100 * MS, 130 * MS, 90 * MS, 250 * MS, 110 * MS};
        for (long r : samples) {
            a.sample(r);
            b.sample(r, 1460, 1460);
        }
        assertEquals(a.srtt(), b.srtt());
        assertEquals(a.rttvar(), b.rttvar());
        assertEquals(a.rto(), b.rto());
    }

    @Test
    void aNegativeSampleFromAClockMishapIsIgnored() {
        RttEstimator rtt = new RttEstimator();
        rtt.sample(100 * MS);
        rtt.backOff();
        assertFalse(rtt.sample(-1));
        assertEquals(600 * MS, rtt.rto());
        assertEquals(1, rtt.backoffs());
    }

    @Test
    void aZeroSampleIsValidAndYieldsTheMinimum() {
        RttEstimator rtt = new RttEstimator();
        assertTrue(rtt.sample(0));
        assertEquals(0, rtt.srtt());
        assertEquals(RttEstimator.DEFAULT_MIN_RTO_NS, rtt.rto());
    }
}
