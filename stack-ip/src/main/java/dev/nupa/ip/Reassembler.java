package dev.nupa.ip;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import dev.nupa.ip.wire.IcmpHeader;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;

/**
 * IPv4 reassembly (RFC 791 3.2, RFC 815) with bounded memory: a fixed number of slots, each a
 * 64 KiB buffer allocated on first use and kept, so steady-state reassembly allocates nothing.
 * Fragments of one datagram (same source, destination, protocol and identification) are copied to
 * their place; which 8-byte blocks arrived is a bitmap, so holes need no list.
 *
 * <p>Hostile input: a fragment that overlaps data already received drops the whole datagram, as
 * RFC 5722 asks for IPv6 and Linux does for IPv4 since 4.19, unless it repeats the same bytes at the
 * same place (a duplicate, ignored). A fragment past 65535 bytes, a non-final fragment whose length is
 * not a multiple of 8, or a second different total also drop it. When every slot is busy the oldest
 * reassembly is evicted. Unfinished datagrams expire after the timeout; if their first fragment came,
 * the owner sends ICMP time exceeded (RFC 792, RFC 1122 3.3.2).
 *
 * <p>Single-threaded: the datapath loop owns it.
 */
final class Reassembler {
    /** Payload of a whole datagram at most: 65535 minus the least header. */
    static final int MAX_PAYLOAD = Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER;
    /** Payload is placed after room for the longest header, which is written in front of it when complete. */
    private static final int DATA = Ipv4Header.MAX_HEADER;
    private static final int BITMAP_LONGS = (MAX_PAYLOAD / 8 + 64) / 64;

    /** Told about a datagram that timed out after its first fragment came: {@code first} is that fragment's header and up to 8 payload bytes. */
    interface TimeoutHandler {
        void onTimeout(Ipv4Header first);
    }

    private final Counters counters;
    private final long timeoutNs;
    private final boolean[] used;
    private final int[] source;
    private final int[] destination;
    private final int[] protocol;
    private final int[] id;
    private final int[] headerLength; // of the first fragment; 0 until it comes
    private final int[] total;        // payload length, -1 until the last fragment comes
    private final int[] received;     // payload bytes received
    private final long[] deadline;
    private final long[] started;      // allocation order, for evicting the oldest
    private final long[][] blocks;
    private final MemorySegment[] buffer;
    private final Ipv4Header view = new Ipv4Header();
    private int busy;
    private long allocations;

    Reassembler(int slots, long timeoutNs, Counters counters) {
        this.counters = counters;
        this.timeoutNs = timeoutNs;
        used = new boolean[slots];
        source = new int[slots];
        destination = new int[slots];
        protocol = new int[slots];
        id = new int[slots];
        headerLength = new int[slots];
        total = new int[slots];
        received = new int[slots];
        deadline = new long[slots];
        started = new long[slots];
        blocks = new long[slots][];
        buffer = new MemorySegment[slots];
    }

    /** Datagrams being reassembled now. */
    int inProgress() {
        return busy;
    }

    /**
     * Takes one fragment. Returns the slot of the datagram it completed (read it with {@link #datagram},
     * then {@link #release} it), or -1.
     */
    int accept(Ipv4Header frag, long now) {
        counters.inc(IpCounter.REASM_REQDS);
        int offset = frag.fragmentOffset();
        int length = frag.payloadLength();
        boolean last = !frag.moreFragments();
        int end = offset + length;
        int slot = find(frag);
        if (end > MAX_PAYLOAD || (!last && (length == 0 || (length & 7) != 0))) {
            counters.inc(IpCounter.REASM_BAD_FRAGMENTS); // RFC 791: all but the last carry multiples of 8
            if (slot >= 0) {
                fail(slot);
            }
            return -1;
        }
        if (slot < 0) {
            slot = allocate(frag, now);
        }
        if (total[slot] >= 0 && (end > total[slot] || (last && end != total[slot]))
                || last && highestBlockEnd(slot) > ((end + 7) & ~7)) {
            counters.inc(IpCounter.REASM_BAD_FRAGMENTS); // data beyond the end, or two different ends
            fail(slot);
            return -1;
        }
        long[] bits = blocks[slot];
        int fromBlock = offset >>> 3;
        int toBlock = (end + 7) >>> 3;
        MemorySegment buf = buffer[slot];
        if (length > 0 && anySet(bits, fromBlock, toBlock)) {
            if (allSet(bits, fromBlock, toBlock) && sameBytes(frag, buf, DATA + offset, length)
                    && (!last || total[slot] == end)) {
                counters.inc(IpCounter.REASM_DUPLICATES);
                return -1;
            }
            counters.inc(IpCounter.REASM_OVERLAPS);
            fail(slot);
            return -1;
        }
        MemorySegment.copy(frag.segment(), frag.payloadOffset(), buf, DATA + offset, length);
        setRange(bits, fromBlock, toBlock);
        received[slot] += length;
        if (last) {
            total[slot] = end;
        }
        if (offset == 0) {
            int hl = frag.headerLength();
            headerLength[slot] = hl;
            MemorySegment.copy(frag.segment(), frag.offset(), buf, DATA - hl, hl);
        }
        if (total[slot] >= 0 && received[slot] == total[slot] && headerLength[slot] > 0) {
            finish(slot);
            counters.inc(IpCounter.REASM_OKS);
            return slot;
        }
        return -1;
    }

