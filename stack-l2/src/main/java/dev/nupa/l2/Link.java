package dev.nupa.l2;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import dev.nupa.device.DatapathErrors;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FrameClaim;
import dev.nupa.device.Trace;
import dev.nupa.device.FrameHandler;

/**
 * The link layer of one node: frames ({@code [link header][payload]}, docs/link-layer.md) over a
 * {@link FabricDevice}, dispatched by protocol to the {@link ProtocolHandler}s upper layers register.
 *
 * <p><b>Threading.</b> A link, and every layer above it, has one owner thread (run to
 * completion): the node's running {@link Datapath} loop, or, where none runs (a perf tool polling in
 * line, a test), the one thread that polls. {@link #poll}, {@link #send} and {@link #tryClaim} run on
 * the owner; a send from another thread while a loop runs throws IllegalStateException naming the
 * remedy, {@link #execute}, which hands work to the owner. {@link #register} may also happen before
 * the loop starts; {@link #counters()} and {@link #setCapture} may be called from any thread.
 *
 * <p><b>Bad input.</b> Received frames that are truncated, announce more payload than they hold,
 * are addressed to another node, carry a source other than the slot's, or have no handler are
 * counted by {@link DropReason} and dropped; a handler that throws is counted and the loop goes on.
 * Nothing received makes {@link #poll} throw. Misuse on the send side (payload above the MTU, a
 * protocol outside 0..65535, a range outside its segment) throws IllegalArgumentException.
 *
 * <p><b>Zero garbage.</b> Handlers live in a small array searched by protocol, counters in long
 * arrays; sending, polling and dispatching allocate nothing.
 */
public final class Link implements AutoCloseable {
    /** Default MTU: jumbo Ethernet, so the gateway bridges without fragmenting (docs/link-layer.md). */
    public static final int DEFAULT_MTU = 9000;
    /** Smallest MTU: every IPv4 host must accept 576-byte datagrams (RFC 791). */
    public static final int MIN_MTU = 576;
    /** The largest IPv4 packet: its total length is a 16-bit field (RFC 791). */
    public static final int MAX_MTU = 65535;
    /** Protocols one link tracks (handlers and counters); sends of further protocols count as {@link LinkCounters#OTHER}. */
    public static final int MAX_PROTOCOLS = 16;

    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final int OTHER_SLOT = MAX_PROTOCOLS;

    private final FabricDevice device;
    private final int address;
    private final int mtu;

    // Protocol table: slot i holds protocols[i] and its handler (null: counted on send only).
    private final int[] protocols = new int[MAX_PROTOCOLS];
    private final ProtocolHandler[] handlers = new ProtocolHandler[MAX_PROTOCOLS];
    private volatile int protocolCount;

    // Counters, slot-indexed (slot OTHER_SLOT for protocols beyond the table); single writer, opaque access.
    private final long[] framesIn = new long[MAX_PROTOCOLS + 1];
    private final long[] bytesIn = new long[MAX_PROTOCOLS + 1];
    private final long[] framesOut = new long[MAX_PROTOCOLS + 1];
    private final long[] bytesOut = new long[MAX_PROTOCOLS + 1];
    private final long[] drops = new long[DropReason.count()];
    private final long[] captureErrors = new long[1];
    /** Frames taken from each receive ring (dropped ones included); single writer, opaque access. */
    private final long[] ringFrames = new long[ServiceLevels.LEVELS];

    /** The receive rings of this node, and how sends and polls use them (docs/link-layer.md, "Service levels"). */
    private final int rings;
    private volatile ServiceLevels levels;
    private volatile RingPolicy ringPolicy;
    /** Null with one ring: the poll is then the device's own. */
    private volatile RingScheduler scheduler;
    private final RingScheduler.Rings ringSource = this::pollRing;

    private final LinkHeader rxHeader = new LinkHeader();
    private final LinkHeader txHeader = new LinkHeader();
    private final FrameClaim sendClaim = new FrameClaim();
    private final FrameHandler receiver = this::onFrame;

