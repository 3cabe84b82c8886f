package dev.nupa.roce.verbs;

/**
 * A scatter/gather list, in the manner of an array of libibverbs' {@code struct ibv_sge}: up to
 * {@code capacity} entries of (address, length, lkey), where the address is an offset into the
 * region's {@link LocalRegion#addr() address space}. Reused by work requests, so posting allocates nothing.
 */
public final class ScatterGather {
    final long[] addr;
    final int[] length;
    final int[] lkey;
    int count;

    public ScatterGather(int capacity) {
        if (capacity < 1 || capacity > 64) {
            throw new RdmaException("a scatter/gather list holds 1..64 entries, not " + capacity);
        }
        addr = new long[capacity];
        length = new int[capacity];
        lkey = new int[capacity];
    }

    /** Empties the list. */
    public ScatterGather clear() {
        count = 0;
        return this;
    }

    /** Appends {@code length} bytes at {@code offset} of {@code mr}. */
    public ScatterGather add(LocalRegion mr, long offset, int length) {
        return add(mr.addr() + offset, length, mr.lkey());
    }

    public ScatterGather add(long addr, int length, int lkey) {
        if (count == this.addr.length) {
            throw new RdmaException("scatter/gather list is full (" + count + " entries); create it with more");
        }
        if (length < 0) {
            throw new RdmaException("scatter/gather entry length " + length + " is negative");
        }
        this.addr[count] = addr;
        this.length[count] = length;
        this.lkey[count] = lkey;
        count++;
        return this;
    }

    /** Sets entry {@code i} (which must exist) in place: a reused request changes its buffer without re-adding. */
    public ScatterGather set(int i, long addr, int length, int lkey) {
        if (i < 0 || i >= count) {
            throw new RdmaException("scatter/gather entry " + i + " does not exist (" + count + " entries)");
        }
        if (length < 0) {
            throw new RdmaException("scatter/gather entry length " + length + " is negative");
        }
        this.addr[i] = addr;
        this.length[i] = length;
        this.lkey[i] = lkey;
        return this;
    }

    public int count() {
        return count;
    }

    /** Entry {@code i}'s address ({@code i < count()}). */
    public long addr(int i) {
        return addr[i];
    }

    /** Entry {@code i}'s length in bytes. */
    public int length(int i) {
        return length[i];
    }

    /** Entry {@code i}'s lkey. */
    public int lkey(int i) {
        return lkey[i];
    }

    /** The bytes the entries add up to. */
    public long totalLength() {
        long n = 0;
        for (int i = 0; i < count; i++) {
            n += length[i];
        }
        return n;
    }
}