    /** The buffer holding a completed datagram; it starts at {@link #datagramOffset} and is {@link #datagramLength} bytes. */
    MemorySegment datagram(int slot) {
        return buffer[slot];
    }

    long datagramOffset(int slot) {
        return DATA - headerLength[slot];
    }

    int datagramLength(int slot) {
        return headerLength[slot] + total[slot];
    }

    void release(int slot) {
        if (used[slot]) {
            used[slot] = false;
            busy--;
        }
    }

    /** Expires reassemblies whose time is up; returns the next deadline ({@link Long#MAX_VALUE}: none). */
    long poll(long now, TimeoutHandler onTimeout) {
        long next = Long.MAX_VALUE;
        for (int s = 0; s < used.length; s++) {
            if (!used[s]) {
                continue;
            }
            if (deadline[s] - now <= 0) {
                counters.inc(IpCounter.REASM_TIMEOUTS);
                int hl = headerLength[s];
                if (hl > 0) {
                    int quoted = hl + Math.min(IcmpHeader.QUOTED_PAYLOAD, contiguousFromStart(s));
                    if (view.wrapQuoted(buffer[s], DATA - hl, quoted) == WireStatus.OK) {
                        onTimeout.onTimeout(view);
                    }
                }
                fail(s);
            } else {
                next = Math.min(next, deadline[s]);
            }
        }
        return next;
    }

    private int find(Ipv4Header frag) {
        if (busy == 0) {
            return -1;
        }
        int src = frag.sourceAddress();
        int dst = frag.destinationAddress();
        int proto = frag.protocol();
        int ident = frag.identification();
        for (int s = 0; s < used.length; s++) {
            if (used[s] && id[s] == ident && source[s] == src && destination[s] == dst && protocol[s] == proto) {
                return s;
            }
        }
        return -1;
    }

    private int allocate(Ipv4Header frag, long now) {
        int slot = -1;
        int oldest = -1;
        for (int s = 0; s < used.length; s++) {
            if (!used[s]) {
                slot = s;
                break;
            }
            if (oldest < 0 || started[s] < started[oldest]) {
                oldest = s;
            }
        }
        if (slot < 0) {
            counters.inc(IpCounter.REASM_EVICTIONS);
            fail(oldest);
            slot = oldest;
        }
        if (buffer[slot] == null) {
            buffer[slot] = Arena.ofAuto().allocate(DATA + MAX_PAYLOAD + 8);
            blocks[slot] = new long[BITMAP_LONGS];
        } else {
            java.util.Arrays.fill(blocks[slot], 0L);
        }
        used[slot] = true;
        busy++;
        source[slot] = frag.sourceAddress();
        destination[slot] = frag.destinationAddress();
        protocol[slot] = frag.protocol();
        id[slot] = frag.identification();
        headerLength[slot] = 0;
        total[slot] = -1;
        received[slot] = 0;
        deadline[slot] = now + timeoutNs;
        started[slot] = allocations++;
        return slot;
    }

    private void fail(int slot) {
        counters.inc(IpCounter.REASM_FAILS);
        release(slot);
    }

    /** Writes the first fragment's header in front of the payload as the whole datagram's (no MF, offset 0, new total). */
    private void finish(int slot) {
        int hl = headerLength[slot];
        MemorySegment buf = buffer[slot];
        if (view.wrapForWrite(buf, DATA - hl, hl + total[slot])) {
            view.setTotalLength(hl + total[slot]).setFlagsAndFragmentOffset(false, false, 0).fillChecksum();
        }
    }

    private boolean sameBytes(Ipv4Header frag, MemorySegment buf, long at, int length) {
        return MemorySegment.mismatch(frag.segment(), frag.payloadOffset(), frag.payloadOffset() + length,
                buf, at, at + length) < 0;
    }

    /** End (in bytes, rounded to blocks) of the highest block received. */
    private int highestBlockEnd(int slot) {
        long[] bits = blocks[slot];
        for (int i = bits.length - 1; i >= 0; i--) {
            if (bits[i] != 0) {
                return (i * 64 + 63 - Long.numberOfLeadingZeros(bits[i]) + 1) * 8;
            }
        }
        return 0;
    }

    private int contiguousFromStart(int slot) {
        long[] bits = blocks[slot];
        int n = 0;
        while (n < bits.length * 64 && (bits[n >>> 6] & (1L << (n & 63))) != 0) {
            n++;
        }
        return n * 8;
    }

    static boolean anySet(long[] bits, int from, int to) {
        for (int b = from; b < to; b++) {
            if ((bits[b >>> 6] & (1L << (b & 63))) != 0) {
                return true;
            }
        }
        return false;
    }

    static boolean allSet(long[] bits, int from, int to) {
        for (int b = from; b < to; b++) {
            if ((bits[b >>> 6] & (1L << (b & 63))) == 0) {
                return false;
            }
        }
        return true;
    }

    static void setRange(long[] bits, int from, int to) {
        for (int b = from; b < to; b++) {
            bits[b >>> 6] |= 1L << (b & 63);
        }
    }
}
