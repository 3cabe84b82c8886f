package dev.nupa.roce.wire;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The InfiniBand communication manager's messages (IBA 12.6), as Linux's ib_cm and rdma_cm send them: 256-byte
 * management datagrams (IBA 13.4.2: 24 bytes of common header, 232 of CM data) carried as UD SENDs to QP 1 with the
 * GSI Q_Key. A flyweight of static accessors over a MAD at offset {@code o}; offsets below are within the CM data,
 * which starts at byte 24. Fields are big-endian; bit fields are numbered from the byte's most significant bit.
 *
 * <p>rdma_cm's use of it (Linux cma.c): the service ID is {@code 0x0106} (RDMA_PS_TCP) then the 16-bit port, and the
 * REQ's private data opens with a 36-byte header (version 0, IP version 4 in the high nibble, the source port, then
 * the source and destination addresses as 12 zero bytes and the IPv4 address); the rest, 56 bytes, is the
 * application's. The REP, REJ, RTU and the others carry the application's private data alone.
 */
public final class CmMad {
    public static final int LENGTH = 256;
    public static final int DATA = 24;
    public static final int BASE_VERSION = 1;
    public static final int CLASS_CM = 0x07;
    public static final int CLASS_VERSION = 2;
    public static final int METHOD_SEND = 0x03;

    public static final int REQ = 0x0010;
    public static final int MRA = 0x0011;
    public static final int REJ = 0x0012;
    public static final int REP = 0x0013;
    public static final int RTU = 0x0014;
    public static final int DREQ = 0x0015;
    public static final int DREP = 0x0016;

    /** The GSI's well-known Q_Key (IBA 13.5.2). */
    public static final int GSI_QKEY = 0x80010000;
    /** rdma_cm's port space for RC connections (RDMA_PS_TCP), the service ID's bits 31..16. */
    public static final int PS_TCP = 0x0106;
    /** rdma_cm's header at the start of a REQ's private data, and what is left for the application. */
    public static final int CMA_HEADER = 36;
    public static final int REQ_PRIVATE = 92;
    public static final int MAX_PRIVATE_DATA = REQ_PRIVATE - CMA_HEADER;
    public static final int REP_PRIVATE = 196;
    public static final int REJ_PRIVATE = 148;
    public static final int RTU_PRIVATE = 224;
    public static final int DREQ_PRIVATE = 220;

    /** IBA 12.6.7.2 reject reasons used here. */
    public static final int REJECT_NO_QP = 1;
    public static final int REJECT_STALE = 10;
    public static final int REJECT_INVALID_SERVICE_ID = 8;
    public static final int REJECT_CONSUMER = 28;
    /** The "message rejected" and "message MRAed" field: a REQ, a REP, another. */
    public static final int MSG_REQ = 0;
    public static final int MSG_REP = 1;
    public static final int MSG_OTHER = 2;
    /** The CM response timeout we announce, and the MRA service timeout: 4.096 us * 2^20, about 4.3 s (as rdma_cm). */
    public static final int CM_RESPONSE_TIMEOUT = 20;
    public static final int MAX_CM_RETRIES = 15;

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private CmMad() {
    }

    public static String name(int id) {
        return switch (id) {
            case REQ -> "REQ";
            case MRA -> "MRA";
            case REJ -> "REJ";
            case REP -> "REP";
            case RTU -> "RTU";
            case DREQ -> "DREQ";
            case DREP -> "DREP";
            default -> String.format("0x%04x", id);
        };
    }

    // ---- the common MAD header (IBA 13.4.2) ------------------------------------------------------------

    /** Whether {@code length} bytes at {@code o} hold a whole CM MAD that Linux's CM would take (base 1, class 7, version 2, Send). */
    public static boolean valid(MemorySegment m, long o, int length) {
        return length >= LENGTH && u8(m, o) == BASE_VERSION && u8(m, o + 1) == CLASS_CM && u8(m, o + 2) == CLASS_VERSION
                && u8(m, o + 3) == METHOD_SEND;
    }

