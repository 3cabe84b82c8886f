package dev.nupa.roce.transport;

/**
 * A type 2 memory window behind its verbs handle ({@code dev.nupa.roce.MemoryWindow}), as rxe_mw is behind ib_mw
 * (IBA 10.6.7): a slot of the device's region table that a bind work request fills with a {@link Region} over part
 * of a memory region and an invalidation empties again. Owner thread only.
 */
public final class Mw {
    public final int pdId;
    public final int index;
    /** The current rkey: the slot and the key byte of the last bind (or the one chosen at allocation). */
    int key;
    /** What peers reach through {@link #key} while bound; null while free (IBA's Free state, o10-37.2.30). */
    Region bound;
    boolean closed;

    Mw(int pdId, int index, int key) {
        this.pdId = pdId;
        this.index = index;
        this.key = key;
    }

    public int rkey() {
        return key;
    }

    /** Whether a bind holds it now. */
    public boolean bound() {
        return bound != null;
    }
}
