package dev.nupa.tcp;

/**
 * What a {@link TcpLayer} tells an observer that keeps metrics or traces ({@link TcpLayer#setObserver}): connection
 * milestones and round-trip samples, with the layer's times ({@code System.nanoTime} in a node). Called on the
 * layer's loop, so an implementation copies what it needs into memory it owns and builds anything costly
 * elsewhere. Without an observer the layer calls nothing.
 */
public interface TcpObserver {
    /** A round-trip time measured on {@code c} (RFC 6298: one timed segment per round trip), in nanoseconds. */
    default void rttSample(TcpConnection c, long ns) {
    }

    /**
     * {@code c} reached ESTABLISHED; its opening began at {@code openedAt} (our SYN for an active open, the peer's
     * SYN for a passive one) and ended at {@code now}.
     */
    default void established(TcpConnection c, boolean active, long openedAt, long now) {
    }

    /**
     * {@code c} closed: orderly ({@code error} null) or not. Its closing began at {@code closingAt} (the first FIN
     * sent or received; {@code now} when it never got one, as on a reset) and ended at {@code now}.
     */
    default void closed(TcpConnection c, TcpError error, long closingAt, long now) {
    }
}
