package dev.nupa.device;

import java.lang.foreign.MemorySegment;

/**
 * A node attached to a fabric: the contract every backend fulfils (today the shm backend; the layout is ready for a PCI BAR) and the
 * link layer uses. Sending is safe from many threads; receiving ({@link #poll}, {@link #awaitFrames})
 * belongs to one thread, the node's datapath loop.
 *
 * <p>Send results are codes, not exceptions, because back-pressure and a departed peer are normal
 * events on the datapath; misuse (a bad address, an oversized frame) throws {@link FabricException}.
 */
public interface FabricDevice extends AutoCloseable {
    /** The frame was published. */
    int OK = 0;
    /** The destination ring is full: nothing was sent; poll or wait, then try again. */
    int BACK_PRESSURED = -1;
    /** The destination node is not up: nothing was sent. */
    int PEER_DOWN = -2;
    /** The claim was held past the stall timeout and the consumer skipped it: the frame was not delivered. */
    int LATE = -3;
    /** This node has been closed or evicted from the fabric: nothing was sent. */
    int DETACHED = -4;

    static String describe(int code) {
        return switch (code) {
            case OK -> "ok";
            case BACK_PRESSURED -> "back-pressured (destination ring full)";
            case PEER_DOWN -> "peer down";
            case LATE -> "late (claim held past the stall timeout)";
            case DETACHED -> "detached";
            default -> "unknown code " + code;
        };
    }

    int address();

    int generation();

    FabricGeometry geometry();

    /** Largest frame, in bytes, that one slot holds. */
    default int maxFrame() {
        return geometry().maxFrame();
    }

    /** Claims a slot of {@code length} bytes in ring 0 of {@code destination}, to be written in place and published. */
    default int tryClaim(int destination, int length, FrameClaim claim) {
        return tryClaim(destination, 0, length, claim);
    }

    int tryClaim(int destination, int ring, int length, FrameClaim claim);

    /** Copies {@code length} bytes of {@code source} at {@code offset} into a frame to ring 0 of {@code destination}. */
    default int offer(int destination, MemorySegment source, long offset, int length) {
        return offer(destination, 0, source, offset, length);
    }

    int offer(int destination, int ring, MemorySegment source, long offset, int length);

    /** Hands up to {@code limit} received frames, read in place, to {@code handler}; returns how many. */
    int poll(FrameHandler handler, int limit);

    /** The receive rings this node consumes: the fabric's rings per node (docs/fabric-layout.md 6.1). */
    default int receiveRings() {
        return geometry().ringsPerNode();
    }

    /**
     * {@link #poll(FrameHandler, int)} of receive ring {@code ring} alone, for a consumer that chooses the order in
     * which it serves its rings (the link's service levels, docs/link-layer.md); throws {@link FabricException} for a
     * ring outside {@code 0 .. receiveRings() - 1}.
     */
    int poll(int ring, FrameHandler handler, int limit);

    /**
     * Arms this node's interrupt and sleeps until a frame arrives, the timeout passes, or the node
     * closes. Returns whether frames are ready. Call {@link #poll} afterwards either way.
     */
    boolean awaitFrames(long timeoutNs);

    /**
     * For a thread that also takes work other than frames from other threads: a token to take before its
     * last look at that work, for {@link #awaitFrames(long, int)}. A {@link #wakeup} after the token was
     * taken ends that sleep at once, so work handed over between the look and the sleep is not slept on.
     */
    int prepareSleep();

    /** {@link #awaitFrames(long)}, also returning at once when {@link #wakeup} was called after {@code token} was taken. */
    boolean awaitFrames(long timeoutNs, int token);

    /**
     * Wakes this node's thread sleeping in {@link #awaitFrames}, or ends at once a sleep prepared before
     * this call ({@link #prepareSleep}): for another thread of the same process that gave the sleeper work
     * other than frames (a task, a timer moved earlier). Cheap when nobody sleeps: one atomic add, and a
     * system call only for a sleeper.
     */
    void wakeup();

    /**
     * Rings the doorbell of the node at {@code address} (section 7 of docs/fabric-layout.md) for work it finds outside
     * its rings (a work ring): an atomic add, and a wake only when it sleeps.
     */
    void wake(int address);

    /** Whether {@code address} is a node that is up now. */
    boolean isUp(int address);

    /** Exports {@code bytes} (rounded up to a page) of window space that peers may open by id and key. */
    FabricWindow exportWindow(long bytes, int access);

    /** Opens a window a peer exported. */
    FabricWindow openWindow(int id, int key);

    /** Opens the {@link FabricWindow#DIRECTORY} window that {@code owner} exports, or returns null if it exports none. */
    FabricWindow openDirectory(int owner);

    /** Opens every window {@code owner} exports with all of {@code access}'s bits (an empty list: none). */
    java.util.List<FabricWindow> openWindowsOf(int owner, int access);

    /** Publishes up to {@link FabricLayout#ATTR_BYTES} bytes that travel with this node's table entry (e.g. its IP address). */
    void publishAttributes(MemorySegment attributes);

    /**
     * Copies a node's published attributes into {@code into}; returns false if it has published none, or if
     * its writer held them (mid-write) for longer than a reader waits: a stalled or dead writer never stops a reader.
     */
    boolean readAttributes(int address, MemorySegment into);

    /** Liveness events; see {@link PeerEvent}. Peers already up are reported on the first heartbeat after attach. */
    void addPeerListener(PeerListener listener);

    void removePeerListener(PeerListener listener);

    FabricCounters counters();

    /** Detaches: the address becomes free, this node's windows are withdrawn, waiting threads wake. */
    @Override
    void close();
}
