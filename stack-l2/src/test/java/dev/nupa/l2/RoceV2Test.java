package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;

/**
 * The RoCEv2 ICRC ({@link RoceV2}) against packets that carry one. (dev.nupa.roce.wire.Icrc delegates here;
 * its IcrcTest checks that it does.)
 *
 * <p>{@link #CNP_CONNECTX4} is a RoCEv2 congestion notification packet captured from a Mellanox
 * ConnectX-4 Lx NIC, printed as a hex dump in scapy's RoCE regression tests
 * (secdev/scapy, test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"); its last 4 bytes,
 * {@code 82 fd 00 2a}, are the ICRC the hardware sent. It exercises every mask: TOS 0xc2, TTL 0x40,
 * a real IP checksum, UDP checksum 0 and BECN set in BTH byte 4. Its opcode (0x81, CNP) is one
 * the RDMA layer does not carry, which does not matter to the ICRC.
 *
 * <p>{@link #UC_SEND_ONLY_SCAPY} is the UC SEND_ONLY example of the same file, written out here byte
 * by byte from its field values; its ICRC there (0x78f353f3 read big-endian, so bytes
 * {@code 78 f3 53 f3}) was computed by scapy's contrib/roce.py, a second implementation.
 *
 * <p>Both are also checked against {@link #bitwiseIcrc}, a bit-at-a-time CRC-32 written here from the
 * definition (reflected polynomial 0xEDB88320, initial and final value all ones) over the masked
 * pseudo packet built byte by byte, and against {@link CRC32} over the same bytes.
 */
class RoceV2Test {
    /** Ethernet header removed: IPv4 at offset 0. */
    static final String CNP_CONNECTX4 =
            "45c2003c718c400040119161" + "0a0011010a001201" // IPv4: TOS c2, len 60, id 718c, DF, TTL 64, UDP, csum 9161, 10.0.17.1 > 10.0.18.1
            + "000012b700280000" // UDP: 0 > 4791, len 40, checksum 0
            + "8100ffff" + "40000118" + "00000000" // BTH: opcode 0x81 CNP, pkey ffff, BECN, DestQP 0x118, PSN 0
            + "00000000000000000000000000000000" // 16 reserved bytes of a CNP
            + "82fd002a"; // ICRC

    static final String UC_SEND_ONLY_SCAPY =
            "4501004004784000" + "4011" + "b4d5" + "c0a80007c0a80007" // IPv4: TOS 1, len 64, id 1144, DF, TTL 64, UDP, csum b4d5, 192.168.0.7 twice
            + "c00012b7002caca2" // UDP: 49152 > 4791, len 44, checksum aca2
            + "2460ffff" + "000000d3" + "00cf1710" // BTH: UC_SEND_ONLY (0x24), MigReq, pad 2, pkey ffff, DestQP 211, PSN 13571856
            + "4630818be28935d90e9a95505401be885e500000" // 18 bytes of payload and 2 pad
            + "78f353f3"; // ICRC

    static byte[] hex(String s) {
        return HexFormat.of().parseHex(s);
    }

    /** Bit-at-a-time CRC-32 (IEEE 802.3, reflected): the definition, no table. */
    static int bitwiseCrc32(byte[] data) {
        int crc = 0xFFFFFFFF;
        for (byte d : data) {
            crc ^= d & 0xFF;
            for (int k = 0; k < 8; k++) {
                crc = (crc & 1) != 0 ? (crc >>> 1) ^ 0xEDB88320 : crc >>> 1;
            }
        }
        return ~crc;
    }

    /** The pseudo packet of annex A17.3.3 for IPv4 without options: 8 x ff, then the packet with the variant fields set to ones. */
    static byte[] maskedPseudoPacket(byte[] ip, int length) {
        byte[] p = new byte[8 + length];
        Arrays.fill(p, 0, 8, (byte) 0xFF);
        System.arraycopy(ip, 0, p, 8, length);
        int[] variant = {1, 8, 10, 11, 20 + 6, 20 + 7, 28 + 4}; // TOS, TTL, IP csum, UDP csum, BTH byte 4
        for (int v : variant) {
            p[8 + v] = (byte) 0xFF;
        }
        return p;
    }

