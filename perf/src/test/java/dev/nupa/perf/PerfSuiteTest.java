package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class PerfSuiteTest {

    @Test
    void aRatioInTheTableHasThreeFiguresAndNoExponent() {
        assertEquals("0.650", PerfSuite.threeFigures(0.65));
        assertEquals("1.07", PerfSuite.threeFigures(1.0749));
        assertEquals("879", PerfSuite.threeFigures(879.4));
        // Not "1.11e+03" (what %.3g writes): the table's ratios are plain decimals.
        assertEquals("1110", PerfSuite.threeFigures(1110.5));
        assertEquals("12300", PerfSuite.threeFigures(12345.0));
        assertEquals("NaN", PerfSuite.threeFigures(Double.NaN));
    }
}
