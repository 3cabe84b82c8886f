package dev.nupa.device;

import static dev.nupa.device.FabricLayout.CTRL_PADDING;
import static dev.nupa.device.FabricLayout.CTRL_SKIPPED;
import static dev.nupa.device.FabricLayout.LINE;
import static dev.nupa.device.FabricLayout.LONG;
import static dev.nupa.device.FabricLayout.RING_HEADER;
import static dev.nupa.device.FabricLayout.R_HEAD;
import static dev.nupa.device.FabricLayout.R_TAIL;
import static dev.nupa.device.FabricLayout.SLOT_HEADER;
import static dev.nupa.device.FabricLayout.S_CTRL;
import static dev.nupa.device.FabricLayout.S_LENGTH;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * One many-producer, one-consumer ring of fixed slots in fabric memory (docs/fabric-layout.md, "Rings").
 *
 * <p>Producers claim a position with a CAS on the tail, write the frame in place and publish it with
 * a CAS on the slot's ctrl word; the consumer polls the ctrl word of the slot at its head with an
 * acquire load and returns slots by advancing the head with a release store. The consumer never
 * writes slot memory, so a slot's lines move only from producer to consumer (the cheapest direction),
 * and producers read the head only when their cached copy says the ring is full (Aeron's idea).
 *
 * <p>A claim must be published well within the stall timeout: a producer stalled past it has lost its
 * frame (its publish returns false), and the payload bytes it may still write land in a slot that
 * another frame may already use. The default timeout (1 s) is far beyond any real claim.
 *
 * <p>An object of this class is a view for one side: producer state ({@link #headCache}) is a hint
 * shared by a node's sending threads; consumer state is owned by the single consuming thread.
 */
final class Ring {
    /** The slot header's length, source and source_gen read or written as one word (they are adjacent, 8-aligned). */
    private static final ValueLayout.OfLong SLOT_WORD = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The highest position a ring is taken to reach; a head beyond it was written by a foreign hand. */
    static final long MAX_POSITION = 1L << 61;

    final MemorySegment mem;
    final long base;
    final int slots;
    final long mask;
    final int slotBytes;
    final int maxFrame;
    final long stallTimeoutNs;
    private final int maxSource;
    /** The consumer's node entry, where rare events are counted; -1 for a producer's view. */
    private final long counters;

    /** Producer side: the last head seen; positions below headCache + slots are known to be free. */
    private long headCache;

    // Consumer side.
    private long head;
    private long stallPosition = -1;
    /** The tail when the stall at {@link #stallPosition} was first seen: every position below it was claimed by then. */
    private long stallTail;
    private long stallSince;
    private int idlePolls;
    /** What the idle polls' second-line loads read: kept so the JIT keeps the loads. */
    private long idleLoads;
    long lastBatchBytes;

    Ring(MemorySegment mem, long base, int slots, int slotBytes, int maxFrame, long stallTimeoutNs, long counters) {
        this(mem, base, slots, slotBytes, maxFrame, stallTimeoutNs, counters, 0x10000);
    }

    /** {@code maxSource}: the number of node addresses; a frame from a source at or above it is counted corrupt and skipped. */
    Ring(MemorySegment mem, long base, int slots, int slotBytes, int maxFrame, long stallTimeoutNs, long counters, int maxSource) {
        this.maxSource = maxSource;
        this.mem = mem;
        this.base = base;
        this.slots = slots;
        this.mask = slots - 1;
        this.slotBytes = slotBytes;
        this.maxFrame = maxFrame;
        this.stallTimeoutNs = stallTimeoutNs;
        this.counters = counters;
        if (counters < 0) {
            return; // a producer's view reads the head when its cached copy (0) says the ring may be full
        }
        long h = (long) LONG.getAcquire(mem, base + R_HEAD);
        if (h < 0 || h > MAX_POSITION) {
            // No ring reaches such a position (2^61 frames): a foreign writer's bytes. Start over at 0; the idle
            // checks then pull the tail back and repair the slots' laps.
            h = 0;
            LONG.setRelease(mem, base + R_HEAD, 0L);
            count(FabricLayout.N_CORRUPT);
        }
        this.head = h;
        this.headCache = h;
    }

    long slotOffset(long position) {
        return base + RING_HEADER + (position & mask) * slotBytes;
    }

    /** Claims the next position, or returns -1 when the ring is full (back-pressure, nothing lost). */
    long claim() {
        long tail = base + R_TAIL;
        while (true) {
            long p = (long) LONG.getVolatile(mem, tail);
            if (p - headCache >= slots) {
                headCache = (long) LONG.getAcquire(mem, base + R_HEAD);
                if (p - headCache >= slots) {
                    return -1;
                }
            }
            if (LONG.compareAndSet(mem, tail, p, p + 1)) {
                return p;
            }
        }
    }

    /**
     * Publishes a claimed position. Returns false when the consumer already skipped it as stalled
     * (the producer took longer than the stall timeout), so the frame was not delivered.
     *
     * <p>The slot's ctrl word is read here, after the frame was written, not at the claim: the
     * consumer spins on that line, and a load before the frame's stores costs the producer one more
     * trip of the line between the caches (measured: about 0.1-0.3 of the cache-line floor per frame).
     * A skip is only possible after the stall timeout, so nothing is learnt earlier at the claim.
     */
    boolean publish(long position, int length, int source, int sourceGen, long flags) {
        long slot = slotOffset(position);
        long before = (long) LONG.getAcquire(mem, slot + S_CTRL);
        // The slot must still hold an earlier lap (a frame, padding or a skip); our own position or a
        // later one means the consumer skipped us (and maybe a later producer reused it): touch nothing.
        if ((before >>> 2) >= position + 1) {
            return false;
        }
        // length, source and source_gen (docs/fabric-layout.md, "Slots") in one little-endian store.
        mem.set(SLOT_WORD, slot + S_LENGTH, (length & 0xFFFF_FFFFL) | (long) (source & 0xFFFF) << 32
                | (long) (sourceGen & 0xFFFF) << 48);
        return LONG.compareAndSet(mem, slot + S_CTRL, before, ((position + 1) << 2) | flags);
    }

    /** Whether a frame (or padding) is ready at the head. */
    boolean ready() {
        long c = (long) LONG.getVolatile(mem, slotOffset(head) + S_CTRL);
        return (c >>> 2) == head + 1;
    }

    /**
     * Hands up to {@code limit} ready frames to the handler in order, then returns their slots with
     * one release store of the head. Returns the number of frames delivered.
     */
    int poll(FrameHandler handler, int limit) {
        long h = head;
        int n = 0;
        long bytes = 0;
        int skips = 0;
        while (n < limit) {
            long slot = base + RING_HEADER + (h & mask) * slotBytes;
            long c = (long) LONG.getAcquire(mem, slot + S_CTRL);
            if ((c >>> 2) != h + 1) {
                if ((c >>> 2) > h + 1 && skips < slots && skipCorrupt(slot, c, h)) {
                    skips++; // at most a ring's worth a poll: the next idle check repairs the rest
                    h++; // no producer writes a later lap into this slot before we pass it: a foreign writer's bytes
                    continue;
                }
                if (n == 0) {
                    // Idle: load the slot's second line too, so a frame that spans two lines (a 64-byte
                    // datagram's does) arrives with both at once instead of one miss after the other. Where
                    // the vCPUs sit far apart this took udp-lat from a median 3.9x to 3.5x its floor
                    // (README, "Figures").
                    idleLoads += mem.get(SLOT_WORD, slot + LINE);
                }
                break;
            }
            h++;
            if ((c & (CTRL_PADDING | CTRL_SKIPPED)) != 0) {
                continue;
            }
            long word = mem.get(SLOT_WORD, slot + S_LENGTH); // length, source and source_gen in one load
            int length = (int) word;
            if (length < 0 || length > maxFrame) {
                count(FabricLayout.N_CORRUPT); // only a foreign writer could do this; never trust it with a bad length
                continue;
            }
            int source = (int) (word >>> 32) & 0xFFFF;
            if (source >= maxSource) {
                count(FabricLayout.N_CORRUPT); // no node has that address: a foreign writer's bytes
                continue;
            }
            if (Trace.ENABLED) {
                Trace.mark(Trace.DEVICE_IN);
            }
            try {
                handler.onFrame(source, mem, slot + SLOT_HEADER, length);
            } catch (Throwable t) {
                if (!DatapathErrors.survivable(t)) {
                    head = h; // this ends the poll, but the frames handed over are not handed over again
                    LONG.setRelease(mem, base + R_HEAD, h);
                    throw t;
                }
                // The datapath goes on and the owner sees the count. Errors too: one that left this poll
                // would leave the head where it was, and every later poll would hand over the same frame.
                count(FabricLayout.N_HANDLER_ERRORS);
            }
            n++;
            bytes += length;
        }
        lastBatchBytes = bytes;
        if (h != head) {
            head = h;
            LONG.setRelease(mem, base + R_HEAD, h);
            idlePolls = 0;
        } else if ((++idlePolls & 0xFFF) == 0) {
            checkStall(System.nanoTime()); // now and then, so a dead producer's claim is noticed while busy-polling
        }
        return n;
    }

    /**
     * Marks the slot of position {@code h}, whose ctrl {@code c} names a later lap than any producer can have
     * written there yet, skipped, and counts it corrupt. False when the CAS lost to a producer's publish (the
     * next look sees that frame or a later lap again).
     */
    private boolean skipCorrupt(long slot, long c, long h) {
        if (LONG.compareAndSet(mem, slot + S_CTRL, c, ((h + 1) << 2) | CTRL_SKIPPED)) {
            count(FabricLayout.N_CORRUPT);
            return true;
        }
        return false;
    }

    /**
     * Checks the ring's shared words against what the consumer knows, and skips the claims of stalled producers.
     * Returns true while a claimed position is pending at the head.
     *
     * <p>The consumer alone writes the head, and no producer can move the tail below the head or more than a
     * ring's worth above it; anything else was written by a foreign hand (fabric memory is untrusted input,
     * docs/fabric-layout.md 6.5). The head is written back and the tail pulled back to the head, each counted as
     * corrupt: a producer that claimed in between finds its slot taken and reports the frame late.
     *
     * <p>A producer that died between claim and publish would block the ring forever; after the stall timeout the
     * consumer marks that slot skipped (a CAS, so a late publish fails visibly) and counts it. So are all the
     * positions up to the tail seen when the stall began that are still unpublished: each was claimed at least
     * that long ago (a garbage tail a little ahead of the head costs one timeout, not one per slot).
     */
    boolean checkStall(long now) {
        long shared = (long) LONG.getAcquire(mem, base + R_HEAD);
        if (shared != head) {
            LONG.setRelease(mem, base + R_HEAD, head);
            count(FabricLayout.N_CORRUPT);
        }
        long tail = (long) LONG.getAcquire(mem, base + R_TAIL);
        if (tail - head < 0 || tail - head > slots) {
            if (LONG.compareAndSet(mem, base + R_TAIL, tail, head)) {
                count(FabricLayout.N_CORRUPT);
            }
            stallPosition = -1;
            return false;
        }
        if (tail == head) {
            stallPosition = -1;
            repairLaps();
            return false;
        }
        long slot = slotOffset(head);
        long c = (long) LONG.getAcquire(mem, slot + S_CTRL);
        if ((c >>> 2) == head + 1) {
            return true;
        }
        if (stallPosition != head) {
            stallPosition = head;
            stallTail = tail;
            stallSince = now;
        } else if (now - stallSince >= stallTimeoutNs) {
            for (long p = head; p - stallTail < 0; p++) {
                long s = slotOffset(p);
                long ctrl = (long) LONG.getAcquire(mem, s + S_CTRL);
                if ((ctrl >>> 2) != p + 1 && LONG.compareAndSet(mem, s + S_CTRL, ctrl, ((p + 1) << 2) | CTRL_SKIPPED)) {
                    count(FabricLayout.N_STALL_SKIPS);
                }
            }
            stallPosition = -1;
        }
        return true;
    }

    /**
     * With the ring empty, gives every slot whose ctrl names a lap no producer can have reached yet the lap
     * before the one it will next hold, counting each as corrupt: else the producer that next claims it would
     * find its publish refused (a late frame) for bytes nobody sent. Called rarely (idle checks), it reads
     * every slot's ctrl once.
     */
    private void repairLaps() {
        for (long q = head; q - head < slots; q++) {
            long s = slotOffset(q);
            long c = (long) LONG.getAcquire(mem, s + S_CTRL);
            if ((c >>> 2) > q + 1 // not even a producer holding q now could have written that
                    && LONG.compareAndSet(mem, s + S_CTRL, c, Math.max(0, q + 1 - slots) << 2)) {
                count(FabricLayout.N_CORRUPT);
            }
        }
    }

    private void count(long field) {
        LONG.getAndAdd(mem, counters + field, 1L);
    }

    /** Frames published or claimed but not yet consumed (for info; racy by nature). */
    static long occupancy(MemorySegment mem, long base) {
        long tail = (long) LONG.getAcquire(mem, base + R_TAIL);
        long head = (long) LONG.getAcquire(mem, base + R_HEAD);
        return Math.max(0, tail - head);
    }

    /** Discards everything in the ring; only its consumer, or a reclaimer of a dead consumer, may call it. */
    static long drain(MemorySegment mem, long base) {
        long tail = (long) LONG.getAcquire(mem, base + R_TAIL);
        long head = (long) LONG.getAcquire(mem, base + R_HEAD);
        LONG.setRelease(mem, base + R_HEAD, tail);
        return Math.max(0, tail - head);
    }
}
