package dev.nupa.roce.transport;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.wire.Bytes;
import java.lang.foreign.MemorySegment;

/** Copies between a scatter/gather list (held in a queue's arrays) and a run of bytes, checking each region. */
final class Sgl {
    private Sgl() {
    }

    /** Total bytes of {@code count} entries of a list from index {@code base}. */
    static long length(int[] length, int base, int count) {
        long n = 0;
        for (int i = base; i < base + count; i++) {
            n += length[i];
        }
        return n;
    }

    /**
     * Copies {@code n} bytes at message offset {@code off} of the list ({@code count} entries from index
     * {@code base}) out of it ({@code intoList} false) or into it, from or to {@code data} at {@code dataOff}.
     * Returns false, having copied nothing more, when an entry's lkey is unknown, belongs to another
     * protection domain, lacks LOCAL_WRITE for a write, or lies outside its region, or the list is too short.
     */
    static boolean copy(RdmaDevice device, int pd, long[] addr, int[] length, int[] lkey, int base, int count, long off,
            MemorySegment data, long dataOff, int n, boolean intoList) {
        return walk(device, pd, addr, length, lkey, base, count, off, data, dataOff, n, intoList, true);
    }

    /** Whether {@link #copy} out of the list ({@code intoList} false) would succeed for the first {@code n} bytes; copies nothing. */
    static boolean check(RdmaDevice device, int pd, long[] addr, int[] length, int[] lkey, int base, int count, int n) {
        return walk(device, pd, addr, length, lkey, base, count, 0, null, 0, n, false, false);
    }

    private static boolean walk(RdmaDevice device, int pd, long[] addr, int[] length, int[] lkey, int base, int count, long off,
            MemorySegment data, long dataOff, int n, boolean intoList, boolean move) {
        for (int i = base; i < base + count && n > 0; i++) {
            int l = length[i];
            if (off >= l) {
                off -= l;
                continue;
            }
            int take = (int) Math.min(l - off, n);
            Region mr = device.region(lkey[i]);
            long va = addr[i] + off;
            if (mr == null || mr.isWindow() || mr.pdId != pd || (intoList && (mr.access & Access.LOCAL_WRITE) == 0) || !mr.covers(va, take)) {
                return false;
            }
            if (move && intoList) {
                Bytes.copy(data, dataOff, mr.memory, va - mr.addr, take);
            } else if (move) {
                Bytes.copy(mr.memory, va - mr.addr, data, dataOff, take);
            }
            n -= take;
            dataOff += take;
            off = 0;
        }
        return n == 0;
    }
}
