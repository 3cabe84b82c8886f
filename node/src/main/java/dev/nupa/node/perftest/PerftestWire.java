package dev.nupa.node.perftest;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import io.vertx.core.buffer.Buffer;

/**
 * What perftest's tools (linux-rdma/perftest, 6.x) say to each other over their TCP side channel when run
 * without rdma_cm: the messages, their exact sizes and encodings. perftest reads each message with a single
 * {@code read()} of its exact size, so each one must leave in one write; every binary integer is big-endian.
 *
 * <p>In order: the version (16 bytes, text, NUL-padded), the page and cache-line sizes (4 bytes each; each side
 * takes the larger), the path MTU (2 bytes: the {@code ibv_mtu} number as text and a NUL; each side takes the
 * smaller), then the QP details ({@link Dest}, 108 bytes) as many times as the test synchronizes, the bandwidth
 * report of ib_write_bw, and {@code "done\0"}. The client writes first at every step, the server reads first.
 */
final class PerftestWire {
    static final int PORT = 18515;
    static final int VERSION_BYTES = 16;
    /**
     * The version we speak: at least 5.70 (the oldest that 6.x accepts), below 6.28 (from which a peer would
     * expect a further negotiation exchange).
     */
    static final String VERSION = "6.06";
    static final double OLDEST = 5.70;
    static final int DEST_BYTES = 108;
    /** With -R (rdma_cm), the QP details go as the struct: sizeof(struct pingpong_dest). */
    static final int CM_DEST_BYTES = 56;
    static final int DONE_BYTES = 5;
    static final int REPORT_FIELDS = 5;
    /** perftest's cycle buffer (the page size) and cache line, offered as ours. */
    static final int CYCLE_BUFFER = 4096;
    static final int CACHE_LINE = 64;

    private PerftestWire() {
    }

    /**
     * One side's QP details (perftest's {@code pingpong_dest}), sent as
     * {@code %04x:%04x:%06x:%06x:%08x:%016llx:} then the 16 GID bytes as {@code %02x:} and {@code %08x:}, with a NUL:
     * 108 bytes.
     *
     * @param outReads the READs and atomics this side will answer at once (the peer's initiator depth)
     * @param psn the first PSN this side sends
     * @param vaddr where in this side's region the peer writes, reads and adds
     */
    record Dest(int lid, int outReads, int qpn, int psn, int rkey, long vaddr, byte[] gid, int srqn) {
        Dest {
            if (gid.length != 16) {
                throw new IllegalArgumentException("a GID has 16 bytes, not " + gid.length);
            }
        }

        /** A RoCEv2 side whose GID is its IPv4 address mapped into IPv6 ({@code ::ffff:a.b.c.d}). */
        static Dest ipv4(int outReads, int qpn, int psn, int rkey, long vaddr, int ip) {
            byte[] gid = new byte[16];
            gid[10] = (byte) 0xFF;
            gid[11] = (byte) 0xFF;
            gid[12] = (byte) (ip >>> 24);
            gid[13] = (byte) (ip >>> 16);
            gid[14] = (byte) (ip >>> 8);
            gid[15] = (byte) ip;
            return new Dest(0, outReads, qpn, psn, rkey, vaddr, gid, 0);
        }

        Buffer encode() {
            StringBuilder s = new StringBuilder(DEST_BYTES);
            s.append(String.format("%04x:%04x:%06x:%06x:%08x:%016x:", lid, outReads, qpn, psn, rkey, vaddr));
            for (byte b : gid) {
                s.append(String.format("%02x:", b & 0xFF));
            }
            s.append(String.format("%08x:", srqn)).append('\0');
            byte[] bytes = s.toString().getBytes(StandardCharsets.US_ASCII);
            if (bytes.length != DEST_BYTES) {
                throw new IllegalArgumentException("a QP details field is out of range: " + this);
            }
            return Buffer.buffer(bytes);
        }

        static Dest decode(Buffer b) {
            String text = b.getString(0, b.length(), "US-ASCII");
            int nul = text.indexOf('\0');
            String[] f = (nul >= 0 ? text.substring(0, nul) : text).split(":");
            if (b.length() != DEST_BYTES || f.length != 23) {
                throw new IllegalArgumentException("the perftest peer sent malformed QP details (" + f.length
                        + " fields in " + b.length() + " bytes; perftest 6.x sends 23 in 108, or was it run with -R?): "
                        + text.replace('\0', '.'));
            }
            try {
                byte[] gid = new byte[16];
                for (int i = 0; i < 16; i++) {
                    gid[i] = (byte) Integer.parseInt(f[6 + i], 16);
                }
                return new Dest(Integer.parseInt(f[0], 16), Integer.parseInt(f[1], 16), Integer.parseInt(f[2], 16),
                        Integer.parseInt(f[3], 16), Integer.parseUnsignedInt(f[4], 16), Long.parseUnsignedLong(f[5], 16), gid,
                        Integer.parseUnsignedInt(f[22], 16));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("the perftest peer sent QP details that are not hex: " + text.replace('\0', '.'));
            }
        }