    public static int attribute(MemorySegment m, long o) { return Short.toUnsignedInt(m.get(U16, o + 16)); }
    public static long tid(MemorySegment m, long o) { return m.get(U64, o + 8); }

    /** Zeroes the MAD and writes its header: a CM Send of attribute {@code id} with transaction {@code tid}. */
    public static void header(MemorySegment m, long o, int id, long tid) {
        m.asSlice(o, LENGTH).fill((byte) 0);
        m.set(ValueLayout.JAVA_BYTE, o, (byte) BASE_VERSION);
        m.set(ValueLayout.JAVA_BYTE, o + 1, (byte) CLASS_CM);
        m.set(ValueLayout.JAVA_BYTE, o + 2, (byte) CLASS_VERSION);
        m.set(ValueLayout.JAVA_BYTE, o + 3, (byte) METHOD_SEND);
        m.set(U64, o + 8, tid);
        m.set(U16, o + 16, (short) id);
    }

    // ---- fields every message opens with --------------------------------------------------------------

    public static int localComm(MemorySegment m, long o) { return m.get(U32, o + DATA); }
    public static int remoteComm(MemorySegment m, long o) { return m.get(U32, o + DATA + 4); }

    public static void comms(MemorySegment m, long o, int local, int remote) {
        m.set(U32, o + DATA, local);
        m.set(U32, o + DATA + 4, remote);
    }

    // ---- REQ (IBA 12.6.5) --------------------------------------------------------------------------------

    public static long serviceId(MemorySegment m, long o) { return m.get(U64, o + DATA + 8); }
    public static long reqCaGuid(MemorySegment m, long o) { return m.get(U64, o + DATA + 16); }
    public static int reqQpn(MemorySegment m, long o) { return m.get(U32, o + DATA + 32) >>> 8; }
    public static int reqResponderResources(MemorySegment m, long o) { return u8(m, o + DATA + 35); }
    public static int reqInitiatorDepth(MemorySegment m, long o) { return u8(m, o + DATA + 39); }
    /** Transport service type: 0 RC, 1 UC, 3 XRC. */
    public static int reqTransport(MemorySegment m, long o) { return (u8(m, o + DATA + 43) >>> 1) & 3; }
    public static int reqPsn(MemorySegment m, long o) { return m.get(U32, o + DATA + 44) >>> 8; }
    public static int reqRetryCount(MemorySegment m, long o) { return u8(m, o + DATA + 47) & 7; }
    /** Path MTU as {@code ibv_mtu}'s number (1: 256 ... 5: 4096). */
    public static int reqMtu(MemorySegment m, long o) { return u8(m, o + DATA + 50) >>> 4; }
    public static int reqRnrRetry(MemorySegment m, long o) { return u8(m, o + DATA + 50) & 7; }
    public static int reqSrq(MemorySegment m, long o) { return (u8(m, o + DATA + 51) >>> 3) & 1; }
    /** The primary path's local ACK timeout (4.096 us * 2^t): what the requester's QP waits for an ACK. */
    public static int reqAckTimeout(MemorySegment m, long o) { return u8(m, o + DATA + 95) >>> 3; }
    public static long reqPrivate(long o) { return o + DATA + 140; }