    static int bitwiseIcrc(byte[] ip, int length) {
        return bitwiseCrc32(maskedPseudoPacket(ip, length));
    }

    static int icrcOnTheWire(byte[] ip) {
        int n = ip.length;
        // least significant byte first
        return (ip[n - 4] & 0xFF) | (ip[n - 3] & 0xFF) << 8 | (ip[n - 2] & 0xFF) << 16 | (ip[n - 1] & 0xFF) << 24;
    }

    @Test
    void connectX4CongestionNotificationIcrcIs2a00fd82SentLeastSignificantByteFirst() {
        byte[] b = hex(CNP_CONNECTX4);
        int covered = b.length - 4;
        assertEquals(0x2A00FD82, icrcOnTheWire(b));
        assertEquals(0x2A00FD82, bitwiseIcrc(b, covered), "independent bitwise CRC over the masked pseudo packet");
        CRC32 zip = new CRC32();
        zip.update(maskedPseudoPacket(b, covered));
        assertEquals(0x2A00FD82, (int) zip.getValue(), "java.util.zip.CRC32 agrees");
        assertEquals(0x2A00FD82, RoceV2.icrc(MemorySegment.ofArray(b), 0, covered));
        assertTrue(RoceV2.verifyIcrc(MemorySegment.ofArray(b), 0, covered));
    }

    @Test
    void scapyUcSendOnlyExampleIcrcIsF353f378() {
        byte[] b = hex(UC_SEND_ONLY_SCAPY);
        assertEquals(64, b.length, "IP total length 64");
        int covered = b.length - 4;
        assertEquals(0xF353F378, bitwiseIcrc(b, covered));
        assertEquals(0xF353F378, RoceV2.icrc(MemorySegment.ofArray(b), 0, covered));
        assertTrue(RoceV2.verifyIcrc(MemorySegment.ofArray(b), 0, covered));
    }

    @Test
    void maskedFieldsDoNotChangeTheIcrcAndOthersDo() {
        byte[] b = hex(CNP_CONNECTX4);
        int covered = b.length - 4;
        MemorySegment s = MemorySegment.ofArray(b);
        // What routers and switches change: TOS/ECN, TTL, IP checksum, UDP checksum, FECN/BECN.
        for (int variant : new int[] {1, 8, 10, 11, 26, 27, 32}) {
            byte[] c = b.clone();
            c[variant] ^= 0x5A;
            assertTrue(RoceV2.verifyIcrc(MemorySegment.ofArray(c), 0, covered), "byte " + variant + " is masked");
        }
        // Everything else is covered: addresses, ports, lengths, the rest of the BTH, the payload.
        for (int i = 0; i < covered; i++) {
            if (i == 1 || i == 8 || i == 10 || i == 11 || i == 26 || i == 27 || i == 32) {
                continue;
            }
            byte[] c = b.clone();
            c[i] ^= 0x01;
            assertFalse(RoceV2.verifyIcrc(MemorySegment.ofArray(c), 0, covered), "byte " + i + " is covered");
        }
        assertTrue(RoceV2.verifyIcrc(s, 0, covered));
    }

