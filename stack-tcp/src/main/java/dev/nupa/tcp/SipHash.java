package dev.nupa.tcp;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012): a keyed
 * pseudorandom function with a 128-bit key and a 64-bit output, the PRF that keys initial sequence
 * numbers (RFC 6528) and SYN cookies here, as it does in Linux. Two compression rounds per 8-byte
 * block, four finalization rounds.
 *
 * <p>The key is two longs: k0 is key bytes 0-7 and k1 bytes 8-15, each read little-endian as the
 * paper specifies. Stateless static methods with the state in locals: nothing is allocated and any
 * thread may call them.
 */
final class SipHash {
    private static final VarHandle LONG_LE =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private SipHash() {
    }

    /** SipHash-2-4 of {@code len} bytes of {@code data} from {@code off}. */
    static long hash(long k0, long k1, byte[] data, int off, int len) {
        Objects.checkFromIndexSize(off, len, data.length);
        long v0 = k0 ^ 0x736f6d6570736575L;
        long v1 = k1 ^ 0x646f72616e646f6dL;
        long v2 = k0 ^ 0x6c7967656e657261L;
        long v3 = k1 ^ 0x7465646279746573L;
        int fullEnd = off + (len & ~7);
        // The last block holds the 0-7 leftover bytes and, in its top byte, len mod 256.
        long last = ((long) len) << 56;
        for (int i = 0; i < (len & 7); i++) {
            last |= (data[fullEnd + i] & 0xffL) << (8 * i);
        }
        for (int p = off; p <= fullEnd; p += 8) {
            long m = p < fullEnd ? (long) LONG_LE.get(data, p) : last;
            v3 ^= m;
            for (int r = 0; r < 2; r++) {
                v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
                v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
                v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
                v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
            }
            v0 ^= m;
        }
        v2 ^= 0xff;
        for (int r = 0; r < 4; r++) {
            v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
            v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
            v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
            v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
        }
        return v0 ^ v1 ^ v2 ^ v3;
    }

    /**
     * SipHash-2-4 of a 24-byte message given as three words: the same value as {@link #hash(long,
     * long, byte[], int, int)} of the little-endian bytes of m0, then m1, then m2.
     */
    static long hash(long k0, long k1, long m0, long m1, long m2) {
        long v0 = k0 ^ 0x736f6d6570736575L;
        long v1 = k1 ^ 0x646f72616e646f6dL;
        long v2 = k0 ^ 0x6c7967656e657261L;
        long v3 = k1 ^ 0x7465646279746573L;
        for (int block = 0; block < 4; block++) {
            long m = switch (block) {
                case 0 -> m0;
                case 1 -> m1;
                case 2 -> m2;
                default -> 24L << 56; // no leftover bytes; the length, 24, in the top byte
            };
            v3 ^= m;
            for (int r = 0; r < 2; r++) {
                v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
                v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
                v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
                v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
            }
            v0 ^= m;
        }
        v2 ^= 0xff;
        for (int r = 0; r < 4; r++) {
            v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
            v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
            v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
            v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
        }
        return v0 ^ v1 ^ v2 ^ v3;
    }

    /** The 4-tuple as the first two words every keyed hash here starts with (see callers). */
    static long addresses(int localIp, int remoteIp) {
        return (localIp & 0xffffffffL) | ((long) remoteIp << 32);
    }

    static long ports(int localPort, int remotePort) {
        return (localPort & 0xffffL) | ((remotePort & 0xffffL) << 16);
    }
}
