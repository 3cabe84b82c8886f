package dev.nupa.roce.verbs;

/** Send work request flags, with the values of libibverbs' {@code IBV_SEND_*}. */
public final class SendFlags {
    /** Wait for earlier READ and atomic operations of this QP to complete before starting (IBA 10.8.3.3). */
    public static final int FENCE = 1;
    /** Generate a completion on success (errors always complete). */
    public static final int SIGNALED = 2;
    /** Set the solicited event bit, so a responder armed for solicited events is notified. */
    public static final int SOLICITED = 4;
    /** Copy the payload at post time: the gather buffers may be reused as soon as postSend returns. */
    public static final int INLINE = 8;

    private SendFlags() {
    }
}
