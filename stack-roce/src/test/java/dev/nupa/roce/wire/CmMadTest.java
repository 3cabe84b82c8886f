package dev.nupa.roce.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The CM's MADs byte for byte where Linux reads them (IBA 12.6; Linux's ibta_vol1_c12.h and cma.c): a REQ as
 * rping's rdma_connect sends one (its bytes 43, 47, 50, 51, 95 and the rdma_cm header), and the fields of REP, REJ,
 * MRA and DREQ at their offsets.
 */
class CmMadTest {
    private static final int CLIENT = 0xC0A84D0A; // 192.168.77.10
    private static final int SERVER = 0x0A000003; // 10.0.0.3

    private static int u8(MemorySegment m, long at) {
        return Byte.toUnsignedInt(m.get(ValueLayout.JAVA_BYTE, at));
    }

    @Test
    void aReqCarriesWhatLinuxsCmAndRdmaCmRead() {
        MemorySegment m = Arena.ofAuto().allocate(CmMad.LENGTH);
        byte[] user = {1, 2, 3};
        CmMad.writeReq(m, 0, 0x1122334455667788L, 0xCAFE0001, 7174, 0x0200000000000042L, 0x11, 0xABCDEF, 1, 1, 7, 7, 3, 19,
                CLIENT, SERVER, 0xC011, user);
        assertEquals("0107020300000000", HexFormat.of().formatHex(m.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE)),
                "base version 1, class CM, class version 2, Send");
        assertEquals(0x1122334455667788L, CmMad.tid(m, 0));
        assertEquals(CmMad.REQ, CmMad.attribute(m, 0));
        long d = CmMad.DATA;
        assertEquals(0x0000000001061C06L, m.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), d + 8),
                "service ID: RDMA_PS_TCP and the port (rping's 7174)");
        assertEquals(0x11, CmMad.reqQpn(m, 0));
        assertEquals(1, u8(m, d + 35), "responder resources");
        assertEquals(1, u8(m, d + 39), "initiator depth");
        assertEquals(0xA0, u8(m, d + 43), "remote CM response timeout 20, RC, no end-to-end flow control");
        assertEquals(0xABCDEF, CmMad.reqPsn(m, 0));
        assertEquals(0xA7, u8(m, d + 47), "local CM response timeout 20, retry count 7");
        assertEquals(0xFFFF, Short.toUnsignedInt(m.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), d + 48)));
        assertEquals(0x37, u8(m, d + 50), "path MTU 1024, RNR retry 7");
        assertEquals(0xF0, u8(m, d + 51), "max CM retries 15");
        assertEquals(0xFF, u8(m, d + 52), "permissive LIDs");
        assertEquals("00000000000000000000ffffc0a84d0a", HexFormat.of().formatHex(m.asSlice(d + 56, 16).toArray(ValueLayout.JAVA_BYTE)),
                "primary local GID: the sender's IPv4 address, mapped");
        assertEquals("00000000000000000000ffff0a000003", HexFormat.of().formatHex(m.asSlice(d + 72, 16).toArray(ValueLayout.JAVA_BYTE)));
        assertEquals(64, u8(m, d + 93), "hop limit");
        assertEquals(0x98, u8(m, d + 95), "local ACK timeout 19");
        assertEquals(-1, m.asSlice(d + 96, 44).mismatch(MemorySegment.ofArray(new byte[44])), "no alternate path");
        long p = d + 140;
        assertEquals(0x00, u8(m, p), "cma_hdr version");
        assertEquals(0x40, u8(m, p + 1), "cma_hdr IPv4");
        assertEquals(0xC011, Short.toUnsignedInt(m.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), p + 2)));
        assertTrue(CmMad.reqHasCmaHeader(m, 0));
        assertEquals(CLIENT, CmMad.reqCmaSource(m, 0));
        assertEquals(SERVER, CmMad.reqCmaDestination(m, 0));
        byte[] pd = CmMad.reqPrivateData(m, 0);
        assertEquals(56, pd.length);
        assertArrayEquals(user, java.util.Arrays.copyOf(pd, 3));
        assertEquals(3, CmMad.reqMtu(m, 0));
        assertEquals(19, CmMad.reqAckTimeout(m, 0));
        assertTrue(CmMad.valid(m, 0, CmMad.LENGTH));
        assertFalse(CmMad.valid(m, 0, CmMad.LENGTH - 1), "a MAD is 256 bytes");
        m.set(ValueLayout.JAVA_BYTE, 2, (byte) 1);
        assertFalse(CmMad.valid(m, 0, CmMad.LENGTH), "class version 1 is not the CM Linux registers");
    }

    @Test
    void repRejMraAndDreqFields() {
        MemorySegment m = Arena.ofAuto().allocate(CmMad.LENGTH);
        CmMad.writeRep(m, 0, 5, 0x10, 0x20, 0x123456, 0x654321, 4, 1, 14, 7, 0x0200000000000001L, new byte[] {9});
        long d = CmMad.DATA;
        assertEquals(0x10, CmMad.localComm(m, 0));
        assertEquals(0x20, CmMad.remoteComm(m, 0));
        assertEquals(0x123456, CmMad.repQpn(m, 0));
        assertEquals(0x654321, CmMad.repPsn(m, 0));
        assertEquals(4, CmMad.repResponderResources(m, 0));
        assertEquals(1, CmMad.repInitiatorDepth(m, 0));
        assertEquals(14 << 3, u8(m, d + 26), "target ACK delay");
        assertEquals(7, CmMad.repRnrRetry(m, 0));
        assertEquals(0x0200000000000001L, CmMad.repCaGuid(m, 0));
        assertEquals(9, CmMad.repPrivateData(m, 0)[0]);
        assertEquals(196, CmMad.repPrivateData(m, 0).length);

        CmMad.writeRej(m, 0, 5, 0, 0x20, CmMad.MSG_REQ, CmMad.REJECT_INVALID_SERVICE_ID, new byte[0]);
        assertEquals(CmMad.REJ, CmMad.attribute(m, 0));
        assertEquals(8, CmMad.rejReason(m, 0));
        assertEquals(CmMad.MSG_REQ, CmMad.rejMessage(m, 0));

        CmMad.writeMra(m, 0, 5, 0x10, 0x20, CmMad.MSG_REP, 24);
        assertEquals(0x40, u8(m, d + 8), "MRAed: the REP");
        assertEquals(24, CmMad.mraTimeout(m, 0));
        assertEquals(4096L << 24, CmMad.timeoutNs(24), "4.096 us * 2^24, about 68.7 s");

        CmMad.writeDreq(m, 0, 6, 0x10, 0x20, 0xABCDEF);
        assertEquals(0xABCDEF, CmMad.dreqQpn(m, 0), "a DREQ names the receiver's QP");
        assertEquals(6, CmMad.tid(m, 0));
    }
}
