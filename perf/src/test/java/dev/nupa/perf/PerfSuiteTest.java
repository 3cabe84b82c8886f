package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class PerfSuiteTest {

    @Test
    void aRatioInTheTableHasThreeFiguresAndNoExponent() {
        assertEquals("0.650", PerfSuite.threeFigures(0.65));
        assertEquals("1.07", PerfSuite.threeFigures(1.0749));
        assertEquals("879", PerfSuite.threeFigures(879.4));
        // %.3g wrote this one as "1.11e+03", which the suite's table then did not parse as a ratio.
        assertEquals("1110", PerfSuite.threeFigures(1110.5));
        assertEquals("12300", PerfSuite.threeFigures(12345.0));
        assertEquals("NaN", PerfSuite.threeFigures(Double.NaN));
    }
}
