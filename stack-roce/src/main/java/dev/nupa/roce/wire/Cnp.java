package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;

/**
 * The RoCEv2 Congestion Notification Packet (IBA annex A17.9.2): a BTH with opcode {@link #OPCODE} (0x81), BECN set,
 * DestQP the QP whose packets were marked, P_Key default, PSN 0, then 16 reserved bytes (sent as 0), then the ICRC
 * (appended by the IP layer as for every RoCEv2 datagram). A receiver's notification point sends it back to the
 * sender of a datagram that arrived with ECN CE; the sender's reaction point lowers its rate (DCQCN).
 */
public final class Cnp {
    public static final int OPCODE = 0x81;
    /** BTH and the reserved bytes: what precedes the ICRC. */
    public static final int LENGTH = Bth.LENGTH + 16;

    private Cnp() {
    }

    /** Whether the {@code length} bytes at {@code o} (transport packet, ICRC excluded) hold a whole CNP. */
    public static boolean isCnp(MemorySegment s, long o, int length) {
        return length >= LENGTH && Bth.opcode(s, o) == OPCODE && Bth.tver(s, o) == 0;
    }

    /** The QP the notification is for; after {@link #isCnp}. */
    public static int destQp(MemorySegment s, long o) {
        return Bth.destQp(s, o);
    }

    /** Writes the {@link #LENGTH} bytes of a CNP to {@code destQp}. */
    public static void write(MemorySegment s, long o, int destQp) {
        Bth.write(s, o, OPCODE, false, 0, Bth.DEFAULT_PKEY, destQp, false, 0);
        Wire.put8(s, o + 4, 0x40); // BECN (A17.9.2); byte 4's other bits are reserved
        Wire.put64(s, o + Bth.LENGTH, 0);
        Wire.put64(s, o + Bth.LENGTH + 8, 0);
    }
}