    private long now;
    /** The running loop's thread, set by {@link Datapath}; null when none runs (the caller owns the link). */
    private volatile Thread owner;
    private volatile Datapath datapath;
    private volatile PacketCapture capture;
    private volatile LongSupplier captureClock = epochClock();

    /** A link with the {@link #DEFAULT_MTU default MTU} of 9000 bytes. */
    public Link(FabricDevice device) {
        this(device, DEFAULT_MTU);
    }

    /**
     * A link with {@code mtu} bytes of payload per frame; throws IllegalArgumentException unless
     * {@value #MIN_MTU} &lt;= mtu &lt;= the device's maxFrame - 8.
     */
    public Link(FabricDevice device, int mtu) {
        this.device = device;
        this.address = device.address();
        this.mtu = checkMtu(mtu, device.maxFrame());
        this.rings = device.receiveRings();
        this.levels = ServiceLevels.defaults(rings);
        setRingPolicy(RingPolicy.defaults(rings));
    }

    /** The slot size a fabric needs for links of {@code mtu}: the packet and the link header, in whole cache lines. */
    public static int frameFor(int mtu) {
        return (mtu + LinkHeader.LENGTH + 63) & ~63;
    }

    /** Returns {@code mtu} if a link may use it on a device whose slots hold {@code maxFrame} bytes, else throws IllegalArgumentException naming the problem. */
    public static int checkMtu(int mtu, int maxFrame) {
        int ceiling = maxFrame - LinkHeader.LENGTH;
        if (mtu < MIN_MTU) {
            throw new IllegalArgumentException("MTU " + mtu + " is below the IPv4 minimum of " + MIN_MTU
                    + " bytes (RFC 791); choose an MTU of at least " + MIN_MTU);
        }
        if (mtu > MAX_MTU) {
            throw new IllegalArgumentException("MTU " + mtu + " is above the largest IPv4 packet of " + MAX_MTU
                    + " bytes (RFC 791); choose an MTU of at most " + Math.min(MAX_MTU, ceiling));
        }
        if (mtu > ceiling) {
            throw new IllegalArgumentException("MTU " + mtu + " does not fit the fabric's " + maxFrame
                    + "-byte slots with the " + LinkHeader.LENGTH + "-byte link header; choose an MTU of at most " + ceiling
                    + (ceiling < MIN_MTU ? " (below the IPv4 minimum: create the fabric with slots of at least "
                            + (MIN_MTU + LinkHeader.LENGTH) + " bytes)" : "")
                    + " or create the fabric with slots of at least " + (mtu + LinkHeader.LENGTH) + " bytes");
        }
        return mtu;
    }

    public FabricDevice device() {
        return device;
    }

    /** This node's fabric address. */
    public int address() {
        return address;
    }

    /** Largest payload (e.g. IPv4 datagram) of one frame, in bytes. */
    public int mtu() {
        return mtu;
    }

    // ---- service levels ----------------------------------------------------------------------

    /** The receive rings each node of this fabric has (and this link serves). */
    public int rings() {
        return rings;
    }

    /** Which ring of the destination each service level's frames go to; {@link ServiceLevels#defaults} unless set. */
    public ServiceLevels serviceLevels() {
        return levels;
    }

    /** Sets the ring of each service level for this node's sends; any thread. Throws IllegalArgumentException if made for another ring count. */
    public void setServiceLevels(ServiceLevels levels) {
        if (levels.rings() != rings) {
            throw new IllegalArgumentException(levels + " is for " + levels.rings() + " ring(s) per node; node " + address
                    + "'s fabric has " + rings + ": make the map with ServiceLevels.defaults(" + rings + ") or of(" + rings + ", ...)");
        }
        this.levels = levels;
    }

    /** How the poll serves the receive rings; {@link RingPolicy#defaults} unless set. */
    public RingPolicy ringPolicy() {
        return ringPolicy;
    }

    /** Sets how the poll serves the receive rings; any thread (the next poll takes it). Throws IllegalArgumentException if made for another ring count. */
    public void setRingPolicy(RingPolicy policy) {
        if (policy.rings() != rings) {
            throw new IllegalArgumentException(policy + " is for " + policy.rings() + " ring(s) per node; node " + address
                    + "'s fabric has " + rings + ": give one weight per ring");
        }
        this.ringPolicy = policy;
        this.scheduler = rings == 1 ? null : new RingScheduler(policy);
    }

