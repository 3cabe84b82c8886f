package dev.nupa.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class FiguresFileTest {
    private static final String HEADER = "| what | command | goal | result |\n| --- | --- | --- | --- |\n";
    private static final String DOC = "# Figures\n\nText.\n\n" + FiguresFile.begin("2-CPU") + "\nMachine: old\n\n" + HEADER
            + "| ring | `a` | <= 1x | 1.2x; 2026-11-26 |\n| udp | `b` | <= 1x | 0.9x; 2026-11-26 |\n" + FiguresFile.end("2-CPU")
            + "\n\n## Other figures\n\nkept\n";

    @Test
    void aRunReplacesTheRowsOfTheFiguresItMeasuredInPlaceAndKeepsTheOthers() {
        String once = FiguresFile.replace(DOC, "2-CPU", "Machine: new\n\n" + HEADER + "| udp | `b` | <= 1x | 0.8x; 2026-11-29 |\n"
                + "| qos | `c` | <= 2x | 1.6x; 2026-11-29 |\n");
        assertEquals("# Figures\n\nText.\n\n" + FiguresFile.begin("2-CPU") + "\nMachine: new\n\n" + HEADER
                + "| ring | `a` | <= 1x | 1.2x; 2026-11-26 |\n| udp | `b` | <= 1x | 0.8x; 2026-11-29 |\n| qos | `c` | <= 2x | 1.6x; 2026-11-29 |\n"
                + FiguresFile.end("2-CPU") + "\n\n## Other figures\n\nkept\n", once);
        String twice = FiguresFile.replace(once, "2-CPU", "Machine: newer\n\n" + HEADER + "| qos | `c` | <= 2x | 1.7x; 2026-11-30 |\n");
        assertEquals(once.replace("Machine: new\n", "Machine: newer\n").replace("1.6x; 2026-11-29", "1.7x; 2026-11-30"), twice,
                "replaced, not appended");
    }

    @Test
    void aNewKindGetsASectionAtTheEndAndTheOtherKindIsUntouched() {
        String doc = FiguresFile.replace(DOC, "16-CPU", "Machine: big\n\n" + HEADER + "| x | `x` | - | 1x |");
        assertTrue(doc.startsWith(DOC.stripTrailing()), doc);
        assertTrue(doc.endsWith("## The perf tools on a 16-CPU machine\n\n" + FiguresFile.begin("16-CPU") + "\nMachine: big\n\n"
                + HEADER + "| x | `x` | - | 1x |\n" + FiguresFile.end("16-CPU") + "\n"), doc);
        String again = FiguresFile.replace(doc, "16-CPU", "Machine: bigger\n\n" + HEADER + "| x | `x` | - | 2x |");
        assertEquals(1, again.split(java.util.regex.Pattern.quote(FiguresFile.begin("16-CPU")), -1).length - 1, again);
        assertTrue(again.contains("| x | `x` | - | 2x |") && !again.contains("| x | `x` | - | 1x |"), again);
        assertTrue(again.contains("Machine: old"), "the 2-CPU table stays");
    }

    @Test
    void aMissingEndMarkerIsRefusedWithTheRemedy() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FiguresFile.replace("x\n" + FiguresFile.begin("2-CPU") + "\n| a |\n", "2-CPU", "| b |"));
        assertTrue(e.getMessage().contains("put the end marker back"), e.getMessage());
    }
}
