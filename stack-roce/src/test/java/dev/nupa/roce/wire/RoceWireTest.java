package dev.nupa.roce.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The wire types against byte arrays written from the field layouts of IBA vol 1 9.2 (BTH) and
 * 9.3 (extension headers), every opcode's header sequence, and each status of {@link RocePacket#wrap}.
 */
class RoceWireTest {
    private final RocePacket p = new RocePacket();

    static byte[] hex(String s) {
        return HexFormat.of().parseHex(s.replace(" ", ""));
    }

    static MemorySegment seg(byte[] b) {
        return MemorySegment.ofArray(b);
    }

    // ---- BTH ----------------------------------------------------------------------------------

    static final String BTH_BYTES = "0a" // OpCode: RC RDMA WRITE ONLY
            + "b0" // SE 1, M 0, PadCnt 3, TVer 0: 1 0 11 0000
            + "8001" // P_Key 0x8001
            + "c0" // FECN 1, BECN 1, reserved 0
            + "abcdef" // DestQP 0xabcdef
            + "80" // AckReq 1, reserved 0
            + "123456"; // PSN 0x123456

    @Test
    void bthFieldsReadFromTheSpecLayout() {
        MemorySegment s = seg(hex("ff" + BTH_BYTES)); // one junk byte first: offsets are relative
        assertEquals(Opcode.RC_RDMA_WRITE_ONLY, Bth.opcode(s, 1));
        assertTrue(Bth.solicited(s, 1));
        assertFalse(Bth.migReq(s, 1));
        assertEquals(3, Bth.padCount(s, 1));
        assertEquals(0, Bth.tver(s, 1));
        assertEquals(0x8001, Bth.pkey(s, 1));
        assertTrue(Bth.fecn(s, 1));
        assertTrue(Bth.becn(s, 1));
        assertEquals(0xABCDEF, Bth.destQp(s, 1));
        assertTrue(Bth.ackReq(s, 1));
        assertEquals(0x123456, Bth.psn(s, 1));
        assertEquals(new BthRepr(0x0A, true, false, 3, 0x8001, true, true, 0xABCDEF, true, 0x123456), BthRepr.parse(s, 1));
    }

    @Test
    void bthWriteClearsMigReqTverAndReservedBits() {
        byte[] b = new byte[12];
        Arrays.fill(b, (byte) 0xFF);
        Bth.write(seg(b), 0, Opcode.RC_RDMA_WRITE_ONLY, true, 3, 0x8001, 0xABCDEF, true, 0x123456);
        assertArrayEquals(hex("0a b0 8001 00 abcdef 80 123456"), b, "FECN/BECN are not set by write");
        Bth.write(seg(b), 0, Opcode.RC_ACKNOWLEDGE, false, 0, Bth.DEFAULT_PKEY, 1, false, 0xFFFFFF);
        assertArrayEquals(hex("11 00 ffff 00 000001 00 ffffff"), b);
    }

    @Test
    void bthReprEmitsEveryBitAndParsesBack() {
        BthRepr r = new BthRepr(0x0A, true, true, 3, 0x8001, true, true, 0xABCDEF, true, 0x123456);
        byte[] b = new byte[13];
        r.emitInto(seg(b), 1);
        assertArrayEquals(hex("00 0a f0 8001 c0 abcdef 80 123456"), b, "SE|M|PadCnt 3 = f0");
        assertEquals(r, BthRepr.parse(seg(b), 1));
        assertEquals(12, r.length());
        BthRepr common = new BthRepr(Opcode.RC_SEND_ONLY, false, 1, Bth.DEFAULT_PKEY, 7, true, 9);
        assertEquals(new BthRepr(4, false, false, 1, 0xFFFF, false, false, 7, true, 9), common);
    }

