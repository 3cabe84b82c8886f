package dev.nupa.device;

import static dev.nupa.device.FabricLayout.LONG;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The observer table in the fabric header's reserved bytes (docs/fabric-layout.md 12.1): slots where a capture
 * observer, a process that holds no node address, names its capture file and the nodes it watches. Zero in a fabric
 * that never had an observer, so older nodes, which leave reserved bytes alone, are unaffected.
 *
 * <p>The slot word holds the observer's pid with the state, so a claim and its owner are one atomic store:
 * {@code word = (pid << 32) | (seq << 8) | state}, seq a 24-bit count of claims of the slot.
 */
public final class ObserverTable {
    private ObserverTable() {
    }

    public static final long OFFSET = FabricLayout.H_OBSERVERS;
    public static final int SLOTS = 8;
    public static final int SLOT_BYTES = 256;
    static final long O_WORD = 0;
    static final long O_HOST_ID = 8;
    static final long O_PATH_LENGTH = 16;
    static final long O_PATH = 32;
    static final int PATH_BYTES = 96;
    static final long O_NODES = 128;
    static final int NODE_BITS = 1024;

    static final int FREE = 0;
    static final int CLAIMING = 1;
    static final int ACTIVE = 2;

    /** An active observer, as {@code nupa fabric info} lists it. */
    public record Observer(int slot, long pid, String file, List<Integer> nodes) {
    }

    static long slot(int i) {
        return OFFSET + (long) i * SLOT_BYTES;
    }

    static int state(long word) {
        return (int) (word & 0xFF);
    }

    static long pid(long word) {
        return word >>> 32;
    }

    static long word(long pid, int seq, int state) {
        return (pid << 32) | ((long) (seq & 0xFFFFFF) << 8) | state;
    }

    static int seq(long word) {
        return (int) (word >>> 8) & 0xFFFFFF;
    }

    static long load(MemorySegment mem, int i) {
        return (long) LONG.getVolatile(mem, slot(i) + O_WORD);
    }

    /**
     * Claims a free slot for process {@code pid}, fills it and makes it ACTIVE; returns the slot's index, or throws if
     * every slot is held. Reclaims first the slots of observers that provably died.
     */
    static int claim(Fabric f, long pid, String path, int[] nodes) {
        if (!CaptureFile.validPath(path)) {
            throw new IllegalArgumentException("capture file " + path + " must be a plain name under " + CaptureFile.DIRECTORY);
        }
        MemorySegment mem = f.mem;
        for (int i = 0; i < SLOTS; i++) {
            reclaimIfDead(f, i);
        }
        for (int i = 0; i < SLOTS; i++) {
            long w = load(mem, i);
            if (state(w) != FREE) {
                continue;
            }
            long claimed = word(pid, seq(w) + 1, CLAIMING);
            if (!LONG.compareAndSet(mem, slot(i) + O_WORD, w, claimed)) {
                continue;
            }
            long s = slot(i);
            mem.set(ValueLayout.JAVA_LONG, s + O_HOST_ID, Fabric.HOST_ID);
            byte[] p = path.getBytes(StandardCharsets.US_ASCII);
            mem.asSlice(s + O_PATH, PATH_BYTES).fill((byte) 0);
            MemorySegment.copy(MemorySegment.ofArray(p), 0, mem, s + O_PATH, p.length);
            mem.set(ValueLayout.JAVA_INT, s + O_PATH_LENGTH, p.length);
            mem.asSlice(s + O_NODES, NODE_BITS / 8).fill((byte) 0);
            for (int a : nodes) {
                long at = s + O_NODES + a / 8;
                mem.set(ValueLayout.JAVA_BYTE, at, (byte) (mem.get(ValueLayout.JAVA_BYTE, at) | (1 << (a % 8))));
            }
            long active = word(pid, seq(claimed), ACTIVE);
            if (!LONG.compareAndSet(mem, s + O_WORD, claimed, active)) {
                continue; // taken from us (a reclaimer judged this pid dead): try another
            }
            f.bumpEpoch();
            return i;
        }
        throw new FabricException("all " + SLOTS + " observer slots of fabric " + f.name() + " are held by running captures;"
                + " stop one (nupa fabric info lists them)");
    }

    /** Frees slot {@code i} if it still holds {@code word}; returns whether it did. */
    static boolean release(Fabric f, int i, long word) {
        boolean ok = LONG.compareAndSet(f.mem, slot(i) + O_WORD, word, word(0, seq(word), FREE));
        if (ok) {
            f.bumpEpoch();
        }
        return ok;
    }

    /** Whether slot word {@code w} names a process on this host that no longer runs (docs/fabric-layout.md 5.5). */
    static boolean provablyDead(MemorySegment mem, int i, long w) {
        long host = (long) LONG.getAcquire(mem, slot(i) + O_HOST_ID);
        long pid = pid(w);
        return Fabric.HOST_ID != 0 && host == Fabric.HOST_ID && pid > 0 && !Fabric.running(pid);
    }

    /** Frees slot {@code i} if its observer provably died, and removes the capture file it named; returns whether it did. */
    static boolean reclaimIfDead(Fabric f, int i) {
        long w = load(f.mem, i);
        int st = state(w);
        if ((st != CLAIMING && st != ACTIVE) || !provablyDead(f.mem, i, w)) {
            return false;
        }
        String path = path(f.mem, i); // read before the CAS: after it, a new observer may write its own
        if (!release(f, i, w)) {
            return false;
        }
        if (path != null) {
            try {
                java.nio.file.Files.deleteIfExists(java.nio.file.Path.of(path));
            } catch (java.io.IOException | RuntimeException e) {
                // another user's file, or gone: nothing of ours to remove
            }
        }
        return true;
    }

    /** The capture file path of slot {@code i}, or null if the slot's bytes do not hold a valid one (untrusted input). */
    static String path(MemorySegment mem, int i) {
        long s = slot(i);
        int n = mem.get(ValueLayout.JAVA_INT, s + O_PATH_LENGTH);
        if (n < 1 || n > CaptureFile.MAX_PATH || mem.get(ValueLayout.JAVA_BYTE, s + O_PATH + n) != 0) {
            return null;
        }
        byte[] b = new byte[n];
        MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, s + O_PATH, b, 0, n);
        for (byte c : b) {
            if (c <= 0x20 || c >= 0x7F) {
                return null;
            }
        }
        String p = new String(b, StandardCharsets.US_ASCII);
        return CaptureFile.validPath(p) ? p : null;
    }

    /** Whether slot {@code i} names node {@code address}. */
    static boolean watches(MemorySegment mem, int i, int address) {
        return address >= 0 && address < NODE_BITS
                && (mem.get(ValueLayout.JAVA_BYTE, slot(i) + O_NODES + address / 8) & (1 << (address % 8))) != 0;
    }

    /** The active observers, for tools; slots with foreign bytes show a null file. */
    public static List<Observer> list(Fabric f) {
        List<Observer> out = new ArrayList<>();
        for (int i = 0; i < SLOTS; i++) {
            long w = load(f.mem, i);
            if (state(w) != ACTIVE) {
                continue;
            }
            List<Integer> nodes = new ArrayList<>();
            for (int a = 0; a < Math.min(NODE_BITS, f.geometry().maxNodes()); a++) {
                if (watches(f.mem, i, a)) {
                    nodes.add(a);
                }
            }
            out.add(new Observer(i, pid(w), path(f.mem, i), nodes));
        }
        return out;
    }
}
