package dev.nupa.roce.wire;

/** 24-bit packet sequence number arithmetic (IBA 9.7.1), with wrap-around. */
public final class Psn {
    public static final int MASK = 0xFFFFFF;

    private Psn() {
    }

    public static int add(int psn, int n) {
        return (psn + n) & MASK;
    }

    /** a - b as a signed distance in -2^23 .. 2^23-1. */
    public static int diff(int a, int b) {
        return ((a - b) << 8) >> 8;
    }

    public static boolean valid(int psn) {
        return (psn & ~MASK) == 0;
    }
}