    @Test
    void bthReprValidatesItsFields() {
        assertThrows(IllegalArgumentException.class, () -> new BthRepr(256, false, 0, 0, 0, false, 0));
        assertThrows(IllegalArgumentException.class, () -> new BthRepr(0, false, 4, 0, 0, false, 0));
        assertThrows(IllegalArgumentException.class, () -> new BthRepr(0, false, 0, 0x10000, 0, false, 0));
        assertThrows(IllegalArgumentException.class, () -> new BthRepr(0, false, 0, 0, 0x1000000, false, 0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BthRepr(0, false, 0, 0, 0, false, -1));
        assertTrue(e.getMessage().contains("PSN"), e.getMessage());
        byte[] v1 = hex(BTH_BYTES);
        v1[1] |= 1; // TVer 1
        assertThrows(IllegalArgumentException.class, () -> BthRepr.parse(seg(v1), 0));
    }

    // ---- extension headers --------------------------------------------------------------------

    @Test
    void rethVaRkeyAndDmaLength() {
        byte[] b = hex("0123456789abcdef" // Virtual Address
                + "deadbeef" // R_Key
                + "80000000"); // DMA Length 2^31, the largest message
        MemorySegment s = seg(b);
        assertEquals(0x0123456789ABCDEFL, Reth.va(s, 0));
        assertEquals(0xDEADBEEF, Reth.rkey(s, 0));
        assertEquals(0x80000000, Reth.dmaLength(s, 0));
        RethRepr r = RethRepr.parse(s, 0);
        assertEquals(new RethRepr(0x0123456789ABCDEFL, 0xDEADBEEF, 0x80000000), r);
        byte[] out = new byte[16];
        r.emitInto(seg(out), 0);
        assertArrayEquals(b, out);
        Reth.write(seg(out), 0, -1L, 1, 2);
        assertArrayEquals(hex("ffffffffffffffff 00000001 00000002"), out);
        assertThrows(IllegalArgumentException.class, () -> new RethRepr(0, 0, 0x80000001));
        assertThrows(IllegalArgumentException.class, () -> new RethRepr(0, 0, -1));
    }

    @Test
    void aethSyndromeLayoutAndBuilders() {
        byte[] b = hex("62" // Syndrome: reserved 0, type 11 (NAK), value 00010 (remote access error)
                + "00beef"); // MSN
        MemorySegment s = seg(b);
        assertEquals(0x62, Aeth.syndrome(s, 0));
        assertEquals(0xBEEF, Aeth.msn(s, 0));
        assertEquals(Aeth.TYPE_NAK, Aeth.type(0x62));
        assertEquals(Aeth.NAK_REMOTE_ACCESS_ERROR, Aeth.value(0x62));
        assertEquals(0x62, Aeth.nak(Aeth.NAK_REMOTE_ACCESS_ERROR));
        assertEquals(0x60, Aeth.nak(Aeth.NAK_PSN_SEQUENCE_ERROR));
        assertEquals(0x61, Aeth.nak(Aeth.NAK_INVALID_REQUEST));
        assertEquals(0x63, Aeth.nak(Aeth.NAK_REMOTE_OPERATIONAL_ERROR));
        assertEquals(0x64, Aeth.nak(Aeth.NAK_INVALID_RD_REQUEST));
        assertEquals(0x1F, Aeth.ack(Aeth.CREDITS_INVALID), "type 00, credits 11111");
        assertEquals(0x00, Aeth.ack(0));
        assertEquals(0x2E, Aeth.rnrNak(14), "type 01, timer 01110");
        assertEquals(Aeth.TYPE_RNR_NAK, Aeth.type(0x2E));
        assertEquals(14, Aeth.value(0x2E));
        assertEquals(Aeth.TYPE_ACK, Aeth.type(0x9F), "bit 7 is reserved and ignored");
        AethRepr r = AethRepr.parse(s, 0);
        assertEquals(new AethRepr(0x62, 0xBEEF), r);
        assertEquals(Aeth.TYPE_NAK, r.type());
        assertEquals(2, r.value());
        byte[] out = new byte[4];
        r.emitInto(seg(out), 0);
        assertArrayEquals(b, out);
        Aeth.write(seg(out), 0, Aeth.ack(5), 0xFFFFFF);
        assertArrayEquals(hex("05 ffffff"), out);
        assertThrows(IllegalArgumentException.class, () -> new AethRepr(0x80, 0), "reserved bit 7");
        assertThrows(IllegalArgumentException.class, () -> new AethRepr(0x40, 0), "reserved type 2");
        assertThrows(IllegalArgumentException.class, () -> new AethRepr(0, 0x1000000));
    }

    @Test
    void atomicEthAndAtomicAckEth() {
        byte[] b = hex("0000000100002000" // Virtual Address (8-byte aligned)
                + "00c0ffee" // R_Key
                + "1111111122222222" // Swap (or Add) Data
                + "3333333344444444"); // Compare Data
        MemorySegment s = seg(b);
        assertEquals(0x100002000L, AtomicEth.va(s, 0));
        assertEquals(0xC0FFEE, AtomicEth.rkey(s, 0));
        assertEquals(0x1111111122222222L, AtomicEth.swapAdd(s, 0));
        assertEquals(0x3333333344444444L, AtomicEth.compare(s, 0));
        AtomicEthRepr r = AtomicEthRepr.parse(s, 0);
        byte[] out = new byte[28];
        r.emitInto(seg(out), 0);
        assertArrayEquals(b, out);
        assertEquals(28, r.length());
        assertThrows(IllegalArgumentException.class, () -> new AtomicEthRepr(0x1004, 0, 0, 0), "misaligned VA");

        byte[] ack = hex("fedcba9876543210"); // Original Remote Data
        assertEquals(0xFEDCBA9876543210L, AtomicAckEth.originalData(seg(ack), 0));
        byte[] out2 = new byte[8];
        AtomicAckEthRepr.parse(seg(ack), 0).emitInto(seg(out2), 0);
        assertArrayEquals(ack, out2);
    }

    @Test
    void dethAndImmDt() {
        byte[] b = hex("80010000" // Q_Key (high bit set: a controlled Q_Key)
                + "ff" // reserved: ignored on read, 0 on write
                + "000102"); // SrcQP
        MemorySegment s = seg(b);
        assertEquals(0x80010000, Deth.qkey(s, 0));
        assertEquals(0x000102, Deth.srcQp(s, 0));
        DethRepr r = DethRepr.parse(s, 0);
        assertEquals(new DethRepr(0x80010000, 0x102), r);
        byte[] out = new byte[8];
        r.emitInto(seg(out), 0);
        assertArrayEquals(hex("80010000 00 000102"), out);
        assertThrows(IllegalArgumentException.class, () -> new DethRepr(0, 0x1000000));

        byte[] imm = hex("cafebabe");
        assertEquals(0xCAFEBABE, ImmDt.get(seg(imm), 0));
        ImmDt.write(seg(imm), 0, 0x01020304);
        assertArrayEquals(hex("01020304"), imm);
    }

    // ---- opcodes ------------------------------------------------------------------------------

    /** Header sequences after the BTH, written from IBA vol 1 9.2/9.3 (and rxe_opcode.c's table). */
    static final Map<Integer, List<String>> LAYOUT = Map.ofEntries(
            Map.entry(0x00, List.of("payload")),
            Map.entry(0x01, List.of("payload")),
            Map.entry(0x02, List.of("payload")),
            Map.entry(0x03, List.of("ImmDt", "payload")),
            Map.entry(0x04, List.of("payload")),
            Map.entry(0x05, List.of("ImmDt", "payload")),
            Map.entry(0x06, List.of("RETH", "payload")),
            Map.entry(0x07, List.of("payload")),
            Map.entry(0x08, List.of("payload")),
            Map.entry(0x09, List.of("ImmDt", "payload")),
            Map.entry(0x0A, List.of("RETH", "payload")),
            Map.entry(0x0B, List.of("RETH", "ImmDt", "payload")),
            Map.entry(0x0C, List.of("RETH")),
            Map.entry(0x0D, List.of("AETH", "payload")),
            Map.entry(0x0E, List.of("payload")),
            Map.entry(0x0F, List.of("AETH", "payload")),
            Map.entry(0x10, List.of("AETH", "payload")),
            Map.entry(0x11, List.of("AETH")),
            Map.entry(0x12, List.of("AETH", "AtomicAckETH")),
            Map.entry(0x13, List.of("AtomicETH")),
            Map.entry(0x14, List.of("AtomicETH")),
            Map.entry(0x16, List.of("IETH", "payload")),
            Map.entry(0x17, List.of("IETH", "payload")),
            Map.entry(0x64, List.of("DETH", "payload")),
            Map.entry(0x65, List.of("DETH", "ImmDt", "payload")));

    static final Map<String, Integer> SIZE = Map.of("DETH", 8, "RETH", 16, "AtomicETH", 28, "AETH", 4,
            "AtomicAckETH", 8, "ImmDt", 4, "IETH", 4, "payload", 0);

    long offsetOf(String header) {
        return switch (header) {
            case "DETH" -> p.deth();
            case "RETH" -> p.reth();
            case "AtomicETH" -> p.atomicEth();
            case "AETH" -> p.aeth();
            case "AtomicAckETH" -> p.atomicAckEth();
            case "ImmDt" -> p.immDt();
            case "IETH" -> p.ieth();
            default -> p.payload();
        };
    }

    @Test
    void everyOpcodeHasItsHeadersInSpecOrder() {
        for (int op = 0; op < 256; op++) {
            List<String> layout = LAYOUT.get(op);
            if (layout == null) {
                assertEquals(0, Opcode.flags(op), Opcode.name(op));
                assertEquals(0, Opcode.extLength(op));
                continue;
            }
            int ext = layout.stream().mapToInt(SIZE::get).sum();
            assertEquals(ext, Opcode.extLength(op), Opcode.name(op));
            assertEquals(12 + ext, Opcode.headerLength(op));
            boolean payload = layout.contains("payload");
            assertEquals(payload, (Opcode.flags(op) & Opcode.PAYLOAD) != 0, Opcode.name(op));
            // At offset 5 of a segment, with 8 payload bytes and pad 2 where a payload is allowed.
            int extra = payload ? 10 : 0;
            byte[] b = new byte[5 + 12 + ext + extra + 3];
            Bth.write(seg(b), 5, op, false, payload ? 2 : 0, Bth.DEFAULT_PKEY, 1, false, 2);
            assertEquals(RocePacket.OK, p.wrap(seg(b), 5, 12 + ext + extra), Opcode.name(op));
            assertEquals(op, p.opcode());
            assertEquals(Opcode.flags(op), p.flags());
            assertEquals(5, p.bth());
            long at = 5 + 12;
            for (String h : layout) {
                assertEquals(at, offsetOf(h), Opcode.name(op) + " " + h);
                at += SIZE.get(h);
            }
            for (String h : List.of("DETH", "RETH", "AtomicETH", "AETH", "AtomicAckETH", "ImmDt", "IETH")) {
                if (!layout.contains(h)) {
                    assertEquals(-1, offsetOf(h), Opcode.name(op) + " has no " + h);
                }
            }
            assertEquals(5 + 12 + ext, p.payload());
            assertEquals(payload ? 8 : 0, p.payloadLength());
        }
    }

    @Test
    void opcodeFlagsNamesAndRoles() {
        int one = Opcode.FIRST | Opcode.LAST;
        assertEquals(Opcode.FIRST, Opcode.flags(Opcode.RC_SEND_FIRST) & (one | Opcode.MIDDLE));
        assertEquals(Opcode.MIDDLE, Opcode.flags(Opcode.RC_RDMA_WRITE_MIDDLE) & (one | Opcode.MIDDLE));
        assertEquals(Opcode.LAST, Opcode.flags(Opcode.RC_RDMA_READ_RESPONSE_LAST) & (one | Opcode.MIDDLE));
        for (int op : new int[] {0x04, 0x05, 0x0A, 0x0B, 0x0C, 0x10, 0x11, 0x12, 0x13, 0x14, 0x64, 0x65}) {
            assertEquals(one, Opcode.flags(op) & (one | Opcode.MIDDLE), Opcode.name(op) + " is a single packet");
        }
        for (int op = 0; op <= 0x0C; op++) {
            assertEquals(Opcode.REQUEST, Opcode.flags(op) & (Opcode.REQUEST | Opcode.RESPONSE), Opcode.name(op));
        }
        for (int op = 0x0D; op <= 0x12; op++) {
            assertEquals(Opcode.RESPONSE, Opcode.flags(op) & (Opcode.REQUEST | Opcode.RESPONSE), Opcode.name(op));
        }
        assertTrue((Opcode.flags(Opcode.RC_COMPARE_SWAP) & Opcode.REQUEST) != 0);
        assertTrue((Opcode.flags(Opcode.UD_SEND_ONLY) & Opcode.REQUEST) != 0);
        assertEquals("RC_RDMA_WRITE_FIRST", Opcode.name(0x06));
        assertEquals("UD_SEND_ONLY_WITH_IMMEDIATE", Opcode.name(0x65));
        assertEquals("0x2a", Opcode.name(0x2A), "UC RDMA write only: not carried");
        assertEquals("0x81", Opcode.name(0x81), "CNP");
        assertEquals(Opcode.LAST, Opcode.flags(Opcode.RC_SEND_LAST_WITH_INVALIDATE) & (one | Opcode.MIDDLE));
        assertEquals(one, Opcode.flags(Opcode.RC_SEND_ONLY_WITH_INVALIDATE) & (one | Opcode.MIDDLE));
        assertEquals("RC_SEND_ONLY_WITH_INVALIDATE", Opcode.name(0x17));
        assertEquals(0, Opcode.flags(0x15), "RC RDMA_READ_RESPONSE... reserved 0x15 is not carried");
        assertEquals(0, Opcode.flags(-1));
        assertEquals(0, Opcode.flags(0x100));
        assertEquals(0, Opcode.extLength(1 << 20));
        assertFalse(Opcode.supported(0x24));
        assertTrue(Opcode.supported(Opcode.RC_FETCH_ADD));
    }

    // ---- whole packets, byte by byte ----------------------------------------------------------

    @Test
    void sendOnlyWithInvalidateCarriesTheRkeyInItsIeth() {
        byte[] b = hex("17" // BTH: RC_SEND_ONLY_WITH_INVALIDATE
                + "30" // PadCnt 3
                + "ffff 00 000011 80 000100" // P_Key, resv, DestQP 0x11, AckReq, PSN 0x100
                + "00012a07" // IETH: R_Key 0x12a07 (window index 0x12a, key byte 7)
                + "6869 21 000000"); // "hi!" and 3 pad bytes
        assertEquals(RocePacket.OK, p.wrap(seg(b), 0, b.length));
        assertEquals(Opcode.RC_SEND_ONLY_WITH_INVALIDATE, p.opcode());
        assertEquals(12, p.ieth());
        assertEquals(0x12a07, Ieth.rkey(p.segment(), p.ieth()));
        assertEquals(new IethRepr(0x12a07), IethRepr.parse(p.segment(), p.ieth()));
        assertEquals(-1, p.immDt());
        assertEquals(16, p.payload());
        assertEquals(3, p.payloadLength());
        assertTrue(p.has(Opcode.IETH) && !p.has(Opcode.IMMDT));

        byte[] out = new byte[b.length];
        new BthRepr(0x17, false, 3, 0xFFFF, 0x11, true, 0x100).emitInto(seg(out), 0);
        new IethRepr(0x12a07).emitInto(seg(out), 12);
        System.arraycopy(b, 16, out, 16, 6);
        assertArrayEquals(b, out);
        assertEquals(4, new IethRepr(1).length());

        // Cut inside the IETH: refused, and the view describes no packet.
        for (int n = 12; n < 16; n++) {
            assertEquals(RocePacket.TRUNCATED, p.wrap(seg(b), 0, n), n + " bytes");
            assertEquals(-1, p.ieth());
        }
        b[0] = 0x16; // SEND_LAST_WITH_INVALIDATE: the same layout
        assertEquals(RocePacket.OK, p.wrap(seg(b), 0, b.length));
        assertEquals(12, p.ieth());
    }

    @Test
    void rdmaWriteOnlyWithImmediate() {
        byte[] b = hex("0b" // BTH: RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE
                + "a0" // SE, PadCnt 2
                + "ffff 00 000011 80 000100" // P_Key, resv, DestQP 0x11, AckReq, PSN 0x100
                + "0000000000001000 12345678 00000006" // RETH: VA 0x1000, R_Key, DMA length 6
                + "0000002a" // ImmDt 42
                + "68656c6c6f21 0000"); // "hello!" and 2 pad bytes
        assertEquals(RocePacket.OK, p.wrap(seg(b), 0, b.length));
        assertEquals(Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, p.opcode());
        assertEquals(12, p.reth());
        assertEquals(0x1000, Reth.va(p.segment(), p.reth()));
        assertEquals(0x12345678, Reth.rkey(p.segment(), p.reth()));
        assertEquals(6, Reth.dmaLength(p.segment(), p.reth()));
        assertEquals(28, p.immDt());
        assertEquals(42, ImmDt.get(p.segment(), p.immDt()));
        assertEquals(32, p.payload());
        assertEquals(6, p.payloadLength());
        assertEquals(2, p.padCount());
        assertEquals(0x11, p.destQp());
        assertEquals(0x100, p.psn());
        assertEquals("hello!", new String(b, (int) p.payload(), p.payloadLength()));
        assertTrue(p.has(Opcode.RETH) && p.has(Opcode.IMMDT) && !p.has(Opcode.AETH));

        byte[] out = new byte[b.length];
        new BthRepr(0x0B, true, 2, 0xFFFF, 0x11, true, 0x100).emitInto(seg(out), 0);
        new RethRepr(0x1000, 0x12345678, 6).emitInto(seg(out), 12);
        ImmDt.write(seg(out), 28, 42);
        System.arraycopy(b, 32, out, 32, 8);
        assertArrayEquals(b, out);
    }

    @Test
    void atomicAcknowledgeAndReadResponses() {
        byte[] atomicAck = hex("12 00 ffff 00 000007 00 000005" // BTH: RC_ATOMIC_ACKNOWLEDGE, DestQP 7, PSN 5
                + "1f 000003" // AETH: ACK, credits invalid, MSN 3
                + "00000000000000ff"); // AtomicAckETH: original data 255
        assertEquals(RocePacket.OK, p.wrap(seg(atomicAck), 0, atomicAck.length));
        assertEquals(12, p.aeth());
        assertEquals(16, p.atomicAckEth());
        assertEquals(255, AtomicAckEth.originalData(p.segment(), p.atomicAckEth()));
        assertEquals(new AethRepr(Aeth.ack(Aeth.CREDITS_INVALID), 3), AethRepr.parse(p.segment(), p.aeth()));
        assertEquals(0, p.payloadLength());

        byte[] first = hex("0d 00 ffff 00 000007 00 000006" // BTH: RC_RDMA_READ_RESPONSE_FIRST
                + "00 000004" // AETH: ACK, 0 credits, MSN 4
                + "0102030405060708"); // payload
        assertEquals(RocePacket.OK, p.wrap(seg(first), 0, first.length));
        assertEquals(12, p.aeth());
        assertEquals(16, p.payload());
        assertEquals(8, p.payloadLength());

        byte[] middle = hex("0e 00 ffff 00 000007 00 000007" // BTH: RC_RDMA_READ_RESPONSE_MIDDLE: no AETH
                + "0102030405060708");
        assertEquals(RocePacket.OK, p.wrap(seg(middle), 0, middle.length));
        assertEquals(-1, p.aeth());
        assertEquals(12, p.payload());
    }

    @Test
    void udSendOnlyWithImmediateAndCompareSwap() {
        byte[] ud = hex("65 10 ffff 00 000001 00 000000" // BTH: UD_SEND_ONLY_WITH_IMMEDIATE, PadCnt 1, DestQP 1
                + "11111111 00 000abc" // DETH: Q_Key, SrcQP 0xabc
                + "deadbeef" // ImmDt
                + "414243 00"); // "ABC" and 1 pad byte
        assertEquals(RocePacket.OK, p.wrap(seg(ud), 0, ud.length));
        assertEquals(12, p.deth());
        assertEquals(0x11111111, Deth.qkey(p.segment(), p.deth()));
        assertEquals(0xABC, Deth.srcQp(p.segment(), p.deth()));
        assertEquals(20, p.immDt());
        assertEquals(0xDEADBEEF, ImmDt.get(p.segment(), p.immDt()));
        assertEquals(24, p.payload());
        assertEquals(3, p.payloadLength());

        byte[] cas = hex("13 00 ffff 00 000002 80 000009" // BTH: RC_COMPARE_SWAP, AckReq
                + "0000000000000008 00000010 0000000000000002 0000000000000001"); // AtomicETH
        assertEquals(RocePacket.OK, p.wrap(seg(cas), 0, cas.length));
        assertEquals(12, p.atomicEth());
        assertEquals(new AtomicEthRepr(8, 0x10, 2, 1), AtomicEthRepr.parse(p.segment(), p.atomicEth()));
    }

    @Test
    void zeroLengthWriteAndSendAreLegal() {
        byte[] write = hex("0a 00 ffff 00 000001 00 000000 0000000000000000 00000000 00000000");
        assertEquals(RocePacket.OK, p.wrap(seg(write), 0, write.length));
        assertEquals(0, p.payloadLength());
        assertEquals(28, p.payload());
        byte[] send = hex("04 00 ffff 00 000001 00 000000");
        assertEquals(RocePacket.OK, p.wrap(seg(send), 0, send.length));
        assertEquals(0, p.payloadLength());
    }

    // ---- statuses -----------------------------------------------------------------------------

    @Test
    void truncatedRangesAndShortPackets() {
        byte[] ack = hex("11 00 ffff 00 000001 00 000001 00 000001");
        MemorySegment s = seg(ack);
        assertEquals(RocePacket.OK, p.wrap(s, 0, 16));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 0, 15), "AETH cut short");
        assertEquals(-1, p.aeth(), "a failed wrap leaves no offsets");
        assertEquals(-1, p.opcode());
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 0, 11), "BTH cut short");
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 0, 17), "beyond the segment");
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 1, 16));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, -1, 12));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, Long.MAX_VALUE, 12));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, Long.MIN_VALUE, 12));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 0, -1));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 0, Integer.MIN_VALUE));
        assertEquals(RocePacket.TRUNCATED, p.wrap(s, 0, Integer.MAX_VALUE));
        assertEquals(RocePacket.TRUNCATED, p.wrap(null, 0, 16));
        assertEquals(RocePacket.TRUNCATED, p.wrap(MemorySegment.NULL, 0, 16));
        byte[] atomic = hex("14 00 ffff 00 000001 00 000001" + "00".repeat(27));
        assertEquals(RocePacket.TRUNCATED, p.wrap(seg(atomic), 0, atomic.length), "AtomicETH needs 28 bytes");
    }

    @Test
    void unknownOpcodeBadVersionBadPadBadLength() {
        byte[] uc = hex("20 00 ffff 00 000001 00 000001 0000"); // UC_SEND_FIRST
        assertEquals(RocePacket.UNKNOWN_OPCODE, p.wrap(seg(uc), 0, uc.length));
        byte[] cnp = hex("81 00 ffff 40 000001 00 000000" + "00".repeat(16));
        assertEquals(RocePacket.UNKNOWN_OPCODE, p.wrap(seg(cnp), 0, cnp.length));

        byte[] v1 = hex("04 01 ffff 00 000001 00 000001"); // TVer 1
        assertEquals(RocePacket.BAD_VERSION, p.wrap(seg(v1), 0, v1.length));

        byte[] pad3 = hex("04 30 ffff 00 000001 00 000001 0000"); // PadCnt 3, 2 bytes after the BTH
        assertEquals(RocePacket.BAD_PAD, p.wrap(seg(pad3), 0, pad3.length));
        byte[] pad2 = hex("04 20 ffff 00 000001 00 000001 0000"); // PadCnt 2, all pad: 0 payload bytes
        assertEquals(RocePacket.OK, p.wrap(seg(pad2), 0, pad2.length));
        assertEquals(0, p.payloadLength());
        byte[] ackPad = hex("11 10 ffff 00 000001 00 000001 00 000001 00"); // ACK with PadCnt 1
        assertEquals(RocePacket.BAD_PAD, p.wrap(seg(ackPad), 0, ackPad.length));
        assertEquals(RocePacket.BAD_PAD, p.wrap(seg(ackPad), 0, 16), "pad on an ACK, even without trailing bytes");

        byte[] ackData = hex("11 00 ffff 00 000001 00 000001 00 000001 00000000"); // ACK with 4 bytes after the AETH
        assertEquals(RocePacket.BAD_LENGTH, p.wrap(seg(ackData), 0, ackData.length));
        byte[] readData = hex("0c 00 ffff 00 000001 00 000001" + "00".repeat(16) + "01");
        assertEquals(RocePacket.BAD_LENGTH, p.wrap(seg(readData), 0, readData.length), "read request with payload");

        assertEquals("OK", RocePacket.statusName(RocePacket.OK));
        assertEquals("TRUNCATED", RocePacket.statusName(RocePacket.TRUNCATED));
        assertEquals("UNKNOWN_OPCODE", RocePacket.statusName(RocePacket.UNKNOWN_OPCODE));
        assertEquals("BAD_VERSION", RocePacket.statusName(RocePacket.BAD_VERSION));
        assertEquals("BAD_PAD", RocePacket.statusName(RocePacket.BAD_PAD));
        assertEquals("BAD_LENGTH", RocePacket.statusName(RocePacket.BAD_LENGTH));
        assertEquals("status 9", RocePacket.statusName(9));
    }
}
