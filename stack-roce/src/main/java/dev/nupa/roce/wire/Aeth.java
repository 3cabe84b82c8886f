package dev.nupa.roce.wire;

import static dev.nupa.roce.wire.Wire.put8And24;
import static dev.nupa.roce.wire.Wire.u24;
import static dev.nupa.roce.wire.Wire.u8;

import java.lang.foreign.MemorySegment;

/**
 * The ACK Extended Transport Header, 4 bytes (IBA vol 1 9.3.5): in acknowledges and
 * read responses.
 *
 * <pre>
 *  byte 0     Syndrome: reserved (bit 7) | type (bits 6-5) | value (bits 4-0)  
 *  bytes 1-3  MSN, the responder's message sequence number
 * </pre>
 *
 * The type says what the value means: an ACK carries the end-to-end credit count ({@link
 * #CREDITS_INVALID} when the responder does not limit the requester), an RNR NAK the RNR timer
 * code, a NAK one of the {@code NAK_*} codes. Type 2 is reserved.
 */
public final class Aeth {
    public static final int LENGTH = 4;

    public static final int TYPE_ACK = 0;
    public static final int TYPE_RNR_NAK = 1;
    public static final int TYPE_NAK = 3;

    public static final int NAK_PSN_SEQUENCE_ERROR = 0;
    public static final int NAK_INVALID_REQUEST = 1;
    public static final int NAK_REMOTE_ACCESS_ERROR = 2;
    public static final int NAK_REMOTE_OPERATIONAL_ERROR = 3;
    public static final int NAK_INVALID_RD_REQUEST = 4;

    /** The ACK credit value "invalid": the responder does not limit the requester. */
    public static final int CREDITS_INVALID = 0x1F;

    private Aeth() {
    }

    public static int syndrome(MemorySegment s, long o) {
        return u8(s, o);
    }

    public static int msn(MemorySegment s, long o) {
        return u24(s, o);
    }

    public static void write(MemorySegment s, long o, int syndrome, int msn) {
        put8And24(s, o, syndrome & 0xFF, msn);
    }

    /** Bits 6-5 of the syndrome; bit 7 is reserved and ignored. */
    public static int type(int syndrome) {
        return (syndrome >>> 5) & 3;
    }

    /** Bits 4-0: credits, RNR timer code or NAK code, by {@link #type}. */
    public static int value(int syndrome) {
        return syndrome & 0x1F;
    }

    /** An ACK syndrome with a credit count (0..30, or {@link #CREDITS_INVALID}). */
    public static int ack(int credits) {
        return TYPE_ACK << 5 | credits & 0x1F;
    }

    /** An RNR NAK syndrome with the timer code (0 is 655.36 ms, 1 is 0.01 ms, 31 is 491.52 ms). */
    public static int rnrNak(int timerCode) {
        return TYPE_RNR_NAK << 5 | timerCode & 0x1F;
    }

    /** A NAK syndrome with one of the {@code NAK_*} codes. */
    public static int nak(int code) {
        return TYPE_NAK << 5 | code & 0x1F;
    }
}