        /**
         * With {@code -R}: the struct itself, 56 bytes, each integer big-endian (lid, out_reads, qpn, psn, rkey, 4 bytes
         * of padding, vaddr, the 16 GID bytes, srqn, GID index 1).
         */
        Buffer encodeBinary() {
            Buffer b = Buffer.buffer(CM_DEST_BYTES).appendInt(lid).appendInt(outReads).appendInt(qpn).appendInt(psn).appendInt(rkey)
                    .appendInt(0).appendLong(vaddr).appendBytes(gid).appendInt(srqn).appendInt(1);
            return b;
        }

        static Dest decodeBinary(Buffer b) {
            if (b.length() < CM_DEST_BYTES) {
                throw new IllegalArgumentException("the perftest peer sent " + b.length() + " bytes of QP details where perftest -R sends "
                        + CM_DEST_BYTES);
            }
            return new Dest(b.getInt(0), b.getInt(4), b.getInt(8), b.getInt(12), b.getInt(16), b.getLong(24), b.getBytes(32, 48),
                    b.getInt(48));
        }

        /** The peer's IPv4 address, from a GID that maps one; refuses any other GID with the remedy. */
        int ipv4Address() {
            for (int i = 0; i < 10; i++) {
                if (gid[i] != 0) {
                    return notMapped();
                }
            }
            if (gid[10] != (byte) 0xFF || gid[11] != (byte) 0xFF) {
                return notMapped();
            }
            return ((gid[12] & 0xFF) << 24) | ((gid[13] & 0xFF) << 16) | ((gid[14] & 0xFF) << 8) | (gid[15] & 0xFF);
        }

        private int notMapped() {
            throw new IllegalArgumentException("the perftest peer's GID " + HexFormat.ofDelimiter(":").formatHex(gid)
                    + " is not an IPv4 address (::ffff:a.b.c.d): run it with -x N, N the index of its RoCEv2 IPv4 GID");
        }

        @Override
        public String toString() {
            return String.format("lid %d out_reads %d qpn 0x%06x psn 0x%06x rkey 0x%08x vaddr 0x%016x gid %s", lid, outReads,
                    qpn, psn, rkey, vaddr, HexFormat.ofDelimiter(":").formatHex(gid));
        }
    }

    static Buffer version() {
        return Buffer.buffer(new byte[VERSION_BYTES]).setString(0, VERSION, "US-ASCII");
    }

    /** The peer's version as a number; refuses one this exchange does not fit. */
    static double version(Buffer b) {
        String text = b.getString(0, b.length(), "US-ASCII");
        int nul = text.indexOf('\0');
        String v = nul >= 0 ? text.substring(0, nul) : text;
        double d;
        try {
            d = Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("the peer on the perftest port sent no perftest version (\""
                    + v.replace('\0', '.') + "\"): is it perftest without -R?");
        }
        if (d < OLDEST) {
            throw new IllegalArgumentException("the peer runs perftest " + v + "; this side speaks perftest " + VERSION
                    + "'s exchange, which needs " + OLDEST + " or newer");
        }
        return d;
    }

    static Buffer int32(int v) {
        return Buffer.buffer(4).appendInt(v);
    }

    /** {@code ibv_mtu}'s number of a path MTU in bytes (256 is 1, 4096 is 5). */
    static int mtuNumber(int bytes) {
        return Integer.numberOfTrailingZeros(bytes) - 7;
    }

    static Buffer mtu(int bytes) {
        return Buffer.buffer(new byte[] {(byte) ('0' + mtuNumber(bytes)), 0});
    }

    /** The path MTU in bytes that the peer offers; an offer outside 256..4096 leaves ours, as perftest does. */
    static int mtu(Buffer b, int ours) {
        int n = b.getByte(0) - '0';
        return n >= 1 && n <= 5 ? Math.min(ours, 128 << n) : ours;
    }

    /** One field of ib_write_bw's report: an integer as 8 bytes. */
    static Buffer long64(long v) {
        return Buffer.buffer(8).appendLong(v);
    }

    /** One field of ib_write_bw's report: a double as 8 big-endian bytes (MB/s with MB = 2^20 bytes, or Mpps). */
    static Buffer double64(double v) {
        return Buffer.buffer(8).appendDouble(v);
    }

    static Buffer done() {
        return Buffer.buffer(new byte[] {'d', 'o', 'n', 'e', 0});
    }
}
