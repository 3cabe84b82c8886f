package dev.nupa.device;

import static dev.nupa.device.FabricLayout.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CopyOnWriteArrayList;

/** A node attached to a mapped {@link Fabric}: the datapath of every memory-mapped backend. */
public final class FabricNode implements FabricDevice {
    private final Fabric fabric;
    private final MemorySegment mem;
    private final int address;
    private final int generation;
    private final long self;
    private final int ringsPerNode;
    private final int maxNodes;
    private final int maxFrame;
    private final Ring[] out;
    private final Ring[] in;
    private final Doorbell doorbell;
    private final CopyOnWriteArrayList<PeerListener> listeners = new CopyOnWriteArrayList<>();
    private final Liveness liveness;
    private final Thread livenessThread;
    /** Copies frames to the capture observers that watch this node (docs/fabric-layout.md 12). */
    private final CaptureTap tap;
    /** The polling thread's totals behind frames_received and bytes_received (zeroed in the entry at attach). */
    private long framesReceived;
    private long bytesReceived;
    private volatile boolean attached = true;
    private volatile boolean evicted;
    /** Why the fabric's memory is gone from under this node (its file removed, replaced or shrunk), or null. */
    private volatile String lost;
    private boolean closeFabric;

    FabricNode(Fabric fabric, int address, int generation) {
        if (fabric.vfio != null) {
            fabric.vfio.claim(address);
        }
        this.fabric = fabric;
        this.doorbell = new Doorbell(fabric.polled, fabric.vfio);
        this.mem = fabric.mem;
        this.address = address;
        this.generation = generation;
        this.self = fabric.nodeOffset(address);
        this.ringsPerNode = fabric.geometry.ringsPerNode();
        this.maxNodes = fabric.geometry.maxNodes();
        this.maxFrame = fabric.geometry.maxFrame();
        this.out = new Ring[maxNodes * ringsPerNode];
        // We hold the address in state JOINING: set up the entry, then go UP with a release store.
        mem.set(ValueLayout.JAVA_LONG, self + N_PID, ProcessHandle.current().pid());
        mem.set(ValueLayout.JAVA_LONG, self + N_HOST_ID, Fabric.HOST_ID);
        mem.set(ValueLayout.JAVA_LONG, self + N_JOINED_MILLIS, System.currentTimeMillis());
        mem.asSlice(self + N_FRAMES_SENT, N_ATTRS - N_FRAMES_SENT).fill((byte) 0);
        INT.setRelease(mem, self + N_ARMED, 0);
        INT.setRelease(mem, self + N_IVSHMEM_PEER, fabric.vfio != null ? fabric.vfio.peerId() + 1 : 0);
        long discarded = 0;
        this.in = new Ring[ringsPerNode];
        for (int r = 0; r < ringsPerNode; r++) {
            long base = fabric.ringOffset(address, r);
            discarded += Ring.drain(mem, base); // frames sent to an earlier incarnation
            in[r] = new Ring(mem, base, fabric.geometry.ringSlots(), fabric.slotBytes, maxFrame,
                    fabric.geometry.stallTimeoutNs(), self, maxNodes);
        }
        mem.set(ValueLayout.JAVA_LONG, self + N_DISCARDED, discarded);
        LONG.getAndAdd(mem, self + N_HEARTBEAT, 1L);
        LONG.setRelease(mem, self + N_STATE, Fabric.word(STATE_UP, generation));
        fabric.bumpEpoch();
        this.tap = new CaptureTap(fabric, address, generation);
        this.liveness = new Liveness(fabric, this);
        this.livenessThread = Thread.ofPlatform().daemon().name("nupa-liveness-" + address).start(liveness);
    }

    /** Makes {@link #close()} also unmap the fabric, for a node that is the only user of its mapping. */
    public void closeFabricOnClose() {
        closeFabric = true;
    }

    public Fabric fabric() {
        return fabric;
    }

    @Override
    public int address() {
        return address;
    }

    @Override
    public int generation() {
        return generation;
    }

    @Override
    public FabricGeometry geometry() {
        return fabric.geometry;
    }

    // The hot paths keep their checks to a compare each and build messages in methods of their own: the
    // JIT's inlining limits count bytecode, and message building would count against the send path.

