package dev.nupa.roce;

/** 24-bit packet sequence number arithmetic (IBA 9.7.1), with wrap-around. */
final class Psn {
    static final int MASK = 0xFFFFFF;

    private Psn() {
    }

    static int add(int psn, int n) {
        return (psn + n) & MASK;
    }

    /** a - b as a signed distance in -2^23 .. 2^23-1. */
    static int diff(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    static boolean valid(int psn) {
        return (psn & ~MASK) == 0;
    }
}
