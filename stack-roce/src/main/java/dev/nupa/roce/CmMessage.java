package dev.nupa.roce;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Connection manager messages (docs/rdma.md), in the manner of the IB CM's REQ, REP, RTU, REJ,
 * DREQ and DREP (IBA 12.6, attribute ids kept), carried as UD SENDs to QP 1 with the GSI Q_Key.
 * Big-endian, 40 bytes then up to {@link #MAX_PRIVATE_DATA} bytes of private data:
 *
 * <pre>
 * 0  u16 attribute id     2  u16 private data length   4  u32 local comm id   8  u32 remote comm id
 * 12 u16 port             14 u8 responder resources   15 u8 initiator depth
 * 16 u32 QP number        20 u32 starting PSN         24 u32 path MTU          28 u32 reject reason
 * 32 u8 retry count       33 u8 RNR retry count        34 u8 local ACK timeout  35..39 zero
 * 40 private data
 * </pre>
 */
final class CmMessage {
    static final int REQ = 0x0010;
    static final int REJ = 0x0012;
    static final int REP = 0x0013;
    static final int RTU = 0x0014;
    static final int DREQ = 0x0015;
    static final int DREP = 0x0016;
    static final int HEADER = 40;
    /** As rdma_cm allows in a REQ: 92 bytes of IB CM private data less its own 36-byte header. */
    static final int MAX_PRIVATE_DATA = 56;
    /** The GSI's well-known Q_Key (IBA 13.5.2). */
    static final int GSI_QKEY = 0x80010000;
    /** IBA 12.6.7.2 reject reasons used here. */
    static final int REJECT_INVALID_SERVICE_ID = 8;
    static final int REJECT_CONSUMER = 28;

    static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private CmMessage() {
    }

    static String name(int id) {
        return switch (id) {
            case REQ -> "REQ";
            case REJ -> "REJ";
            case REP -> "REP";
            case RTU -> "RTU";
            case DREQ -> "DREQ";
            case DREP -> "DREP";
            default -> String.format("0x%04x", id);
        };
    }

    static int id(MemorySegment m, long o) { return Short.toUnsignedInt(m.get(U16, o)); }
    static int privateLength(MemorySegment m, long o) { return Short.toUnsignedInt(m.get(U16, o + 2)); }
    static int localComm(MemorySegment m, long o) { return m.get(U32, o + 4); }
    static int remoteComm(MemorySegment m, long o) { return m.get(U32, o + 8); }
    static int port(MemorySegment m, long o) { return Short.toUnsignedInt(m.get(U16, o + 12)); }
    static int responderResources(MemorySegment m, long o) { return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, o + 14)); }
    static int initiatorDepth(MemorySegment m, long o) { return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, o + 15)); }
    static int qpn(MemorySegment m, long o) { return m.get(U32, o + 16); }
    static int psn(MemorySegment m, long o) { return m.get(U32, o + 20); }
    static int mtu(MemorySegment m, long o) { return m.get(U32, o + 24); }
    static int reason(MemorySegment m, long o) { return m.get(U32, o + 28); }
    static int retryCount(MemorySegment m, long o) { return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, o + 32)); }
    static int rnrRetry(MemorySegment m, long o) { return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, o + 33)); }
    static int timeout(MemorySegment m, long o) { return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, o + 34)); }

    /** Whether {@code length} bytes at {@code o} hold a whole message. */
    static boolean valid(MemorySegment m, long o, int length) {
        return length >= HEADER && privateLength(m, o) <= MAX_PRIVATE_DATA && HEADER + privateLength(m, o) <= length;
    }

    static byte[] privateData(MemorySegment m, long o) {
        byte[] b = new byte[privateLength(m, o)];
        MemorySegment.copy(m, ValueLayout.JAVA_BYTE, o + HEADER, b, 0, b.length);
        return b;
    }

    static void write(MemorySegment m, long o, int id, int localComm, int remoteComm, int port, int qpn, int psn, int mtu,
            int resources, int depth, int retry, int rnrRetry, int timeout, int reason, byte[] privateData) {
        m.asSlice(o, HEADER).fill((byte) 0);
        m.set(U16, o, (short) id);
        m.set(U16, o + 2, (short) privateData.length);
        m.set(U32, o + 4, localComm);
        m.set(U32, o + 8, remoteComm);
        m.set(U16, o + 12, (short) port);
        m.set(ValueLayout.JAVA_BYTE, o + 14, (byte) resources);
        m.set(ValueLayout.JAVA_BYTE, o + 15, (byte) depth);
        m.set(U32, o + 16, qpn);
        m.set(U32, o + 20, psn);
        m.set(U32, o + 24, mtu);
        m.set(U32, o + 28, reason);
        m.set(ValueLayout.JAVA_BYTE, o + 32, (byte) retry);
        m.set(ValueLayout.JAVA_BYTE, o + 33, (byte) rnrRetry);
        m.set(ValueLayout.JAVA_BYTE, o + 34, (byte) timeout);
        MemorySegment.copy(privateData, 0, m, ValueLayout.JAVA_BYTE, o + HEADER, privateData.length);
    }
}
