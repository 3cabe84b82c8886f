package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.RdmaException;

/** The RNR NAK timer field (IBA 9.7.5.2.8, table 45): a 5-bit code standing for a delay. */
public final class RnrTimer {
    // Microseconds per code; code 0 is the longest, 655.36 ms.
    private static final int[] MICROS = {655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
            2560, 3840, 5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
            327_680, 491_520};

    private RnrTimer() {
    }

    public static long nanos(int code) {
        if (code < 0 || code > 31) {
            throw new RdmaException("RNR timer code " + code + " is outside 0..31 (IBA table 45)");
        }
        return MICROS[code] * 1000L;
    }
}