    @Test
    void writeStoresTheIcrcAtAnOffsetInsideALargerSegmentAndLongPayloadsCrossTheScratchChunk() {
        // A RoCEv2 RC SEND_ONLY with 5000 payload bytes, placed at offset 3 of a larger buffer.
        int payload = 5000;
        int covered = 20 + 8 + 12 + payload;
        byte[] pkt = new byte[covered + 4];
        byte[] ipudp = hex("45000000000040004011000001020304050607080000" + "12b700000000");
        System.arraycopy(ipudp, 0, pkt, 0, ipudp.length);
        pkt[2] = (byte) ((covered + 4) >>> 8);
        pkt[3] = (byte) (covered + 4);
        pkt[24] = (byte) ((covered + 4 - 20) >>> 8);
        pkt[25] = (byte) (covered + 4 - 20);
        MemorySegment p = MemorySegment.ofArray(pkt);
        byte[] bth = hex("0400ffff" + "00000012" + "80000007"); // RC_SEND_ONLY, pkey ffff, DestQP 0x12, AckReq, PSN 7
        System.arraycopy(bth, 0, pkt, 28, bth.length);
        for (int i = 0; i < payload; i++) {
            pkt[40 + i] = (byte) (i * 31 + 7);
        }
        int want = bitwiseIcrc(pkt, covered);

        byte[] big = new byte[3 + pkt.length + 5];
        System.arraycopy(pkt, 0, big, 3, pkt.length);
        MemorySegment s = MemorySegment.ofArray(big);
        RoceV2.writeIcrc(s, 3, covered);
        assertEquals(want, RoceV2.icrc(s, 3, covered));
        assertEquals(want, icrcOnTheWire(Arrays.copyOfRange(big, 3, 3 + pkt.length)));
        assertTrue(RoceV2.verifyIcrc(s, 3, covered));
        big[3 + 40 + 4500] ^= 1;
        assertFalse(RoceV2.verifyIcrc(s, 3, covered), "a payload byte past the first 2048 is covered");
    }

    @Test
    void malformedInputIsRefusedByComputeAndFailsVerify() {
        byte[] b = hex(CNP_CONNECTX4);
        MemorySegment s = MemorySegment.ofArray(b);
        int covered = b.length - 4;
        assertFalse(RoceV2.verifyIcrc(s, 0, covered + 1), "no room for the ICRC");
        assertFalse(RoceV2.verifyIcrc(s, 1, covered));
        assertFalse(RoceV2.verifyIcrc(s, -1, covered));
        assertFalse(RoceV2.verifyIcrc(s, 0, 39), "shorter than IPv4 + UDP + BTH");
        assertFalse(RoceV2.verifyIcrc(s, Long.MAX_VALUE, 40));
        assertFalse(RoceV2.verifyIcrc(null, 0, 40));
        byte[] v6 = b.clone();
        v6[0] = 0x65;
        assertFalse(RoceV2.verifyIcrc(MemorySegment.ofArray(v6), 0, covered), "not IPv4");
        byte[] ihl = b.clone();
        ihl[0] = 0x4F; // a 60-byte header does not leave room for UDP and the BTH
        assertFalse(RoceV2.verifyIcrc(MemorySegment.ofArray(ihl), 0, covered));
        assertThrows(IllegalArgumentException.class, () -> RoceV2.icrc(MemorySegment.ofArray(v6), 0, covered));
        assertThrows(IllegalArgumentException.class, () -> RoceV2.icrc(s, 0, b.length + 1));
        assertThrows(IllegalArgumentException.class, () -> RoceV2.icrc(MemorySegment.ofArray(v6), 0, 28, s, 28, 12));
        assertThrows(IllegalArgumentException.class, () -> RoceV2.icrc(s, 0, 28, s, 28, 11), "no room for a BTH");
        assertThrows(IllegalArgumentException.class, () -> RoceV2.icrc(s, 0, 28, s, b.length - 11, 12));
    }

    @Test
    void headersAndTransportInTwoPiecesGiveTheSameIcrc() {
        byte[] b = hex(UC_SEND_ONLY_SCAPY);
        int covered = b.length - 4;
        byte[] headers = new byte[5 + 28];
        System.arraycopy(b, 0, headers, 5, 28);
        byte[] transport = Arrays.copyOfRange(b, 28 - 3, covered + 2); // 3 bytes before, 2 after
        assertEquals(0xF353F378, RoceV2.icrc(MemorySegment.ofArray(headers), 5, 28,
                MemorySegment.ofArray(transport), 3, covered - 28));
    }
}
