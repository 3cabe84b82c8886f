package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

class LatencyStatsTest {
    @Test
    void roundTripsOverAMillisecondAreCountedAsStallsAndTheSecondsAreTheirSum() {
        Histogram h = LatencyStats.newHistogram();
        h.recordValueWithCount(500, 10_000);
        h.recordValue(LatencyStats.STALL_NS); // a millisecond exactly is not over it
        h.recordValueWithCount(3_000_000, 2);
        h.recordValue(40_000_000);
        LatencyStats whole = LatencyStats.of(h);
        assertEquals(3, whole.stalls());
        assertEquals((10_000 * 500 + 1_000_000 + 6_000_000 + 40_000_000) / 1e9, whole.seconds(), 0.001 * whole.seconds());
        // Halved figures (one-way, as perftest reports) still count the round trips that stalled.
        LatencyStats halved = LatencyStats.ofRoundTrips(h);
        assertEquals(3, halved.stalls());
        assertEquals(whole.seconds(), halved.seconds(), 1e-12);
        assertEquals(whole.p50() / 2, halved.p50(), 1e-9);
        assertEquals(whole.tailRatio(), halved.tailRatio(), 1e-12);
        assertTrue(whole.json().contains("\"tail_ratio\":" + JsonNumber.of(whole.p99() / whole.p50(), 3) + ","), whole.json());
    }

    @Test
    void noStallWhenNothingTookAMillisecond() {
        Histogram h = LatencyStats.newHistogram();
        h.recordValueWithCount(900_000, 5);
        LatencyStats s = LatencyStats.of(h);
        assertEquals(0, s.stalls());
        assertTrue(s.json().contains("\"stalls_over_1ms\":0,"), s.json());
    }
}
