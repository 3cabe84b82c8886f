package dev.nupa.tcp;

import java.util.Locale;

/** Congestion controllers by name, and the rules they share. */
public final class CongestionControls {
    /** The names {@link #create} accepts, in the order error messages list them. */
    public static final String KNOWN = NewReno.NAME + ", " + Cubic.NAME;

    /**
     * Largest congestion window, bytes: 2^30, the largest window TCP can advertise (RFC 7323 2.3,
     * window scale 14). Keeping cwnd below it leaves int headroom for cwnd + SMSS sums.
     */
    static final int MAX_CWND = 1 << 30;

    private CongestionControls() {
    }

    /**
     * A new controller for a connection with sender maximum segment size {@code mss}, starting with
     * the initial window of RFC 6928.
     *
     * @param name "newreno" or "cubic" (case does not matter)
     * @throws IllegalArgumentException for another name (the message lists the known ones) or a
     *     non-positive mss
     */
    public static CongestionControl create(String name, int mss) {
        String key = name == null ? "" : name.toLowerCase(Locale.ROOT);
        return switch (key) {
            case NewReno.NAME -> new NewReno(mss);
            case Cubic.NAME -> new Cubic(mss);
            default -> throw new IllegalArgumentException(
                    "unknown congestion control '" + name + "'; known: " + KNOWN);
        };
    }

    /** RFC 6928 section 2: IW = min(10 * MSS, max(2 * MSS, 14600)) bytes. */
    public static int initialWindow(int mss) {
        requireMss(mss);
        long iw = Math.min(10L * mss, Math.max(2L * mss, 14_600L));
        return (int) Math.min(iw, MAX_CWND);
    }

    /**
     * Whether a flow is cwnd-limited: its FlightSize leaves less than one SMSS of the window unused,
     * so the window, not the application or the receiver, held it back. Only such a flow may grow
     * cwnd (RFC 9438 sections 4.6 and 5.8; RFC 7661 for why a window that is not used must not grow).
     */
    static boolean cwndLimited(int cwnd, int bytesInFlight, int mss) {
        return (long) bytesInFlight + mss > cwnd;
    }

    /** RFC 5681 3.1 equation (4): max(FlightSize / 2, 2 * SMSS). */
    static int halfFlightSize(int bytesInFlight, int mss) {
        return (int) Math.min(MAX_CWND, Math.max(Math.max(bytesInFlight, 0) / 2, 2L * mss));
    }

    static void requireMss(int mss) {
        if (mss <= 0) {
            throw new IllegalArgumentException("mss must be positive: " + mss);
        }
    }

    static void requireWindow(int initialWindow) {
        if (initialWindow <= 0) {
            throw new IllegalArgumentException("initial window must be positive: " + initialWindow);
        }
    }
}
