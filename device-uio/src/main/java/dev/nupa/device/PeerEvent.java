package dev.nupa.device;

/** A change in a peer's liveness, as seen by one node. */
public record PeerEvent(Kind kind, int address, int generation) {
    public enum Kind {
        /** The peer joined the fabric. */
        UP,
        /** The peer left, or was found dead and reclaimed. */
        DOWN,
        /** The peer came back with a new generation before this node saw it go. */
        RESTARTED,
        /** This node itself was declared dead by its peers (it stalled past the heartbeat timeout). */
        EVICTED
    }
}