    /**
     * Writes a REQ for an RC QP (rdma_cm's choices on RoCE: permissive LIDs, GIDs mapping the IPv4 addresses, hop
     * limit 64, no alternate path), with rdma_cm's header and {@code privateData} after it.
     */
    public static void writeReq(MemorySegment m, long o, long tid, int localComm, int port, long caGuid, int qpn, int psn,
                         int resources, int depth, int retry, int rnrRetry, int mtuNumber, int ackTimeout, int localIp,
                         int peerIp, int sourcePort, byte[] privateData) {
        header(m, o, REQ, tid);
        long d = o + DATA;
        m.set(U32, d, localComm);
        m.set(U64, d + 8, ((long) PS_TCP << 16) | port);
        m.set(U64, d + 16, caGuid);
        m.set(U32, d + 32, (qpn << 8) | (resources & 0xFF));
        m.set(U32, d + 36, depth & 0xFF);
        m.set(ValueLayout.JAVA_BYTE, d + 43, (byte) (CM_RESPONSE_TIMEOUT << 3)); // remote CM response timeout, RC, no flow control
        m.set(U32, d + 44, (psn << 8) | (CM_RESPONSE_TIMEOUT << 3) | (retry & 7));
        m.set(U16, d + 48, (short) 0xFFFF);
        m.set(ValueLayout.JAVA_BYTE, d + 50, (byte) ((mtuNumber << 4) | (rnrRetry & 7)));
        m.set(ValueLayout.JAVA_BYTE, d + 51, (byte) (MAX_CM_RETRIES << 4));
        m.set(U16, d + 52, (short) 0xFFFF); // LIDs: permissive, as rdma_cm sends them beyond a subnet
        m.set(U16, d + 54, (short) 0xFFFF);
        gid(m, d + 56, localIp);
        gid(m, d + 72, peerIp);
        m.set(ValueLayout.JAVA_BYTE, d + 93, (byte) 64); // hop limit
        m.set(ValueLayout.JAVA_BYTE, d + 95, (byte) (ackTimeout << 3));
        long p = reqPrivate(o);
        m.set(ValueLayout.JAVA_BYTE, p + 1, (byte) 0x40); // cma_hdr: version 0, IPv4
        m.set(U16, p + 2, (short) sourcePort);
        m.set(U32, p + 16, localIp);
        m.set(U32, p + 32, peerIp);
        MemorySegment.copy(privateData, 0, m, ValueLayout.JAVA_BYTE, p + CMA_HEADER, privateData.length);
    }

    /** Whether a REQ's private data opens with rdma_cm's header for IPv4 (version 0). */
    public static boolean reqHasCmaHeader(MemorySegment m, long o) {
        long p = reqPrivate(o);
        return u8(m, p) == 0 && (u8(m, p + 1) >>> 4) == 4;
    }

    /** The source IPv4 address in a REQ's rdma_cm header. */
    public static int reqCmaSource(MemorySegment m, long o) { return m.get(U32, reqPrivate(o) + 16); }

    /** The destination IPv4 address in a REQ's rdma_cm header. */
    public static int reqCmaDestination(MemorySegment m, long o) { return m.get(U32, reqPrivate(o) + 32); }

    public static byte[] reqPrivateData(MemorySegment m, long o) {
        return bytes(m, reqPrivate(o) + CMA_HEADER, MAX_PRIVATE_DATA);
    }

    // ---- REP (IBA 12.6.8) --------------------------------------------------------------------------------

    public static int repQpn(MemorySegment m, long o) { return m.get(U32, o + DATA + 12) >>> 8; }
    public static int repPsn(MemorySegment m, long o) { return m.get(U32, o + DATA + 20) >>> 8; }
    public static int repResponderResources(MemorySegment m, long o) { return u8(m, o + DATA + 24); }
    public static int repInitiatorDepth(MemorySegment m, long o) { return u8(m, o + DATA + 25); }
    public static int repRnrRetry(MemorySegment m, long o) { return u8(m, o + DATA + 27) >>> 5; }
    public static long repCaGuid(MemorySegment m, long o) { return m.get(U64, o + DATA + 28); }