    private Ring outRing(int destination, int ring) {
        if (destination < 0 || destination >= maxNodes || ring < 0 || ring >= ringsPerNode) {
            throw badTarget(destination, ring);
        }
        int i = destination * ringsPerNode + ring;
        Ring r = out[i];
        if (r == null) {
            r = new Ring(mem, fabric.ringOffset(destination, ring), fabric.geometry.ringSlots(), fabric.slotBytes,
                    maxFrame, fabric.geometry.stallTimeoutNs(), -1);
            out[i] = r;
        }
        return r;
    }

    private FabricException badTarget(int destination, int ring) {
        fabric.checkAddress(destination);
        return new FabricException("ring " + ring + " is outside 0.." + (ringsPerNode - 1)
                + "; the fabric was created with " + ringsPerNode + " ring(s) per node");
    }

    private void checkLength(int length) {
        if (length < 0 || length > maxFrame) {
            throw frameTooBig(length);
        }
    }

    private FabricException frameTooBig(int length) {
        return new FabricException("frame of " + length + " bytes does not fit a slot of fabric " + fabric.name()
                + " (maximum " + maxFrame + " bytes, set when the fabric was created)");
    }

    /** Claims a position in {@code r} of {@code destination}, or returns the (negative) code that stops the send. */
    private long claim(Ring r, int destination) {
        if (!attached || evicted) {
            return DETACHED;
        }
        if (Fabric.state(fabric.stateWord(destination)) != STATE_UP) {
            LONG.getAndAdd(mem, self + N_PEER_DOWN, 1L);
            return PEER_DOWN;
        }
        long p = r.claim();
        if (p < 0) {
            LONG.getAndAdd(mem, self + N_BACK_PRESSURED, 1L);
            return BACK_PRESSURED;
        }
        return p;
    }

    @Override
    public int tryClaim(int destination, int ring, int length, FrameClaim claim) {
        Ring r = outRing(destination, ring);
        checkLength(length);
        if (claim.position >= 0) {
            throw new IllegalStateException("frame claim still holds an unpublished slot: publish() or abort() it first");
        }
        long p = claim(r, destination);
        if (p < 0) {
            return (int) p;
        }
        claim.node = this;
        claim.ring = r;
        claim.destination = destination;
        claim.offset = r.slotOffset(p) + SLOT_HEADER;
        claim.length = length;
        claim.position = p;
        return OK;
    }

