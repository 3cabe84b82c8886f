package dev.nupa.roce.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * Fuzzes {@link RocePacket} and the header records: {@code wrap} never throws and returns a status
 * the reference (written from IBA vol 1 9.2/9.3 through {@link RoceWireTest#LAYOUT}, not from
 * {@link Opcode}) allows; after OK the headers lie in spec order inside the input and payload plus
 * pad end exactly where the packet does; every record parses, emits into a fresh segment and parses
 * back to itself (or refuses values the reference calls invalid); the whole packet rebuilt from its
 * records wraps to the same offsets. docs/fuzzing.md says how to run it; seeds live in
 * {@code dev/nupa/roce/RocePacketFuzzTestInputs/rocePacket/}.
 *
 * <p>Input, as the other wire fuzz tests: byte 0 bits 0-2 junk bytes before the packet, bits 3-5
 * junk bytes after it; byte 1 a signed delta, the length of a second wrap minus the packet's; then
 * the packet (BTH first). Missing bytes count as zero.
 */
class RocePacketFuzzTest {
    private static final byte JUNK = (byte) 0xA5;
    private static final List<String> ORDER = List.of("DETH", "RETH", "AtomicETH", "AETH", "AtomicAckETH", "ImmDt", "IETH");

    private final RocePacket p = new RocePacket();
    private final RocePacket again = new RocePacket();

    static int bit(int status) {
        return 1 << status;
    }

    static int u8(byte[] b, int i) {
        return b[i] & 0xFF;
    }

    static int u24(byte[] b, int i) {
        return u8(b, i) << 16 | u8(b, i + 1) << 8 | u8(b, i + 2);
    }

    static long u64(byte[] b, int i) {
        long v = 0;
        for (int k = 0; k < 8; k++) {
            v = v << 8 | u8(b, i + k);
        }
        return v;
    }

    static int u32(byte[] b, int i) {
        return u8(b, i) << 24 | u24(b, i + 1);
    }

    static int extLength(List<String> layout) {
        return layout.stream().mapToInt(RoceWireTest.SIZE::get).sum();
    }

    /** The statuses a wrap may return, as a bit set: OK alone, or every status whose condition holds. */
    static int allowedStatuses(byte[] b, long off, int len) {
        if (len < Bth.LENGTH || off < 0 || off > (long) b.length - len) {
            return bit(RocePacket.TRUNCATED);
        }
        int o = (int) off;
        List<String> layout = RoceWireTest.LAYOUT.get(u8(b, o));
        int tver = u8(b, o + 1) & 0xF;
        int pad = (u8(b, o + 1) >>> 4) & 3;
        int bad = 0;
        if (layout == null) {
            bad |= bit(RocePacket.UNKNOWN_OPCODE);
        }
        if (tver != 0) {
            bad |= bit(RocePacket.BAD_VERSION);
        }
        if (layout != null) {
            boolean payload = layout.contains("payload");
            int rest = len - Bth.LENGTH - extLength(layout);
            if (rest < 0) {
                bad |= bit(RocePacket.TRUNCATED);
            }
            if (!payload && pad != 0 || payload && rest >= 0 && pad > rest) {
                bad |= bit(RocePacket.BAD_PAD);
            }
            if (!payload && rest > 0) {
                bad |= bit(RocePacket.BAD_LENGTH);
            }
        }
        return bad == 0 ? bit(RocePacket.OK) : bad;
    }

    @FuzzTest
    void rocePacket(byte[] input) {
        int control = input.length > 0 ? input[0] & 0xFF : 0;
        int delta = input.length > 1 ? input[1] : 0;
        byte[] packet = Arrays.copyOfRange(input, Math.min(input.length, 2), input.length);
        int lead = control & 7;
        int trail = (control >>> 3) & 7;
        byte[] b = new byte[lead + packet.length + trail];
        Arrays.fill(b, JUNK);
        System.arraycopy(packet, 0, b, lead, packet.length);
        MemorySegment seg = MemorySegment.ofArray(b);
        long size = b.length;
        int length = packet.length;
        long[][] probes = {
            {lead, length}, {lead, length + delta}, {lead - 1L, length + 1}, {lead + 1L, length - 1}, {0, size},
            {-1, length}, {size, 0}, {size - 12, 12}, {size - 11, 12}, {Long.MAX_VALUE, 12}, {Long.MIN_VALUE, 12},
            {lead, Integer.MAX_VALUE}, {lead, Integer.MIN_VALUE}, {lead, -1}
        };
        for (long[] probe : probes) {
            long off = probe[0];
            int len = (int) probe[1];
            int status = p.wrap(seg, off, len);
            String where = " at offset " + off + " length " + len + " of " + size;
            assertTrue((allowedStatuses(b, off, len) & bit(status)) != 0, "wrap: " + RocePacket.statusName(status) + where);
            if (status == RocePacket.OK) {
                offsetsLieInside(b, (int) off, len);
                recordsRoundTrip(b, (int) off, len);
            }
        }
    }

    private long offsetOf(RocePacket q, String header) {
        return switch (header) {
            case "DETH" -> q.deth();
            case "RETH" -> q.reth();
            case "AtomicETH" -> q.atomicEth();
            case "AETH" -> q.aeth();
            case "AtomicAckETH" -> q.atomicAckEth();
            case "IETH" -> q.ieth();
            default -> q.immDt();
        };
    }

    private void offsetsLieInside(byte[] b, int o, int len) {
        List<String> layout = RoceWireTest.LAYOUT.get(u8(b, o));
        assertEquals(u8(b, o), p.opcode());
        assertEquals(o, p.bth());
        assertEquals(len, p.length());
        long at = o + Bth.LENGTH;
        for (String h : ORDER) {
            if (layout.contains(h)) {
                assertEquals(at, offsetOf(p, h), h);
                at += RoceWireTest.SIZE.get(h);
            } else {
                assertEquals(-1, offsetOf(p, h), h);
            }
        }
        int pad = (u8(b, o + 1) >>> 4) & 3;
        assertEquals(at, p.payload());
        assertTrue(p.payloadLength() >= 0, "payload length");
        assertEquals((long) o + len, p.payload() + p.payloadLength() + pad, "payload and pad end the packet");
        assertTrue(layout.contains("payload") || p.payloadLength() == 0, "no payload on " + Opcode.name(p.opcode()));
        assertEquals(pad, p.padCount());
        assertEquals(u24(b, o + 9), p.psn());
        assertEquals(u24(b, o + 5), p.destQp());
    }

    private void recordsRoundTrip(byte[] b, int o, int len) {
        MemorySegment s = p.segment();
        byte[] out = new byte[len + 3];
        Arrays.fill(out, JUNK);
        MemorySegment os = MemorySegment.ofArray(out);
        int base = 3;

        BthRepr bth = BthRepr.parse(s, o);
        assertEquals(u8(b, o + 8) >>> 7 == 1, bth.ackReq());
        bth.emitInto(os, base);
        assertEquals(bth, BthRepr.parse(os, base));
        byte[] want = Arrays.copyOfRange(b, o, o + Bth.LENGTH);
        want[1] &= (byte) 0xF0; // TVer is 0 (wrap said so)
        want[4] &= (byte) 0xC0; // reserved bits are emitted as 0
        want[8] &= (byte) 0x80;
        assertArrayEquals(want, Arrays.copyOfRange(out, base, base + Bth.LENGTH), "BTH bytes");

        if (p.deth() >= 0) {
            DethRepr r = DethRepr.parse(s, p.deth());
            r.emitInto(os, base + p.deth() - o);
            assertEquals(r, DethRepr.parse(os, base + p.deth() - o));
            out[(int) (base + p.deth() - o + 4)] = b[(int) p.deth() + 4]; // the reserved byte is emitted as 0
        }
        if (p.reth() >= 0) {
            int i = (int) p.reth();
            long dmaLength = Integer.toUnsignedLong(u32(b, i + 12));
            if (dmaLength <= 1L << 31) {
                RethRepr r = RethRepr.parse(s, i);
                assertEquals(u64(b, i), r.va());
                r.emitInto(os, base + i - o);
                assertEquals(r, RethRepr.parse(os, base + i - o));
            } else {
                assertThrows(IllegalArgumentException.class, () -> RethRepr.parse(s, i));
                Reth.write(os, base + i - o, Reth.va(s, i), Reth.rkey(s, i), Reth.dmaLength(s, i));
            }
        }
        if (p.atomicEth() >= 0) {
            int i = (int) p.atomicEth();
            if ((u8(b, i + 7) & 7) == 0) {
                AtomicEthRepr r = AtomicEthRepr.parse(s, i);
                r.emitInto(os, base + i - o);
                assertEquals(r, AtomicEthRepr.parse(os, base + i - o));
            } else {
                assertThrows(IllegalArgumentException.class, () -> AtomicEthRepr.parse(s, i));
                AtomicEth.write(os, base + i - o, AtomicEth.va(s, i), AtomicEth.rkey(s, i), AtomicEth.swapAdd(s, i),
                        AtomicEth.compare(s, i));
            }
        }
        if (p.aeth() >= 0) {
            int i = (int) p.aeth();
            int syndrome = u8(b, i);
            if (syndrome < 0x80 && (syndrome >>> 5) != 2) {
                AethRepr r = AethRepr.parse(s, i);
                assertEquals(syndrome >>> 5, r.type());
                r.emitInto(os, base + i - o);
                assertEquals(r, AethRepr.parse(os, base + i - o));
            } else {
                assertThrows(IllegalArgumentException.class, () -> AethRepr.parse(s, i));
                Aeth.write(os, base + i - o, Aeth.syndrome(s, i), Aeth.msn(s, i));
            }
        }
        if (p.atomicAckEth() >= 0) {
            AtomicAckEthRepr r = AtomicAckEthRepr.parse(s, p.atomicAckEth());
            r.emitInto(os, base + p.atomicAckEth() - o);
            assertEquals(r, AtomicAckEthRepr.parse(os, base + p.atomicAckEth() - o));
        }
        if (p.immDt() >= 0) {
            ImmDt.write(os, base + p.immDt() - o, ImmDt.get(s, p.immDt()));
        }
        if (p.ieth() >= 0) {
            IethRepr r = IethRepr.parse(s, p.ieth());
            r.emitInto(os, base + p.ieth() - o);
            assertEquals(r, IethRepr.parse(os, base + p.ieth() - o));
        }
        int tail = (int) (p.payload() - o);
        System.arraycopy(b, (int) p.payload(), out, base + tail, len - tail);

        // Rebuilt from the records, the extension headers and payload are the same bytes and wrap the same way.
        assertArrayEquals(Arrays.copyOfRange(b, o + Bth.LENGTH, o + len),
                Arrays.copyOfRange(out, base + Bth.LENGTH, base + len), "extension headers and payload");
        assertEquals(RocePacket.OK, again.wrap(os, base, len));
        assertEquals(p.payload() - o, again.payload() - base);
        assertEquals(p.payloadLength(), again.payloadLength());
        assertEquals(p.flags(), again.flags());
    }
}
