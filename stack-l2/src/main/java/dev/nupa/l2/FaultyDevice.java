package dev.nupa.l2;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import dev.nupa.device.FabricCounters;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.FrameClaim;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.PeerListener;

/**
 * A fault-injecting decorator of a {@link FabricDevice}, for tests: seeded drop, duplicate, reorder,
 * corrupt, delay and rate limit, configured per direction with a {@link FaultPlan}, and counted
 * exactly ({@link #sendFaults()}, {@link #receiveFaults()}). Everything else is delegated.
 *
 * <p><b>Receive</b> faults apply to every frame {@link #poll} takes from the wrapped device.
 * <b>Send</b> faults apply to {@link #offer}. A zero-copy send ({@link #tryClaim}) is subject to the
 * rate limit only: a {@link FrameClaim} publishes straight into the wrapped device and cannot be
 * intercepted, so such sends are passed through and counted as {@code claimed}. To fault traffic sent
 * by a {@link Link} (which sends through claims), put the faults on the receiving side.
 *
 * <p>Held frames (delayed, reordered, duplicated) are copies, released by later polls: a delayed frame
 * after {@code delayPolls} polls of this device, a reordered one once the next frame of its direction
 * has passed it (or after {@value #REORDER_MAX_POLLS} polls if none comes), a duplicate right after its
 * original (receive: at the end of the same poll, room permitting; send: after the original is sent).
 * While frames are held, {@link #awaitFrames} returns at once so the owner keeps polling. A poll never
 * hands over more than its limit. Randomness is drawn from two generators seeded from the seed, one
 * per direction, so each direction's faults depend only on its own traffic.
 *
 * <p>Not thread-safe: one thread sends and polls, as a link's datapath thread does.
 */
public final class FaultyDevice implements FabricDevice {
    /** How many polls a reordered frame waits at most for a later frame to pass it. */
    public static final int REORDER_MAX_POLLS = 16;

    /**
     * What the device did to one direction.
     *
     * @param passed       frames handed on (delivered to the handler, or offered to the wrapped device with
     *                     result OK), copies included; when nothing is held, passed = frames in - dropped + duplicated
     * @param dropped      frames that vanished
     * @param duplicated   extra copies handed on
     * @param reordered    frames held back to be passed by the next one
     * @param corrupted    frames with one byte flipped
     * @param delayed      frames held back for some polls
     * @param rateLimited  receive: polls cut short by the limit; send: offers or claims answered BACK_PRESSURED
     * @param claimed      send only: zero-copy claims passed through unfaulted
     * @param lost         held frames that could not be handed on later (send: the peer went down or the node detached)
     * @param held         frames held now
     */
    public record FaultCounters(long passed, long dropped, long duplicated, long reordered, long corrupted, long delayed,
                                long rateLimited, long claimed, long lost, int held) {
    }

    private record Held(int source, int destination, int ring, MemorySegment data, long releasePoll, boolean afterNext) {
    }

    private static final class Direction {
        final FaultPlan plan;
        final SplittableRandom random;
        final List<Held> held = new ArrayList<>();
        long passed, dropped, duplicated, reordered, corrupted, delayed, rateLimited, claimed, lost;

        Direction(FaultPlan plan, long seed) {
            this.plan = plan;
            this.random = new SplittableRandom(seed);
        }

        boolean draw(double rate) {
            return rate > 0 && random.nextDouble() < rate;
        }

        FaultCounters snapshot() {
            return new FaultCounters(passed, dropped, duplicated, reordered, corrupted, delayed, rateLimited, claimed, lost,
                    held.size());
        }
    }

    private final FabricDevice inner;
    private final Direction tx;
    private final Direction rx;
    private final MemorySegment scratch;
    private final FrameHandler interceptor = this::intercept;
    private long polls;
    private int sentSincePoll;
    private long handlerErrors;

    // The poll in progress.
    private FrameHandler handler;
    private int delivered;
    private int cap;

    public FaultyDevice(FabricDevice inner, long seed, FaultPlan send, FaultPlan receive) {
        this.inner = inner;
        this.tx = new Direction(send, seed);
        this.rx = new Direction(receive, seed ^ 0x9E3779B97F4A7C15L);
        this.scratch = MemorySegment.ofArray(new byte[inner.maxFrame()]);
    }

    /** Faults on receive only. */
    public static FaultyDevice receiving(FabricDevice inner, long seed, FaultPlan receive) {
        return new FaultyDevice(inner, seed, FaultPlan.NONE, receive);
    }

    /** Faults on send only. */
    public static FaultyDevice sending(FabricDevice inner, long seed, FaultPlan send) {
        return new FaultyDevice(inner, seed, send, FaultPlan.NONE);
    }

    public FabricDevice inner() {
        return inner;
    }

    public FaultPlan sendPlan() {
        return tx.plan;
    }

    public FaultPlan receivePlan() {
        return rx.plan;
    }

    public FaultCounters sendFaults() {
        return tx.snapshot();
    }