    int publish(FrameClaim claim, long position, long flags) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.DEVICE_OUT);
        }
        if (flags == 0 && tap.active()) {
            // Before the publish: after it the consumer may take the slot back. A publish that then fails (LATE) was
            // recorded all the same (docs/fabric-layout.md 12.4).
            tap.record(true, address, claim.destination, claim.ring.mem, claim.offset, claim.length);
        }
        boolean ok = claim.ring.publish(position, claim.length, address, generation, flags);
        return published(claim.destination, ok, flags == 0 ? claim.length : -1);
    }

    @Override
    public int offer(int destination, int ring, MemorySegment source, long offset, int length) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.DEVICE_OUT);
        }
        Ring r = outRing(destination, ring);
        checkLength(length);
        if (offset < 0 || offset > source.byteSize() - length) {
            throw outsideSource(source, offset, length);
        }
        long p = claim(r, destination);
        if (p < 0) {
            return (int) p;
        }
        try {
            MemorySegment.copy(source, offset, mem, r.slotOffset(p) + SLOT_HEADER, length);
        } catch (RuntimeException e) {
            r.publish(p, 0, address, generation, CTRL_PADDING); // never leave a claim to stall the ring
            throw e;
        }
        int rc = published(destination, r.publish(p, length, address, generation, 0), length);
        if (rc == OK && tap.active()) {
            tap.record(true, address, destination, source, offset, length);
        }
        return rc;
    }

    private static FabricException outsideSource(MemorySegment source, long offset, int length) {
        return new FabricException("offer of " + length + " bytes at offset " + offset + " lies outside its source of "
                + source.byteSize() + " bytes");
    }

    /** After a publish: ring the destination's doorbell if it sleeps, then count. */
    private int published(int destination, boolean ok, int length) {
        // The publish CAS is a full fence, so this load cannot pass it (the Dekker pair of awaitFrames).
        long peer = fabric.nodeOffset(destination);
        if ((int) INT.getVolatile(mem, peer + N_ARMED) != 0) {
            ring(peer);
        }
        if (!ok) {
            LONG.getAndAdd(mem, self + N_LATE_DROPS, 1L);
            return LATE;
        }
        if (Trace.ENABLED) {
            Trace.mark(Trace.FABRIC);
        }
        if (length >= 0) {
            LONG.getAndAdd(mem, self + N_FRAMES_SENT, 1L);
            LONG.getAndAdd(mem, self + N_BYTES_SENT, (long) length);
        }
        return OK;
    }

    @Override
    public int poll(FrameHandler handler, int limit) {
        if (evicted || !attached) {
            return 0;
        }
        int n = 0;
        long bytes = 0;
        FrameHandler h = tap.active() ? tap.wrap(handler) : handler; // records each frame, then hands it on
        for (Ring r : in) {
            if (n >= limit) {
                break;
            }
            n += r.poll(h, limit - n);
            bytes += r.lastBatchBytes;
        }
        if (n > 0) {
            // Single writer (the polling thread): totals kept here, only stored to the fabric (opaquely,
            // for readers), so the hot path reads nothing back from fabric memory.
            framesReceived += n;
            bytesReceived += bytes;
            LONG.setOpaque(mem, self + N_FRAMES_RECEIVED, framesReceived);
            LONG.setOpaque(mem, self + N_BYTES_RECEIVED, bytesReceived);
        }
        return n;
    }

    @Override
    public int poll(int ring, FrameHandler handler, int limit) {
        if (ring < 0 || ring >= ringsPerNode) {
            throw badTarget(address, ring);
        }
        if (evicted || !attached) {
            return 0;
        }
        Ring r = in[ring];
        int n = r.poll(tap.active() ? tap.wrap(handler) : handler, limit);
        if (n > 0) {
            framesReceived += n;
            bytesReceived += r.lastBatchBytes;
            LONG.setOpaque(mem, self + N_FRAMES_RECEIVED, framesReceived);
            LONG.setOpaque(mem, self + N_BYTES_RECEIVED, bytesReceived);
        }
        return n;
    }

    private boolean anyReady() {
        for (Ring r : in) {
            if (r.ready()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Sleeping on the doorbell futex. Measured on this project's 2-vCPU VMs (`nupa perf fabric-lat
     * --wait interrupt`): a frame reaches a sleeping consumer in about 22 us (p50), against 0.1-0.3 us
     * busy-polling. The wake of an idle (halted) vCPU and the scheduler's switch dominate, not the
     * futex itself, so callers spin first and sleep only when idle (the datapath's {@code Datapath.Idle}).
     * A futex, not an fd: it needs no per-peer file and wakes exactly the one waiter.
     */
    @Override
    public boolean awaitFrames(long timeoutNs) {
        return awaitFrames(timeoutNs, evicted || !attached ? 0 : (int) INT.getVolatile(mem, self + N_DOORBELL));
    }

    @Override
    public int prepareSleep() {
        return evicted || !attached ? 0 : (int) INT.getVolatile(mem, self + N_DOORBELL);
    }

    /** {@code seen}: the doorbell as it was before the caller's last look for work (section 7's step 1). */
    @Override
    public boolean awaitFrames(long timeoutNs, int seen) {
        if (evicted || !attached) {
            // Nothing will ring: sleep out (a little of) the time asked, so a loop left on an evicted node does not spin.
            java.util.concurrent.locks.LockSupport.parkNanos(Math.min(timeoutNs, 10_000_000L));
            return false;
        }
        INT.setVolatile(mem, self + N_ARMED, 1);
        // Off a futex nothing compares the doorbell with seen for us: a wakeup or a ring that came since is a reason not to sleep.
        if (anyReady() || (doorbell.polled() && (int) INT.getVolatile(mem, self + N_DOORBELL) != seen)) {
            INT.setVolatile(mem, self + N_ARMED, 0);
            return anyReady();
        }
        long now = System.nanoTime();
        boolean claimPending = false;
        for (Ring r : in) {
            claimPending |= r.checkStall(now); // a stalled claim at the head is noticed even while idle
        }
        long wait = claimPending ? Math.min(timeoutNs, fabric.geometry.stallTimeoutNs() / 4 + 1) : timeoutNs;
        if (doorbell.await(mem.address() + self + N_DOORBELL, seen, wait)) {
            LONG.setOpaque(mem, self + N_INTERRUPTS_RECEIVED, (long) LONG.getOpaque(mem, self + N_INTERRUPTS_RECEIVED) + 1);
        }
        INT.setVolatile(mem, self + N_ARMED, 0);
        boolean ready = anyReady();
        if (ready) {
            LONG.setOpaque(mem, self + N_WAKEUPS, (long) LONG.getOpaque(mem, self + N_WAKEUPS) + 1);
        }
        return ready;
    }

    /** Rings the doorbell of the node at {@code node} if it sleeps armed: one wake per sleep, however many ring. */
    private void ring(long node) {
        if (doorbell.polled()) {
            VfioDevice vfio = doorbell.vfio();
            int peer = vfio != null ? (int) INT.getVolatile(mem, node + N_IVSHMEM_PEER) : 0;
            if (peer != 0) {
                // Both ends are ivshmem-doorbell devices: one interrupt a sleep, as a futex wake is.
                if (INT.compareAndSet(mem, node + N_ARMED, 1, 0)) {
                    INT.getAndAdd(mem, node + N_DOORBELL, 1);
                    if (node == self) {
                        vfio.wakeSelf();
                    } else {
                        vfio.ring(peer - 1);
                        LONG.getAndAdd(mem, self + N_INTERRUPTS_SENT, 1L);
                    }
                }
                return;
            }
            // No wake can cross from a BAR: leave the sleeper armed, so the rings of its own kernel's nodes still wake it.
            INT.getAndAdd(mem, node + N_DOORBELL, 1);
            return;
        }
        if (INT.compareAndSet(mem, node + N_ARMED, 1, 0)) {
            INT.getAndAdd(mem, node + N_DOORBELL, 1);
            doorbell.wake(mem.address() + node + N_DOORBELL, 1);
        }
    }

    @Override
    public void wakeup() {
        if (evicted || !attached) {
            return;
        }
        // The add first: a sleep that read the doorbell before it returns at once (its futex value is stale);
        // only a sleep armed already needs the system call.
        INT.getAndAdd(mem, self + N_DOORBELL, 1);
        if ((int) INT.getVolatile(mem, self + N_ARMED) != 0) {
            ring(self);
        }
    }

    @Override
    public void wake(int address) {
        fabric.checkAddress(address);
        if (!attached) {
            return;
        }
        long peer = fabric.nodeOffset(address);
        // The add first, as wakeup's: a sleeper that took its token before it returns at once; one that takes it
        // after looks for the work itself (a Datapath.Source's ready()). Only an armed sleep needs the system call.
        INT.getAndAdd(mem, peer + N_DOORBELL, 1);
        if ((int) INT.getVolatile(mem, peer + N_ARMED) != 0) {
            ring(peer);
        }
    }

    @Override
    public boolean isUp(int address) {
        fabric.checkAddress(address);
        return Fabric.state(fabric.stateWord(address)) == STATE_UP;
    }

    @Override
    public FabricWindow exportWindow(long bytes, int access) {
        requireAttached();
        return fabric.exportWindow(address, generation, bytes, access);
    }

    @Override
    public FabricWindow openWindow(int id, int key) {
        requireAttached();
        return fabric.openWindow(id, key);
    }

    @Override
    public FabricWindow openDirectory(int owner) {
        requireAttached();
        return fabric.openDirectory(owner);
    }

    @Override
    public java.util.List<FabricWindow> openWindowsOf(int owner, int access) {
        requireAttached();
        return fabric.openWindowsOf(owner, access);
    }

    @Override
    public void publishAttributes(MemorySegment attributes) {
        requireAttached();
        if (attributes.byteSize() > ATTR_BYTES) {
            throw new FabricException("node attributes of " + attributes.byteSize() + " bytes exceed the "
                    + ATTR_BYTES + " bytes a node table entry holds");
        }
        synchronized (entryLock) {
            published.fill((byte) 0);
            MemorySegment.copy(attributes, 0, published, 0, attributes.byteSize());
            anyPublished = true;
            writeAttributes();
        }
    }

    /** Writes {@link #published} into the entry. A seqlock: odd while writing, so readers retry instead of seeing half a record. */
    private void writeAttributes() {
        long v = (long) LONG.getAcquire(mem, self + N_ATTR_VERSION);
        long next = (v | 1) + 1;
        LONG.setVolatile(mem, self + N_ATTR_VERSION, next - 1);
        MemorySegment.copy(published, 0, mem, self + N_ATTRS, ATTR_BYTES);
        LONG.setRelease(mem, self + N_ATTR_VERSION, next);
    }

    private final Object entryLock = new Object();
    /** The attributes last published, so that foreign bytes over them are noticed and written over ({@link #checkEntry}). */
    private final MemorySegment published = MemorySegment.ofArray(new byte[ATTR_BYTES]);
    private boolean anyPublished;
    private final java.util.concurrent.atomic.AtomicLong entryRepairs = new java.util.concurrent.atomic.AtomicLong();

    /** Times liveness found this node's own table entry overwritten by a foreign hand and wrote it back. */
    public long entryRepairs() {
        return entryRepairs.get();
    }

    void entryRepaired() {
        entryRepairs.incrementAndGet();
        LONG.getAndAdd(mem, self + N_CORRUPT, 1L);
    }

    /**
     * Run by liveness every period: the fields of this node's entry that only it writes and its peers act on (its
     * pid and host, by which they judge it alive; its attributes, from which they learn its addresses) are what it
     * wrote; foreign bytes over them are written over and counted (fabric memory is untrusted input).
     */
    void checkEntry() {
        long pid = ProcessHandle.current().pid();
        if (mem.get(ValueLayout.JAVA_LONG, self + N_PID) != pid || mem.get(ValueLayout.JAVA_LONG, self + N_HOST_ID) != Fabric.HOST_ID) {
            mem.set(ValueLayout.JAVA_LONG, self + N_PID, pid);
            mem.set(ValueLayout.JAVA_LONG, self + N_HOST_ID, Fabric.HOST_ID);
            entryRepaired();
        }
        synchronized (entryLock) {
            if (!anyPublished) {
                return;
            }
            long v = (long) LONG.getAcquire(mem, self + N_ATTR_VERSION);
            if (v == 0 || (v & 1) != 0 || MemorySegment.mismatch(published, 0, ATTR_BYTES, mem, self + N_ATTRS, self + N_ATTRS + ATTR_BYTES) >= 0) {
                writeAttributes(); // under the lock, so only this node's own writer could hold the entry odd, and it does not now
                entryRepaired();
            }
        }
    }

    /** How long a reader waits for a writer that holds a node's attributes (an odd version) before it gives up. */
    static final long ATTR_READ_PATIENCE_NS = 100_000L;
    private final java.util.concurrent.atomic.AtomicLong attributeReadsAbandoned = new java.util.concurrent.atomic.AtomicLong();

    /** Attribute reads given up because the entry's writer held it past {@link #ATTR_READ_PATIENCE_NS}. */
    public long attributeReadsAbandoned() {
        return attributeReadsAbandoned.get();
    }

    @Override
    public boolean readAttributes(int address, MemorySegment into) {
        fabric.checkAddress(address);
        long node = fabric.nodeOffset(address);
        long n = Math.min(into.byteSize(), ATTR_BYTES);
        long giveUpAt = 0;
        for (int spins = 0; ; spins++) {
            long v1 = (long) LONG.getAcquire(mem, node + N_ATTR_VERSION);
            if (v1 == 0) {
                return false;
            }
            if ((v1 & 1) != 0) {
                // A writer holds the entry for the copy of 184 bytes at most; one that stays longer stalled or
                // died mid-write (or is hostile), and waiting for it would stop the reader's loop: give up
                // (docs/fabric-layout.md 5.6). Its reclaim resets the version; a later read finds the record.
                if ((spins & 63) == 0) {
                    long now = System.nanoTime();
                    if (giveUpAt == 0) {
                        giveUpAt = now + ATTR_READ_PATIENCE_NS;
                    } else if (now - giveUpAt > 0) {
                        attributeReadsAbandoned.incrementAndGet();
                        return false;
                    }
                }
                Thread.onSpinWait();
                continue;
            }
            MemorySegment.copy(mem, node + N_ATTRS, into, 0, n);
            java.lang.invoke.VarHandle.loadLoadFence();
            if ((long) LONG.getAcquire(mem, node + N_ATTR_VERSION) == v1) {
                return true;
            }
        }
    }

    @Override
    public void addPeerListener(PeerListener listener) {
        listeners.add(listener);
    }

    @Override
    public void removePeerListener(PeerListener listener) {
        listeners.remove(listener);
    }

    void fire(PeerEvent event) {
        for (PeerListener l : listeners) {
            try {
                l.onPeerEvent(event);
            } catch (RuntimeException e) {
                // a listener's bug must not stop liveness for everyone
            }
        }
    }

    void evict() {
        if (!evicted) {
            evicted = true;
            fire(new PeerEvent(PeerEvent.Kind.EVICTED, address, generation));
            INT.getAndAdd(mem, self + N_DOORBELL, 1);
            doorbell.wake(mem.address() + self + N_DOORBELL, 1);
        }
    }

    boolean isEvicted() {
        return evicted;
    }

    /** Entries this node's liveness read in its last watch of its successors. */
    int lastWatchReads() {
        return liveness.lastWalkReads;
    }

    /**
     * The fabric's memory is gone from under this node ({@code why}): from now on nothing touches it (an access
     * would fault), sends are refused as detached, and listeners hear EVICTED; {@link #close()} only unmaps.
     */
    void markLost(String why) {
        if (lost == null) {
            lost = why;
            fabric.lost = true;
            evicted = true;
            fire(new PeerEvent(PeerEvent.Kind.EVICTED, address, generation));
        }
    }

    /** Why this node left the fabric without closing, in words, or null while it is in it: evicted, or its file lost. */
    public String lostReason() {
        if (lost != null) {
            return lost;
        }
        return evicted ? "node " + address + " was evicted from fabric " + fabric.name()
                + " (its peers declared it dead, or its table entry was taken)" : null;
    }

    @Override
    public FabricCounters counters() {
        return fabric.counters(address);
    }

    private void requireAttached() {
        if (!attached || evicted) {
            if (lost != null) {
                throw new FabricException("node " + address + " lost its fabric: " + lost);
            }
            throw new FabricException("node " + address + " is " + (evicted ? "evicted from" : "detached from")
                    + " fabric " + fabric.name() + "; attach again");
        }
    }

    @Override
    public void close() {
        if (!attached) {
            return;
        }
        attached = false;
        liveness.stop();
        livenessThread.interrupt();
        // A pending interrupt of the caller must not skip the join: the liveness thread reads the mapping,
        // which the caller may unmap right after this (seen as "Already closed" in that thread).
        boolean interrupted = Thread.interrupted();
        try {
            livenessThread.join(5_000);
        } catch (InterruptedException e) {
            interrupted = true;
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        tap.close(); // after liveness stopped: it alone attaches
        String gone = lost == null ? fabric.lostReason() : null;
        if (gone != null) {
            markLost(gone); // closed before liveness looked: leave the memory alone all the same
        }
        if (!evicted) {
            // Wake our own sleepers first; once reclaimed, the doorbell may belong to the next holder.
            INT.getAndAdd(mem, self + N_DOORBELL, 1);
            doorbell.wake(mem.address() + self + N_DOORBELL, Integer.MAX_VALUE);
            if (doorbell.vfio() != null) {
                INT.setRelease(mem, self + N_IVSHMEM_PEER, 0); // our device's ID may go to another guest
                doorbell.vfio().wakeSelf();
            }
            fabric.reclaim(address, Fabric.word(STATE_UP, generation));
        }
        if (doorbell.vfio() != null && lost == null) {
            doorbell.vfio().release();
        }
        if (closeFabric) {
            fabric.close();
        }
    }

    /** Liveness tick: serve the observer slots that name this node (docs/fabric-layout.md 12.4). */
    void checkObservers() {
        tap.check();
    }

    /** Capture observers this node records frames for now. */
    public int captureObservers() {
        return tap.observers();
    }

    /** Why the last observer that named this node could not be served, or null. */
    public String captureRefusal() {
        return tap.lastRefusal;
    }

    @Override
    public String toString() {
        return "FabricNode[" + address + "/" + generation + " on " + fabric.name() + "]";
    }
}