    private int pollRing(int ring, int limit) {
        int n = device.poll(ring, receiver, limit);
        if (n > 0) {
            add(ringFrames, ring, n);
        }
        return n;
    }

    // ---- registration ------------------------------------------------------------------------

    /** Registers the handler of {@code protocol}; throws IllegalStateException if it already has one. */
    public void register(int protocol, ProtocolHandler handler) {
        checkProtocol(protocol);
        if (handler == null) {
            throw new NullPointerException("protocol handler for " + EtherType.name(protocol) + " is null");
        }
        synchronized (protocols) {
            int slot = find(protocol);
            if (slot >= 0 && handlers[slot] != null) {
                throw new IllegalStateException("protocol " + EtherType.name(protocol) + " (0x"
                        + Integer.toHexString(protocol) + ") already has a handler: " + handlers[slot]);
            }
            if (slot < 0) {
                slot = addSlot(protocol);
                if (slot < 0) {
                    throw new IllegalStateException("cannot register protocol " + EtherType.name(protocol)
                            + ": the link already tracks " + MAX_PROTOCOLS + " protocols");
                }
            }
            handlers[slot] = handler;
        }
    }

    /** Removes the handler of {@code protocol}, if any: its frames count as {@link DropReason#UNKNOWN_PROTOCOL} again. */
    public void unregister(int protocol) {
        synchronized (protocols) {
            int slot = find(protocol);
            if (slot >= 0) {
                handlers[slot] = null;
            }
        }
    }

    private int find(int protocol) {
        int n = protocolCount;
        for (int i = 0; i < n; i++) {
            if (protocols[i] == protocol) {
                return i;
            }
        }
        return -1;
    }

    private int addSlot(int protocol) {
        int n = protocolCount;
        if (n == MAX_PROTOCOLS) {
            return -1;
        }
        protocols[n] = protocol;
        protocolCount = n + 1; // volatile store publishes the entry
        return n;
    }

    /** The counter slot for sending {@code protocol}: its table slot, a new one, or the OTHER slot. */
    private int sendSlot(int protocol) {
        int slot = find(protocol);
        if (slot >= 0) {
            return slot;
        }
        synchronized (protocols) {
            slot = find(protocol);
            if (slot < 0) {
                slot = addSlot(protocol);
            }
        }
        return slot < 0 ? OTHER_SLOT : slot;
    }

    // ---- receiving ---------------------------------------------------------------------------

    /** Reads up to {@code limit} frames in place and dispatches them; returns how many frames were taken (dropped ones included). */
    public int poll(int limit) {
        return poll(limit, System.nanoTime());
    }

    /**
     * {@link #poll(int)} at time {@code now} (nanoseconds on the caller's clock): handlers read it with
     * {@link #now()}, so protocol code never reads a clock itself and tests run on
     * virtual time.
     */
    public int poll(int limit, long now) {
        checkOwner();
        this.now = now;
        RingScheduler s = scheduler;
        if (s != null) {
            return s.poll(ringSource, limit);
        }
        int n = device.poll(receiver, limit);
        if (n > 0) {
            add(ringFrames, 0, n);
        }
        return n;
    }

    /** The time given to the poll that is dispatching now (or the last one); for handlers on the datapath thread. */
    public long now() {
        return now;
    }

    /** Sleeps until frames arrive or {@code timeoutNs} passes (see {@link FabricDevice#awaitFrames}); poll afterwards either way. */
    public boolean awaitFrames(long timeoutNs) {
        return device.awaitFrames(timeoutNs);
    }

    /** See {@link FabricDevice#prepareSleep}. */
    public int prepareSleep() {
        return device.prepareSleep();
    }

    /** See {@link FabricDevice#awaitFrames(long, int)}. */
    public boolean awaitFrames(long timeoutNs, int token) {
        return device.awaitFrames(timeoutNs, token);
    }

    /** Wakes the thread sleeping in {@link #awaitFrames} (see {@link FabricDevice#wakeup}). */
    public void wakeup() {
        device.wakeup();
    }

