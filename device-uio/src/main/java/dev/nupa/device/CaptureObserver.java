package dev.nupa.device;

import static dev.nupa.device.FabricLayout.LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

/**
 * A capture observer (docs/fabric-layout.md 12): watches nodes of a fabric without holding a node address. It
 * creates a capture file with one ring per watched node, names it in a slot of the fabric's observer table, and
 * reads what the nodes record there. {@link #close()} frees the slot and removes the file. One thread uses it.
 */
public final class CaptureObserver implements AutoCloseable {
    private final Fabric fabric;
    private final CaptureFile file;
    private final int slot;
    private final long word;
    private final int[] nodes;
    private final MemorySegment scratch;
    private final boolean[] broken;
    private boolean closed;

    private CaptureObserver(Fabric fabric, CaptureFile file, int slot, int[] nodes) {
        this.fabric = fabric;
        this.file = file;
        this.slot = slot;
        this.word = ObserverTable.load(fabric.mem, slot);
        this.nodes = nodes.clone();
        this.scratch = Arena.ofAuto().allocate(file.snaplen, 8);
        this.broken = new boolean[nodes.length];
    }

    /**
     * Starts observing {@code nodes} of {@code fabric}, with a ring of {@code ringBytes} (a power of two) per node
     * and records cut at {@code snaplen} frame bytes. The nodes attach at their next liveness tick.
     */
    public static CaptureObserver start(Fabric fabric, int[] nodes, long ringBytes, int snaplen) {
        if (nodes.length == 0) {
            throw new IllegalArgumentException("name at least one node to observe");
        }
        int max = Math.min(ObserverTable.NODE_BITS, fabric.geometry().maxNodes());
        for (int a : nodes) {
            if (a < 0 || a >= max) {
                throw new IllegalArgumentException("node " + a + " is not an address of this fabric (0.." + (max - 1) + ")");
            }
        }
        Path path = Path.of(CaptureFile.DIRECTORY + "nupa-capture-" + UUID.randomUUID());
        CaptureFile f = CaptureFile.create(path, nodes, ringBytes, snaplen);
        try {
            int slot = ObserverTable.claim(fabric, ProcessHandle.current().pid(), path.toString(), nodes);
            return new CaptureObserver(fabric, f, slot, nodes);
        } catch (RuntimeException e) {
            f.close();
            delete(path);
            throw e;
        }
    }

    public Path file() {
        return file.path;
    }

    public int slot() {
        return slot;
    }

    public int[] nodes() {
        return nodes.clone();
    }

    /** The generation of node {@code nodes()[i]} that serves its ring, or 0 while none does. */
    public long attached(int i) {
        return (long) LONG.getAcquire(file.mem, file.ringBase(i) + CaptureRing.R_ATTACHED);
    }

    /** Frames node {@code nodes()[i]} recorded into its ring. */
    public long recorded(int i) {
        return CaptureRing.recorded(file.mem, file.ringBase(i));
    }

    /** Frames node {@code nodes()[i]} could not record: its ring was full. */
    public long dropped(int i) {
        return CaptureRing.dropped(file.mem, file.ringBase(i));
    }

    /** Whether ring {@code i} was found holding bytes no node writes (it is no longer read). */
    public boolean broken(int i) {
        return broken[i];
    }

    /** Whether this observer's slot is still its own (a node frees it only if this process is provably dead). */
    public boolean holdsSlot() {
        return ObserverTable.load(fabric.mem, slot) == word;
    }

    /** Hands up to {@code limit} records per ring to {@code handler}; returns how many it handed over. */
    public int poll(CaptureRing.RecordHandler handler, int limit) {
        int n = 0;
        for (int i = 0; i < nodes.length; i++) {
            if (broken[i]) {
                continue;
            }
            int got = CaptureRing.poll(file.mem, file.ringBase(i), file.capacity, file.snaplen, scratch, handler, limit);
            if (got < 0) {
                broken[i] = true;
            } else {
                n += got;
            }
        }
        return n;
    }

    /** Frees the slot (the nodes let go at their next tick), unmaps and removes the capture file. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        ObserverTable.release(fabric, slot, word);
        file.close();
        delete(file.path);
    }

    private static void delete(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            // left for a node to remove when it finds this observer dead, or for the reader of /dev/shm
        }
    }
}
