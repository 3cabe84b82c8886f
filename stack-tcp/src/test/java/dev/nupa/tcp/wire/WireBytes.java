package dev.nupa.tcp.wire;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

/**
 * Test helpers: hex to bytes, and a deliberately naive RFC 1071 reference to check the fast code
 * against (the same reference as stack-ip's tests, written again here: test classes do not cross
 * modules).
 */
final class WireBytes {
    private WireBytes() {
    }

    static final int LOCALHOST = 0x7F000001;

    /** Hex digits, spaces ignored. */
    static byte[] hex(String text) {
        return HexFormat.of().parseHex(text.replace(" ", ""));
    }

    static MemorySegment seg(byte[] bytes) {
        return MemorySegment.ofArray(bytes);
    }

    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /**
     * The one's complement sum of RFC 1071 taken byte by byte: a byte at an even distance from
     * {@code from} is the high byte of a 16-bit word, the next one its low byte, and an odd last
     * byte is a high byte padded with zero (RFC 1071 4.1). The carry is folded after every byte.
     */
    static int naiveSum(byte[] b, int from, int to) {
        int acc = 0;
        for (int i = from; i < to; i++) {
            acc += ((i - from) & 1) == 0 ? (b[i] & 0xFF) << 8 : b[i] & 0xFF;
            acc = (acc & 0xFFFF) + (acc >>> 16);
        }
        return acc;
    }

    static int naiveSum(byte[] b) {
        return naiveSum(b, 0, b.length);
    }

    static int u8(byte[] b, int at) {
        return b[at] & 0xFF;
    }

    static int u16(byte[] b, int at) {
        return ((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF);
    }

    static int u32(byte[] b, int at) {
        return u16(b, at) << 16 | u16(b, at + 2);
    }

    static void putU16(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 8);
        b[at + 1] = (byte) v;
    }

    /** The 12-byte IPv4 pseudo header of RFC 9293 3.1 (source, destination, zero, protocol 6, TCP length). */
    static byte[] pseudoHeader(int src, int dst, int tcpLength) {
        return new byte[] {
            (byte) (src >>> 24), (byte) (src >>> 16), (byte) (src >>> 8), (byte) src,
            (byte) (dst >>> 24), (byte) (dst >>> 16), (byte) (dst >>> 8), (byte) dst,
            0, 6, (byte) (tcpLength >>> 8), (byte) tcpLength
        };
    }

    /** The sum over pseudo header and the {@code length} bytes of a segment at {@code o}: 0xFFFF when its checksum verifies. */
    static int segmentSum(byte[] b, int o, int length, int src, int dst) {
        byte[] all = new byte[12 + length];
        System.arraycopy(pseudoHeader(src, dst, length), 0, all, 0, 12);
        System.arraycopy(b, o, all, 12, length);
        return naiveSum(all);
    }

    /** The checksum field a segment at {@code o} should carry: the complement of its sum with the field taken as zero. */
    static int segmentChecksum(byte[] b, int o, int length, int src, int dst) {
        byte[] all = new byte[12 + length];
        System.arraycopy(pseudoHeader(src, dst, length), 0, all, 0, 12);
        System.arraycopy(b, o, all, 12, length);
        all[12 + 16] = 0;
        all[12 + 17] = 0;
        return ~naiveSum(all) & 0xFFFF;
    }
}