    // ---- ownership ---------------------------------------------------------------------------

    /** Whether the calling thread may send and poll: it is the running loop's, or no loop runs. */
    public boolean isOwner() {
        Thread o = owner;
        return o == null || o == Thread.currentThread();
    }

    /** Throws IllegalStateException unless the caller {@link #isOwner owns} the link; a compare in line. */
    public void checkOwner() {
        Thread o = owner;
        if (o != null && o != Thread.currentThread()) {
            throw notOwner(o);
        }
    }

    private IllegalStateException notOwner(Thread o) {
        return new IllegalStateException("node " + address + " is driven by its datapath loop (" + o.getName()
                + "); thread " + Thread.currentThread().getName() + " may not send or poll on it: hand the call to"
                + " the loop with Link.execute (or make it from a handler that runs on the loop)");
    }

    /**
     * Runs {@code task} on the owner: at once when the caller owns the link, else handed to the running
     * loop ({@link Datapath#execute}). Without a loop the caller is the owner and it runs at once.
     */
    public void execute(Runnable task) {
        Datapath d = datapath;
        if (d != null) {
            d.execute(task);
        } else {
            task.run();
        }
    }

    /**
     * Runs {@code query} on the owner and returns its result, waiting for it: for tools and tests
     * that read a layer's state from another thread. Not for the datapath: it blocks the caller.
     */
    public <T> T call(Supplier<T> query) {
        if (isOwner()) {
            return query.get();
        }
        CompletableFuture<T> f = new CompletableFuture<>();
        execute(() -> {
            try {
                f.complete(query.get());
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        try {
            return f.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("node " + address + ": its datapath loop did not answer within 10 s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for node " + address + "'s datapath loop", e);
        }
    }

    /** The loop that drives this link, or null. */
    public Datapath datapath() {
        return datapath;
    }

    /** Called by the {@link Datapath} built over this link. */
    void attach(Datapath d) {
        if (datapath != null && datapath != d) {
            throw new IllegalStateException("node " + address + " already has a datapath loop; build one per link");
        }
        datapath = d;
    }

    /** Called by the {@link Datapath} as its loop starts ({@code t}) and stops (null). */
    void setOwner(Thread t) {
        owner = t;
    }

    private void onFrame(int slotSource, MemorySegment mem, long off, int len) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.LINK_IN);
        }
        if (len < LinkHeader.LENGTH) {
            drop(DropReason.TRUNCATED);
            return;
        }
        long w = rxHeader.wrap(mem, off).word(); // one load for the four fields
        int payload = LinkHeader.payloadLength(w);
        if (payload > len - LinkHeader.LENGTH) {
            drop(DropReason.BAD_LENGTH);
            return;
        }
        int dst = LinkHeader.destination(w);
        int src = LinkHeader.source(w);
        int protocol = LinkHeader.protocol(w);
        long payloadOff = off + LinkHeader.LENGTH;
        PacketCapture c = capture;
        if (c != null) {
            capture(c, false, src, dst, protocol, mem, payloadOff, payload);
        }
        if (dst != address) {
            drop(DropReason.WRONG_DESTINATION);
            return;
        }
        if (src != slotSource) {
            drop(DropReason.SOURCE_MISMATCH);
            return;
        }
        int slot = find(protocol);
        ProtocolHandler handler = slot >= 0 ? handlers[slot] : null;
        if (handler == null) {
            drop(DropReason.UNKNOWN_PROTOCOL);
            return;
        }
        add(framesIn, slot, 1);
        add(bytesIn, slot, payload);
        try {
            handler.onPacket(src, mem, payloadOff, payload);
        } catch (Throwable e) {
            if (!DatapathErrors.survivable(e)) {
                throw e;
            }
            drop(DropReason.HANDLER_ERROR);
        }
    }

    private void drop(DropReason reason) {
        add(drops, reason.ordinal(), 1);
    }

    // ---- sending -----------------------------------------------------------------------------

