package dev.nupa.device;

import static dev.nupa.device.FabricLayout.LONG;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A node's side of the observer table (docs/fabric-layout.md 12): on every liveness tick it reads the observer
 * slots; for an active one that names this node it maps the slot's capture file, marks its ring attached and from
 * then on copies every frame the node sends and receives into that ring. A full ring counts the frame dropped there
 * and costs nothing more. A released slot, or one whose observer provably died, is let go (and the dead one's slot
 * freed and its file removed).
 *
 * <p>{@link #record} runs on the sending and polling threads; with no observer it costs one volatile read.
 * Writers hold this object's lock for the copy (senders on several threads share one single-producer ring), and
 * detaching takes it too, so no copy runs into an unmapped file.
 */
final class CaptureTap implements FrameHandler {
    private static final class Sink {
        final CaptureFile file;
        final long base;

        Sink(CaptureFile file, long base) {
            this.file = file;
            this.base = base;
        }
    }

    private final Fabric fabric;
    private final int address;
    private final int generation;
    private final long[] served = new long[ObserverTable.SLOTS];
    private final long[] refused = new long[ObserverTable.SLOTS];
    private final Sink[] bySlot = new Sink[ObserverTable.SLOTS];
    private volatile Sink[] sinks = new Sink[0];
    private final long baseNano = System.nanoTime();
    private final long baseEpoch = System.currentTimeMillis() * 1_000_000L;
    /** The poll handler being wrapped; only the polling thread sets and reads it. */
    private FrameHandler inner;
    /** Why the last observer slot that named this node could not be served (for tools and tests), or null. */
    volatile String lastRefusal;

    CaptureTap(Fabric fabric, int address, int generation) {
        this.fabric = fabric;
        this.address = address;
        this.generation = generation;
    }

    boolean active() {
        return sinks.length != 0;
    }

    /** Observers served now. */
    int observers() {
        return sinks.length;
    }

    /** The handler to poll with: records each frame, then hands it to {@code handler}. Polling thread only. */
    FrameHandler wrap(FrameHandler handler) {
        inner = handler;
        return this;
    }

    @Override
    public void onFrame(int source, MemorySegment memory, long offset, int length) {
        record(false, source, address, memory, offset, length);
        inner.onFrame(source, memory, offset, length);
    }

    void record(boolean outbound, int source, int destination, MemorySegment mem, long off, int len) {
        if (sinks.length == 0) {
            return;
        }
        long ts = baseEpoch + (System.nanoTime() - baseNano);
        synchronized (this) {
            for (Sink s : sinks) {
                CaptureFile f = s.file;
                CaptureRing.offer(f.mem, s.base, f.capacity, f.snaplen, ts, outbound, source, destination, mem, off, len);
            }
        }
    }

    /** Liveness tick: serves the slots that name this node, lets go of the others. */
    void check() {
        MemorySegment mem = fabric.mem;
        for (int i = 0; i < ObserverTable.SLOTS; i++) {
            long w = ObserverTable.load(mem, i);
            if (ObserverTable.reclaimIfDead(fabric, i)) {
                w = ObserverTable.load(mem, i);
            }
            if (served[i] != 0 && served[i] != w) {
                detach(i);
            }
            if (ObserverTable.state(w) != ObserverTable.ACTIVE || !ObserverTable.watches(mem, i, address)
                    || served[i] == w || refused[i] == w) {
                continue;
            }
            try {
                String path = ObserverTable.path(mem, i);
                if (path == null) {
                    throw new FabricException("observer slot " + i + " holds no valid capture file path");
                }
                CaptureFile f = CaptureFile.open(path);
                int r = f.ringOf(address);
                if (r < 0) {
                    f.close();
                    throw new FabricException("capture file " + path + " has no ring for node " + address);
                }
                attach(i, w, new Sink(f, f.ringBase(r)));
            } catch (RuntimeException e) { // foreign bytes or a bad file must never stop the liveness thread
                refused[i] = w; // not again for this claim: a new claim of the slot is a new word
                lastRefusal = e.getMessage();
            }
        }
    }

    private synchronized void attach(int i, long word, Sink s) {
        bySlot[i] = s;
        served[i] = word;
        Sink[] next = Arrays.copyOf(sinks, sinks.length + 1);
        next[next.length - 1] = s;
        sinks = next;
        LONG.setRelease(s.file.mem, s.base + CaptureRing.R_ATTACHED, (long) generation);
    }

    private void detach(int i) {
        Sink s;
        synchronized (this) {
            s = bySlot[i];
            bySlot[i] = null;
            served[i] = 0;
            if (s == null) {
                return;
            }
            sinks = Arrays.stream(sinks).filter(x -> x != s).toArray(Sink[]::new);
            LONG.setRelease(s.file.mem, s.base + CaptureRing.R_ATTACHED, 0L);
        }
        s.file.close(); // no writer is in it: they copy under the lock and see the new array
    }

    /** Lets go of every capture file (the node leaves). */
    void close() {
        for (int i = 0; i < ObserverTable.SLOTS; i++) {
            detach(i);
        }
    }
}
