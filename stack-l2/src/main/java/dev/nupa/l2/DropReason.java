package dev.nupa.l2;

/** Why the link dropped a received frame. Counted per reason in {@link LinkCounters}. */
public enum DropReason {
    /** Shorter than the 8-byte link header. */
    TRUNCATED("truncated (shorter than the link header)"),
    /** The header announces more payload than the frame holds. */
    BAD_LENGTH("payload length beyond the frame"),
    /** Addressed to another node. */
    WRONG_DESTINATION("destination is not this node"),
    /** The header's source differs from the fabric slot's source. */
    SOURCE_MISMATCH("source differs from the slot's source"),
    /** No handler is registered for the protocol. */
    UNKNOWN_PROTOCOL("no handler for the protocol"),
    /** The protocol handler threw. */
    HANDLER_ERROR("protocol handler threw");

    private static final DropReason[] ALL = values();
    private final String description;

    DropReason(String description) {
        this.description = description;
    }

    public String description() {
        return description;
    }

    static DropReason of(int ordinal) {
        return ALL[ordinal];
    }

    static int count() {
        return ALL.length;
    }
}
