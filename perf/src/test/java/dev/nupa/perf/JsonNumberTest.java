package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Locale;

import org.junit.jupiter.api.Test;

class JsonNumberTest {

    @Test
    void aNumberThatIsNotFiniteIsNullInJsonAndNotAvailableInAReport() {
        for (double v : new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
            assertEquals("null", JsonNumber.of(v, 3));
            assertEquals("n/a", JsonNumber.orNa(v, 2));
            assertNull(JsonNumber.orNull(v));
        }
    }

    @Test
    void aFiniteNumberHasItsDecimals() {
        assertEquals("1.235", JsonNumber.of(1.23456, 3));
        assertEquals("1.2346", JsonNumber.of(1.23456, 4));
        assertEquals("1", JsonNumber.of(1.23456, 0));
        assertEquals("-2.50", JsonNumber.of(-2.5, 2));
        assertEquals("0.12345679", JsonNumber.of(0.123456789, 8));
        assertEquals("1.23", JsonNumber.orNa(1.23456, 2));
        assertEquals(1.5, JsonNumber.orNull(1.5));
    }

    /** A German default locale would write a comma, which would end the number in a JSON line. */
    @Test
    void theDecimalSeparatorIsADotWhateverTheLocale() {
        Locale before = Locale.getDefault();
        Locale.setDefault(Locale.GERMANY);
        try {
            assertEquals("1234567.500", JsonNumber.of(1234567.5, 3));
            assertEquals("1.50", JsonNumber.orNa(1.5, 2));
        } finally {
            Locale.setDefault(before);
        }
    }
}