    public FaultCounters receiveFaults() {
        return rx.snapshot();
    }

    /** Exceptions thrown by handlers while this device handed them held copies. */
    public long handlerErrors() {
        return handlerErrors;
    }

    // ---- receive -----------------------------------------------------------------------------

    @Override
    public int poll(FrameHandler frameHandler, int limit) {
        return poll(-1, frameHandler, limit);
    }

    /**
     * One receive ring of the wrapped device ({@code ring} -1: all of them), its frames faulted as every other's. Each
     * ring's poll counts as a poll of this device, and held frames come out on whichever ring is polled next.
     */
    @Override
    public int poll(int ring, FrameHandler frameHandler, int limit) {
        polls++;
        sentSincePoll = 0;
        releaseSends(false);
        int max = rx.plan.maxFramesPerPoll();
        boolean capped = max > 0 && max < limit;
        handler = frameHandler;
        delivered = 0;
        cap = capped ? max : limit;
        try {
            releaseReceives();
            if (delivered < cap) {
                if (ring < 0) {
                    inner.poll(interceptor, cap - delivered);
                } else {
                    inner.poll(ring, interceptor, cap - delivered);
                }
            }
            releaseReceives(); // duplicates queued by this batch
        } finally {
            handler = null;
        }
        if (capped && delivered == cap) {
            rx.rateLimited++;
        }
        return delivered;
    }

    private void intercept(int source, MemorySegment mem, long off, int len) {
        FaultPlan p = rx.plan;
        if (rx.draw(p.drop())) {
            rx.dropped++;
            return;
        }
        MemorySegment data = mem;
        long at = off;
        if (rx.draw(p.corrupt()) && len > p.corruptFrom()) {
            corrupt(mem, off, len, rx);
            data = scratch;
            at = 0;
        }
        if (rx.draw(p.duplicate())) {
            rx.held.add(new Held(source, -1, 0, copy(data, at, len), polls, false));
            rx.duplicated++;
        }
        if (rx.draw(p.delay())) {
            rx.held.add(new Held(source, -1, 0, copy(data, at, len), polls + p.delayPolls(), false));
            rx.delayed++;
            return;
        }
        if (rx.draw(p.reorder())) {
            rx.held.add(new Held(source, -1, 0, copy(data, at, len), polls + REORDER_MAX_POLLS, true));
            rx.reordered++;
            return;
        }
        deliver(source, data, at, len);
        // Frames waiting to be passed have now been passed: hand them on after this one, room permitting.
        for (int i = 0; i < rx.held.size(); i++) {
            Held h = rx.held.get(i);
            if (h.afterNext()) {
                if (delivered < cap) {
                    rx.held.remove(i--);
                    deliver(h.source(), h.data(), 0, (int) h.data().byteSize());
                } else {
                    rx.held.set(i, new Held(h.source(), -1, 0, h.data(), polls, false)); // due at the next poll
                }
            }
        }
    }

    private void releaseReceives() {
        for (int i = 0; i < rx.held.size() && delivered < cap; i++) {
            Held h = rx.held.get(i);
            if (h.releasePoll() <= polls) {
                rx.held.remove(i--);
                deliver(h.source(), h.data(), 0, (int) h.data().byteSize());
            }
        }
    }

    private void deliver(int source, MemorySegment data, long off, int len) {
        delivered++;
        rx.passed++;
        try {
            handler.onFrame(source, data, off, len);
        } catch (RuntimeException e) {
            handlerErrors++;
        }
    }

    @Override
    public boolean awaitFrames(long timeoutNs) {
        if (!rx.held.isEmpty() || !tx.held.isEmpty()) {
            return true; // held frames need polls to come out
        }
        return inner.awaitFrames(timeoutNs);
    }

    @Override
    public int prepareSleep() {
        return inner.prepareSleep();
    }

    @Override
    public boolean awaitFrames(long timeoutNs, int token) {
        if (!rx.held.isEmpty() || !tx.held.isEmpty()) {
            return true; // held frames need polls to come out
        }
        return inner.awaitFrames(timeoutNs, token);
    }

    @Override
    public void wakeup() {
        inner.wakeup();
    }

    // ---- send --------------------------------------------------------------------------------

