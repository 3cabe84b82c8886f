package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CongestionControlsTest {

    @Test
    void createKnowsNewRenoAndCubicByNameWithTheRfc6928InitialWindow() {
        CongestionControl reno = CongestionControls.create("newreno", 1460);
        assertInstanceOf(NewReno.class, reno);
        assertEquals("newreno", reno.name());
        assertEquals(14_600, reno.cwnd());
        CongestionControl cubic = CongestionControls.create("CUBIC", 8960);
        assertInstanceOf(Cubic.class, cubic);
        assertEquals("cubic", cubic.name());
        assertEquals(17_920, cubic.cwnd());
        assertTrue(((Cubic) cubic).fastConvergence(), "RFC 9438 4.7 SHOULD");
    }

    @Test
    void anUnknownNameIsRefusedWithTheKnownOnesListed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CongestionControls.create("bbr", 1460));
        assertTrue(e.getMessage().contains("'bbr'"), e.getMessage());
        assertTrue(e.getMessage().contains("newreno, cubic"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CongestionControls.create(null, 1460));
        assertThrows(IllegalArgumentException.class, () -> CongestionControls.create("newreno", 0));
    }

    @Test
    void rfc6928_2_initialWindowIsMinOfTenMssAndMaxOfTwoMssAnd14600() {
        assertEquals(5_360, CongestionControls.initialWindow(536)); // 10 * 536 < 14600
        assertEquals(14_600, CongestionControls.initialWindow(1460)); // min(14600, 14600)
        assertEquals(13_000, CongestionControls.initialWindow(1300)); // 10 * 1300 < 14600
        assertEquals(17_920, CongestionControls.initialWindow(8960)); // 2 * 8960 > 14600
        assertEquals(130_990, CongestionControls.initialWindow(65_495));
        assertEquals(10, CongestionControls.initialWindow(1));
    }

    @Test
    void rfc5681_3_1_equation4_halfTheFlightSizeButAtLeastTwoSmss() {
        assertEquals(20_000, CongestionControls.halfFlightSize(40_000, 1000));
        assertEquals(2_000, CongestionControls.halfFlightSize(1_000, 1000));
        assertEquals(2_000, CongestionControls.halfFlightSize(-5, 1000));
    }
}