    public static void writeRep(MemorySegment m, long o, long tid, int localComm, int remoteComm, int qpn, int psn, int resources,
                         int depth, int ackDelay, int rnrRetry, long caGuid, byte[] privateData) {
        header(m, o, REP, tid);
        long d = o + DATA;
        comms(m, o, localComm, remoteComm);
        m.set(U32, d + 12, qpn << 8);
        m.set(U32, d + 20, psn << 8);
        m.set(ValueLayout.JAVA_BYTE, d + 24, (byte) resources);
        m.set(ValueLayout.JAVA_BYTE, d + 25, (byte) depth);
        m.set(ValueLayout.JAVA_BYTE, d + 26, (byte) (ackDelay << 3));
        m.set(ValueLayout.JAVA_BYTE, d + 27, (byte) (rnrRetry << 5));
        m.set(U64, d + 28, caGuid);
        MemorySegment.copy(privateData, 0, m, ValueLayout.JAVA_BYTE, d + 36, privateData.length);
    }

    public static byte[] repPrivateData(MemorySegment m, long o) {
        return bytes(m, o + DATA + 36, REP_PRIVATE);
    }

    // ---- RTU, REJ, MRA, DREQ, DREP (IBA 12.6.6 - 12.6.11) ----------------------------------------------------

    /** An RTU or DREP: the two communication IDs and private data. */
    public static void writeShort(MemorySegment m, long o, int id, long tid, int localComm, int remoteComm) {
        header(m, o, id, tid);
        comms(m, o, localComm, remoteComm);
    }

    public static void writeRej(MemorySegment m, long o, long tid, int localComm, int remoteComm, int rejected, int reason,
                         byte[] privateData) {
        header(m, o, REJ, tid);
        comms(m, o, localComm, remoteComm);
        m.set(ValueLayout.JAVA_BYTE, o + DATA + 8, (byte) (rejected << 6));
        m.set(U16, o + DATA + 10, (short) reason);
        MemorySegment.copy(privateData, 0, m, ValueLayout.JAVA_BYTE, o + DATA + 84, privateData.length);
    }

    public static int rejReason(MemorySegment m, long o) { return Short.toUnsignedInt(m.get(U16, o + DATA + 10)); }
    public static int rejMessage(MemorySegment m, long o) { return u8(m, o + DATA + 8) >>> 6; }

    public static void writeMra(MemorySegment m, long o, long tid, int localComm, int remoteComm, int mraed, int serviceTimeout) {
        header(m, o, MRA, tid);
        comms(m, o, localComm, remoteComm);
        m.set(ValueLayout.JAVA_BYTE, o + DATA + 8, (byte) (mraed << 6));
        m.set(ValueLayout.JAVA_BYTE, o + DATA + 9, (byte) (serviceTimeout << 3));
    }

    /** The service timeout an MRA asks for (4.096 us * 2^t). */
    public static int mraTimeout(MemorySegment m, long o) { return u8(m, o + DATA + 9) >>> 3; }

    /** A DREQ names the QP it disconnects, the receiver's (Linux drops one that names another). */
    public static void writeDreq(MemorySegment m, long o, long tid, int localComm, int remoteComm, int remoteQpn) {
        header(m, o, DREQ, tid);
        comms(m, o, localComm, remoteComm);
        m.set(U32, o + DATA + 8, remoteQpn << 8);
    }

    public static int dreqQpn(MemorySegment m, long o) { return m.get(U32, o + DATA + 8) >>> 8; }

    /** Nanoseconds of a CM time value (a 5-bit field): 4.096 us * 2^t (IBA 12.7.5). */
    public static long timeoutNs(int t) {
        return 4096L << Math.min(t, 31);
    }

    // ---- helpers -------------------------------------------------------------------------------------------

    private static void gid(MemorySegment m, long at, int ip) {
        if (ip != 0) {
            m.set(U16, at + 10, (short) 0xFFFF);
            m.set(U32, at + 12, ip);
        }
    }

    private static int u8(MemorySegment m, long at) {
        return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, at));
    }

    private static byte[] bytes(MemorySegment m, long at, int n) {
        byte[] b = new byte[n];
        MemorySegment.copy(m, ValueLayout.JAVA_BYTE, at, b, 0, n);
        return b;
    }
}