    @Override
    public int offer(int destination, int ring, MemorySegment source, long offset, int length) {
        FaultPlan p = tx.plan;
        if (p.maxFramesPerPoll() > 0 && sentSincePoll >= p.maxFramesPerPoll()) {
            tx.rateLimited++;
            return BACK_PRESSURED;
        }
        if (tx.draw(p.drop())) {
            if (!inner.isUp(destination)) {
                return PEER_DOWN; // a dropped frame still tells the truth about the peer
            }
            sentSincePoll++;
            tx.dropped++;
            return OK;
        }
        MemorySegment data = source;
        long at = offset;
        if (tx.draw(p.corrupt()) && length > p.corruptFrom()) {
            corrupt(source, offset, length, tx);
            data = scratch;
            at = 0;
        }
        boolean duplicate = tx.draw(p.duplicate());
        boolean delay = tx.draw(p.delay());
        boolean reorder = !delay && tx.draw(p.reorder());
        if (delay || reorder) {
            if (!inner.isUp(destination)) {
                return PEER_DOWN;
            }
            tx.held.add(new Held(address(), destination, ring, copy(data, at, length),
                    polls + (delay ? p.delayPolls() : REORDER_MAX_POLLS), reorder));
            if (delay) {
                tx.delayed++;
            } else {
                tx.reordered++;
            }
            if (duplicate) {
                duplicateLater(destination, ring, data, at, length);
            }
            sentSincePoll++;
            return OK;
        }
        int rc = inner.offer(destination, ring, data, at, length);
        if (rc == OK) {
            sentSincePoll++;
            tx.passed++;
            if (duplicate) {
                duplicateLater(destination, ring, data, at, length);
            }
            releaseSends(true);
        }
        return rc;
    }

    private void duplicateLater(int destination, int ring, MemorySegment data, long at, int length) {
        tx.held.add(new Held(address(), destination, ring, copy(data, at, length), polls, false));
        tx.duplicated++;
    }

    /** Sends held frames that are due (and, after a frame was sent, those waiting to be passed). */
    private void releaseSends(boolean passedByOne) {
        for (int i = 0; i < tx.held.size(); i++) {
            Held h = tx.held.get(i);
            if (h.releasePoll() <= polls || (passedByOne && h.afterNext())) {
                int rc = inner.offer(h.destination(), h.ring(), h.data(), 0, (int) h.data().byteSize());
                if (rc == BACK_PRESSURED) {
                    continue; // try again at the next poll
                }
                tx.held.remove(i--);
                if (rc == OK) {
                    tx.passed++;
                } else {
                    tx.lost++;
                }
            }
        }
    }

    @Override
    public int tryClaim(int destination, int ring, int length, FrameClaim claim) {
        FaultPlan p = tx.plan;
        if (p.maxFramesPerPoll() > 0 && sentSincePoll >= p.maxFramesPerPoll()) {
            tx.rateLimited++;
            return BACK_PRESSURED;
        }
        int rc = inner.tryClaim(destination, ring, length, claim);
        if (rc == OK) {
            sentSincePoll++;
            tx.claimed++;
        }
        return rc;
    }

    // ---- helpers -----------------------------------------------------------------------------

    /** Copies the frame into the scratch buffer and flips one byte at corruptFrom or later. */
    private void corrupt(MemorySegment mem, long off, int len, Direction d) {
        MemorySegment.copy(mem, off, scratch, 0, len);
        int from = d.plan.corruptFrom();
        int i = from + d.random.nextInt(len - from);
        byte flip = (byte) (1 + d.random.nextInt(255));
        scratch.set(ValueLayout.JAVA_BYTE, i, (byte) (scratch.get(ValueLayout.JAVA_BYTE, i) ^ flip));
        d.corrupted++;
    }

    private static MemorySegment copy(MemorySegment mem, long off, int len) {
        MemorySegment c = MemorySegment.ofArray(new byte[len]);
        MemorySegment.copy(mem, off, c, 0, len);
        return c;
    }

    // ---- delegated ---------------------------------------------------------------------------

    @Override
    public int address() {
        return inner.address();
    }

    @Override
    public int generation() {
        return inner.generation();
    }

    @Override
    public FabricGeometry geometry() {
        return inner.geometry();
    }

    @Override
    public int maxFrame() {
        return inner.maxFrame();
    }

    @Override
    public boolean isUp(int address) {
        return inner.isUp(address);
    }

    @Override
    public FabricWindow exportWindow(long bytes, int access) {
        return inner.exportWindow(bytes, access);
    }

    @Override
    public FabricWindow openWindow(int id, int key) {
        return inner.openWindow(id, key);
    }

    @Override
    public FabricWindow openDirectory(int owner) {
        return inner.openDirectory(owner);
    }

    @Override
    public void wake(int address) {
        inner.wake(address);
    }

    @Override
    public java.util.List<FabricWindow> openWindowsOf(int owner, int access) {
        return inner.openWindowsOf(owner, access);
    }

    @Override
    public void publishAttributes(MemorySegment attributes) {
        inner.publishAttributes(attributes);
    }

    @Override
    public boolean readAttributes(int address, MemorySegment into) {
        return inner.readAttributes(address, into);
    }

    @Override
    public void addPeerListener(PeerListener listener) {
        inner.addPeerListener(listener);
    }

    @Override
    public void removePeerListener(PeerListener listener) {
        inner.removePeerListener(listener);
    }

    @Override
    public FabricCounters counters() {
        return inner.counters();
    }

    @Override
    public void close() {
        inner.close();
    }

    @Override
    public String toString() {
        return "FaultyDevice[" + inner + ", send " + tx.plan + ", receive " + rx.plan + "]";
    }
}
