package dev.nupa.gateway;

import static dev.nupa.gateway.EthernetFrame.BE_INT;
import static dev.nupa.gateway.EthernetFrame.BE_SHORT;

import java.lang.foreign.MemorySegment;

/**
 * A reusable flyweight view of an ARP packet for IPv4 over Ethernet (RFC 826), 28 bytes:
 *
 * <pre>
 * | hardware type 1 | protocol type 0x0800 | hlen 6 | plen 4 | operation |
 * | sender MAC (6) | sender IPv4 (4) | target MAC (6) | target IPv4 (4) |
 * </pre>
 */
public final class ArpPacket {
    public static final int LENGTH = 28;
    public static final int REQUEST = 1;
    public static final int REPLY = 2;

    private MemorySegment seg;
    private long base;

    /** Points the view at a packet; false unless it is 28 bytes or more of Ethernet/IPv4 ARP (other kinds are not ours). */
    public boolean wrap(MemorySegment seg, long offset, int length) {
        if (length < LENGTH || offset < 0 || offset > seg.byteSize() - LENGTH) {
            return false;
        }
        this.seg = seg;
        this.base = offset;
        return (seg.get(BE_SHORT, offset) & 0xFFFF) == 1 && (seg.get(BE_SHORT, offset + 2) & 0xFFFF) == EthernetFrame.TYPE_IPV4
                && seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + 4) == 6
                && seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + 5) == 4;
    }

    public int operation() {
        return seg.get(BE_SHORT, base + 6) & 0xFFFF;
    }

    public long senderMac() {
        return EthernetFrame.mac(seg, base + 8);
    }

    public int senderIp() {
        return seg.get(BE_INT, base + 14);
    }

    public long targetMac() {
        return EthernetFrame.mac(seg, base + 18);
    }

    public int targetIp() {
        return seg.get(BE_INT, base + 24);
    }

    /** Writes a whole packet at {@code offset}. */
    public static void write(MemorySegment seg, long offset, int operation, long senderMac, int senderIp, long targetMac,
                             int targetIp) {
        seg.set(BE_SHORT, offset, (short) 1);
        seg.set(BE_SHORT, offset + 2, (short) EthernetFrame.TYPE_IPV4);
        seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + 4, (byte) 6);
        seg.set(java.lang.foreign.ValueLayout.JAVA_BYTE, offset + 5, (byte) 4);
        seg.set(BE_SHORT, offset + 6, (short) operation);
        EthernetFrame.putMac(seg, offset + 8, senderMac);
        seg.set(BE_INT, offset + 14, senderIp);
        EthernetFrame.putMac(seg, offset + 18, targetMac);
        seg.set(BE_INT, offset + 24, targetIp);
    }
}
