package dev.nupa.gateway;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A reusable flyweight view of an Ethernet II frame as a TAP device reads and writes it (IEEE 802.3
 * clause 3, no preamble, no FCS): destination and source MAC addresses, EtherType, payload. MAC
 * addresses are held as the low 48 bits of a long, most significant byte first on the wire.
 */
public final class EthernetFrame {
    public static final int HEADER = 14;
    public static final int TYPE_IPV4 = 0x0800;
    public static final int TYPE_ARP = 0x0806;
    public static final int TYPE_VLAN = 0x8100;
    public static final int TYPE_QINQ = 0x88A8;
    public static final int TYPE_IPV6 = 0x86DD;
    public static final long BROADCAST = 0xFFFF_FFFF_FFFFL;

    static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private MemorySegment seg;
    private long base;
    private int length;

    /** Points the view at a frame; false when it is shorter than the header. */
    public boolean wrap(MemorySegment seg, long offset, int length) {
        if (length < HEADER || offset < 0 || offset > seg.byteSize() - length) {
            return false;
        }
        this.seg = seg;
        this.base = offset;
        this.length = length;
        return true;
    }

    public long destination() {
        return mac(seg, base);
    }

    public long source() {
        return mac(seg, base + 6);
    }

    public int etherType() {
        return seg.get(BE_SHORT, base + 12) & 0xFFFF;
    }

    public long payloadOffset() {
        return base + HEADER;
    }

    public int payloadLength() {
        return length - HEADER;
    }

    public MemorySegment segment() {
        return seg;
    }

    /** Writes a header at {@code offset}. */
    public static void writeHeader(MemorySegment seg, long offset, long destination, long source, int etherType) {
        putMac(seg, offset, destination);
        putMac(seg, offset + 6, source);
        seg.set(BE_SHORT, offset + 12, (short) etherType);
    }

    /** The 48-bit MAC address at {@code offset}. */
    public static long mac(MemorySegment seg, long offset) {
        return ((seg.get(BE_SHORT, offset) & 0xFFFFL) << 32) | (seg.get(BE_INT, offset + 2) & 0xFFFF_FFFFL);
    }

    public static void putMac(MemorySegment seg, long offset, long mac) {
        seg.set(BE_SHORT, offset, (short) (mac >>> 32));
        seg.set(BE_INT, offset + 2, (int) mac);
    }

    /** Group addresses (broadcast and multicast) have the low bit of the first byte set (IEEE 802 48-bit addresses). */
    public static boolean isGroup(long mac) {
        return (mac & 0x0100_0000_0000L) != 0;
    }

    /** "02:4e:55:50:41:01" */
    public static String macToString(long mac) {
        StringBuilder b = new StringBuilder(17);
        for (int i = 5; i >= 0; i--) {
            int v = (int) (mac >>> (i * 8)) & 0xFF;
            b.append(Character.forDigit(v >>> 4, 16)).append(Character.forDigit(v & 0xF, 16));
            if (i > 0) {
                b.append(':');
            }
        }
        return b.toString();
    }

    /**
     * Parses "aa:bb:cc:dd:ee:ff".
     *
     * @throws IllegalArgumentException naming the text and the form wanted
     */
    public static long parseMac(String text) {
        String[] p = text.split(":");
        if (p.length != 6) {
            throw new IllegalArgumentException("MAC address \"" + text + "\" must be six hex bytes, e.g. 02:4e:55:50:41:01");
        }
        long mac = 0;
        for (String part : p) {
            if (part.length() != 2) {
                throw new IllegalArgumentException("MAC address \"" + text + "\" must be six hex bytes, e.g. 02:4e:55:50:41:01");
            }
            try {
                mac = (mac << 8) | Integer.parseInt(part, 16);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("MAC address \"" + text + "\" must be six hex bytes, e.g. 02:4e:55:50:41:01");
            }
        }
        return mac;
    }
}
