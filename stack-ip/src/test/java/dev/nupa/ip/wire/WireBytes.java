package dev.nupa.ip.wire;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

/** Test helpers: hex to bytes, and a deliberately naive RFC 1071 reference to check the fast code against. */
final class WireBytes {
    private WireBytes() {
    }

    /** Hex digits, spaces ignored. */
    static byte[] hex(String text) {
        return HexFormat.of().parseHex(text.replace(" ", ""));
    }

    static MemorySegment seg(byte[] bytes) {
        return MemorySegment.ofArray(bytes);
    }

    static MemorySegment seg(String hexText) {
        return MemorySegment.ofArray(hex(hexText));
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

    /** RFC 1071 section 4.1's loop, word by word, with an int accumulator: the independent reference. */
    static int naiveSum(byte[] b, int from, int to) {
        int sum = 0;
        int i = from;
        for (; i + 1 < to; i += 2) {
            sum += ((b[i] & 0xFF) << 8) | (b[i + 1] & 0xFF);
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        if (i < to) {
            sum += (b[i] & 0xFF) << 8;
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return sum;
    }

    static int naiveSum(byte[] b) {
        return naiveSum(b, 0, b.length);
    }

    static int u16(byte[] b, int at) {
        return ((b[at] & 0xFF) << 8) | (b[at + 1] & 0xFF);
    }

    /** The 12-byte IPv4 pseudo header of RFC 768, laid out as bytes. */
    static byte[] pseudoHeader(int src, int dst, int protocol, int length) {
        return new byte[] {
            (byte) (src >>> 24), (byte) (src >>> 16), (byte) (src >>> 8), (byte) src,
            (byte) (dst >>> 24), (byte) (dst >>> 16), (byte) (dst >>> 8), (byte) dst,
            0, (byte) protocol, (byte) (length >>> 8), (byte) length
        };
    }
}