    /**
     * Sends {@code length} bytes of {@code payload} at {@code offset} as one frame of {@code protocol}
     * to {@code destinationNode}, copying them once into the fabric slot. Returns a
     * {@link FabricDevice} code: OK, BACK_PRESSURED (nothing sent; poll, then retry), PEER_DOWN,
     * LATE or DETACHED.
     */
    public int send(int destinationNode, int protocol, MemorySegment payload, long offset, int length) {
        return send(destinationNode, protocol, payload, offset, length, 0);
    }

    /**
     * {@link #send(int, int, MemorySegment, long, int)} at service level {@code level} (0..15): into the ring of the
     * destination that {@link #serviceLevels()} names for it.
     */
    public int send(int destinationNode, int protocol, MemorySegment payload, long offset, int length, int level) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.LINK_OUT);
        }
        checkOwner();
        checkProtocol(protocol);
        checkPayloadLength(length);
        if (offset < 0 || offset > payload.byteSize() - length) {
            throw new IllegalArgumentException("payload of " + length + " bytes at offset " + offset
                    + " lies outside its segment of " + payload.byteSize() + " bytes");
        }
        FrameClaim claim = sendClaim;
        int rc = device.tryClaim(destinationNode, levels.ring(level), LinkHeader.LENGTH + length, claim);
        if (rc != FabricDevice.OK) {
            return rc;
        }
        MemorySegment m = claim.memory();
        long at = claim.offset();
        try {
            txHeader.wrap(m, at).set(destinationNode, address, protocol, length);
            MemorySegment.copy(payload, offset, m, at + LinkHeader.LENGTH, length);
        } catch (RuntimeException e) {
            claim.abort(); // never leave a claim to stall the receiver's ring
            throw e;
        }
        PacketCapture c = capture;
        if (c != null) {
            capture(c, true, address, destinationNode, protocol, payload, offset, length);
        }
        rc = claim.publish();
        if (rc == FabricDevice.OK) {
            int slot = sendSlot(protocol);
            add(framesOut, slot, 1);
            add(bytesOut, slot, length);
        }
        return rc;
    }

    /**
     * Claims a frame of {@code payloadLength} payload bytes of {@code protocol} to
     * {@code destinationNode} and writes its link header; on OK, write the payload at
     * {@link LinkClaim#payloadOffset()} and {@link LinkClaim#publish()} or {@link LinkClaim#abort()} it.
     * Returns a {@link FabricDevice} code. Throws IllegalStateException if {@code claim} is still active.
     */
    public int tryClaim(int destinationNode, int protocol, int payloadLength, LinkClaim claim) {
        return tryClaim(destinationNode, protocol, payloadLength, 0, claim);
    }

    /**
     * {@link #tryClaim(int, int, int, LinkClaim)} at service level {@code level} (0..15): a slot of the destination's
     * ring that {@link #serviceLevels()} names for it.
     */
    public int tryClaim(int destinationNode, int protocol, int payloadLength, int level, LinkClaim claim) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.LINK_OUT);
        }
        checkOwner();
        checkProtocol(protocol);
        checkPayloadLength(payloadLength);
        if (claim.active) {
            throw new IllegalStateException("link claim still holds an unpublished frame: publish() or abort() it first");
        }
        int rc = device.tryClaim(destinationNode, levels.ring(level), LinkHeader.LENGTH + payloadLength, claim.frame);
        if (rc != FabricDevice.OK) {
            return rc;
        }
        txHeader.wrap(claim.frame.memory(), claim.frame.offset()).set(destinationNode, address, protocol, payloadLength);
        claim.link = this;
        claim.protocol = protocol;
        claim.payloadLength = payloadLength;
        claim.slot = sendSlot(protocol);
        claim.active = true;
        return rc;
    }

    int publish(LinkClaim claim) {
        FrameClaim f = claim.frame;
        PacketCapture c = capture;
        if (c != null) {
            // Before publishing: once published, the receiver may consume and the slot be reused.
            capture(c, true, address, f.destination(), claim.protocol, f.memory(), f.offset() + LinkHeader.LENGTH,
                    claim.payloadLength);
        }
        int rc = f.publish();
        if (rc == FabricDevice.OK) {
            add(framesOut, claim.slot, 1);
            add(bytesOut, claim.slot, claim.payloadLength);
        }
        return rc;
    }

    // Checks are a compare in line and a message in a method of its own: the JIT's inlining limits count bytecode.

    private void checkPayloadLength(int length) {
        if (length < 0 || length > mtu) {
            throw overMtu(length);
        }
    }

    private IllegalArgumentException overMtu(int length) {
        return new IllegalArgumentException("payload of " + length + " bytes exceeds the link MTU of " + mtu
                + " bytes (node " + address + ")");
    }

    private static void checkProtocol(int protocol) {
        if (protocol < 0 || protocol > 0xFFFF) {
            throw badProtocol(protocol);
        }
    }

    private static IllegalArgumentException badProtocol(int protocol) {
        return new IllegalArgumentException("protocol " + protocol + " is outside 0..65535 (an EtherType)");
    }

    // ---- capture -----------------------------------------------------------------------------

    /** Sets the packet capture that sees every frame sent and received; null turns capture off (one field check per frame). */
    public void setCapture(PacketCapture capture) {
        this.capture = capture;
    }

    public PacketCapture capture() {
        return capture;
    }

    /**
     * A datagram the node sent itself through its loopback interface, as it is received: captured once, from and to
     * this node, as Linux's {@code lo} shows each packet once. Nothing when capture is off.
     */
    public void captureLoopback(int protocol, MemorySegment mem, long off, int len) {
        PacketCapture c = capture;
        if (c != null) {
            capture(c, false, address, address, protocol, mem, off, len);
        }
    }

    /** Replaces the clock that stamps captured frames (nanoseconds since the Unix epoch); for tests. */
    public void setCaptureClock(LongSupplier epochNanos) {
        this.captureClock = epochNanos;
    }

    private void capture(PacketCapture c, boolean outbound, int src, int dst, int protocol,
                         MemorySegment mem, long off, int len) {
        try {
            c.capture(captureClock.getAsLong(), outbound, src, dst, protocol, mem, off, len);
        } catch (RuntimeException e) {
            add(captureErrors, 0, 1);
        }
    }

    /** Wall-clock nanoseconds since the epoch from a monotonic clock anchored once, without allocating. */
    static LongSupplier epochClock() {
        long baseNano = System.nanoTime();
        long baseEpoch = System.currentTimeMillis() * 1_000_000L;
        return () -> baseEpoch + (System.nanoTime() - baseNano);
    }

    // ---- counters ----------------------------------------------------------------------------

    private static void add(long[] counters, int i, long delta) {
        LONGS.setOpaque(counters, i, (long) LONGS.getOpaque(counters, i) + delta);
    }

    private static long get(long[] counters, int i) {
        return (long) LONGS.getOpaque(counters, i);
    }

    /** A snapshot of the counters; callable from any thread (allocates). */
    public LinkCounters counters() {
        List<LinkCounters.Protocol> ps = new ArrayList<>();
        int n = protocolCount;
        for (int i = 0; i < n; i++) {
            ps.add(new LinkCounters.Protocol(protocols[i], get(framesIn, i), get(bytesIn, i), get(framesOut, i),
                    get(bytesOut, i)));
        }
        if (get(framesOut, OTHER_SLOT) != 0) {
            ps.add(new LinkCounters.Protocol(LinkCounters.OTHER, 0, 0, get(framesOut, OTHER_SLOT), get(bytesOut, OTHER_SLOT)));
        }
        Map<DropReason, Long> d = new EnumMap<>(DropReason.class);
        for (int i = 0; i < drops.length; i++) {
            d.put(DropReason.of(i), get(drops, i));
        }
        List<Long> perRing = new ArrayList<>();
        for (int r = 0; r < rings; r++) {
            perRing.add(get(ringFrames, r));
        }
        return new LinkCounters(ps, d, get(captureErrors, 0), perRing);
    }

    /** Closes the device (this node leaves the fabric). A capture is left to its owner to close. */
    @Override
    public void close() {
        device.close();
    }

    @Override
    public String toString() {
        return "Link[node " + address + ", mtu " + mtu + "]";
    }
}
