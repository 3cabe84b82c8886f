package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.WireBytes.seg;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Seeded property tests: random reprs round trip; random and mutated bytes never make a view throw. */
class WirePropertyTest {
    private static final long SEED = 0x4E555041L; // "NUPA"

    private final Ipv4Header ip = new Ipv4Header();
    private final IcmpHeader icmp = new IcmpHeader();
    private final UdpHeader udp = new UdpHeader();
    private final Ipv4Header quoted = new Ipv4Header();

    private static Ipv4Repr randomIpv4(Random r, int protocol, int payloadLength) {
        return new Ipv4Repr(r.nextInt(), r.nextInt(), protocol, payloadLength, r.nextInt(256), r.nextInt(64),
                r.nextInt(4), r.nextInt(65536), r.nextBoolean(), r.nextBoolean(), r.nextInt(8192) * 8);
    }

    @Test
    void randomIpv4ReprsEmitThenParseToTheSameRepr() {
        Random r = new Random(SEED);
        for (int i = 0; i < 20_000; i++) {
            int payload = r.nextInt(200);
            Ipv4Repr repr = randomIpv4(r, r.nextInt(256), payload);
            int at = r.nextInt(8);
            byte[] b = new byte[at + repr.length() + r.nextInt(4)];
            boolean checksum = r.nextBoolean();
            repr.emitInto(seg(b), at, checksum);
            assertEquals(WireStatus.OK, ip.wrap(seg(b), at, b.length - at, checksum), repr.toString());
            assertEquals(repr, Ipv4Repr.parse(ip));
            assertEquals(at + 20L, ip.payloadOffset());
        }
    }

    @Test
    void randomIcmpReprsEmitThenParseToTheSameRepr() {
        Random r = new Random(SEED + 1);
        for (int i = 0; i < 20_000; i++) {
            byte[] data = new byte[r.nextInt(100)];
            r.nextBytes(data);
            IcmpRepr repr = switch (r.nextInt(5)) {
                case 0 -> IcmpRepr.echoRequest(r.nextInt(65536), r.nextInt(65536), data);
                case 1 -> IcmpRepr.echoReply(r.nextInt(65536), r.nextInt(65536), data);
                case 2 -> IcmpRepr.fragmentationNeeded(r.nextInt(65536), data);
                case 3 -> IcmpRepr.timeExceeded(r.nextInt(2), data);
                default -> new IcmpRepr(r.nextInt(256), r.nextInt(256), r.nextInt(), data);
            };
            int at = r.nextInt(8);
            byte[] b = new byte[at + repr.length()];
            repr.emitInto(seg(b), at);
            assertEquals(WireStatus.OK, icmp.wrap(seg(b), at, repr.length(), true), repr.toString());
            assertEquals(repr, IcmpRepr.parse(icmp));
        }
    }

    @Test
    void randomUdpDatagramsInsideIpv4EmitThenParseAndVerify() {
        Random r = new Random(SEED + 2);
        for (int i = 0; i < 20_000; i++) {
            int payload = r.nextInt(300);
            UdpRepr u = new UdpRepr(r.nextInt(65536), r.nextInt(65536), payload);
            Ipv4Repr head = new Ipv4Repr(r.nextInt(), r.nextInt(), Ipv4Header.PROTOCOL_UDP, u.length(), 1 + r.nextInt(255));
            byte[] b = new byte[head.length()];
            r.nextBytes(b);
            head.emitInto(seg(b), 0, true);
            boolean checksum = r.nextBoolean();
            u.emitInto(seg(b), head.headerLength(), head.sourceAddress(), head.destinationAddress(), checksum);
            assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
            assertEquals(head, Ipv4Repr.parse(ip));
            assertEquals(WireStatus.OK, udp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength(),
                    ip.sourceAddress(), ip.destinationAddress(), true));
            assertEquals(u, UdpRepr.parse(udp));
            assertTrue(checksum ? udp.checksum() != 0 : udp.checksum() == 0);
        }
    }

    @Test
    void randomGarbageIsRejectedOrAcceptedButNeverThrows() {
        Random r = new Random(SEED + 3);
        int[] seen = new int[WireStatus.COUNT];
        for (int i = 0; i < 200_000; i++) {
            byte[] b = new byte[r.nextInt(96)];
            r.nextBytes(b);
            if (b.length > 0 && r.nextInt(4) != 0) {
                b[0] = (byte) (0x40 | (b[0] & 0x0F)); // mostly version 4, to get past the first check
            }
            if (b.length > 3 && r.nextBoolean()) {
                b[2] = 0;
                b[3] = (byte) r.nextInt(b.length + 8); // a total length near the buffer size
            }
            seen[exercise(seg(b), r.nextInt(b.length + 2) - 1, r.nextInt(b.length + 4) - 2, r)]++;
        }
        for (int status = 0; status < WireStatus.COUNT; status++) {
            if (status != WireStatus.BAD_LENGTH) {
                assertTrue(seen[status] > 0, "garbage reached " + WireStatus.name(status));
            }
        }
    }

    @Test
    void mutatedValidPacketsAreRejectedOrAcceptedButNeverThrow() {
        Random r = new Random(SEED + 4);
        String[] packets = {Captured.ECHO_REQUEST, Captured.ECHO_REPLY, Captured.UDP_HELLO,
            Captured.UDP_HELLO_PARTIAL_CHECKSUM, Captured.PORT_UNREACHABLE};
        for (int i = 0; i < 200_000; i++) {
            byte[] b = WireBytes.hex(packets[r.nextInt(packets.length)]);
            for (int k = 1 + r.nextInt(3); k > 0; k--) {
                b[r.nextInt(b.length)] = (byte) r.nextInt(256);
            }
            int len = r.nextInt(4) == 0 ? r.nextInt(b.length + 1) : b.length;
            exercise(seg(b), 0, len, r);
        }
    }

    /** Wraps every view over the range and, where a wrap succeeds, reads every accessor. Returns the IPv4 status. */
    private int exercise(MemorySegment s, long offset, int length, Random r) {
        boolean verify = r.nextBoolean();
        int status = ip.wrap(s, offset, length, verify);
        if (status == WireStatus.OK) {
            readAll(ip);
            Ipv4Repr.parse(ip);
            IcmpHeader.mayAnswerWithError(ip, r.nextBoolean());
            if (icmp.wrap(s, ip.payloadOffset(), ip.payloadLength(), verify) == WireStatus.OK) {
                readAll(icmp);
                IcmpRepr repr = IcmpRepr.parse(icmp);
                repr.quotedHeader();
                if (quoted.wrapQuoted(s, icmp.dataOffset(), icmp.dataLength()) == WireStatus.OK) {
                    readAll(quoted);
                    IcmpHeader.mayAnswerWithError(quoted, false);
                    udp.wrap(s, quoted.payloadOffset(), quoted.availablePayloadLength());
                }
            }
            if (udp.wrap(s, ip.payloadOffset(), ip.payloadLength(), ip.sourceAddress(), ip.destinationAddress(), verify)
                    == WireStatus.OK) {
                readAll(udp);
                UdpRepr.parse(udp);
            }
        }
        if (icmp.wrap(s, offset, length, verify) == WireStatus.OK) {
            readAll(icmp);
            IcmpRepr.parse(icmp).quotedHeader();
        }
        if (udp.wrap(s, offset, length, r.nextInt(), r.nextInt(), verify) == WireStatus.OK) {
            readAll(udp);
            UdpRepr.parse(udp);
        }
        if (quoted.wrapQuoted(s, offset, length) == WireStatus.OK) {
            readAll(quoted);
        }
        return status;
    }

    private static long readAll(Ipv4Header h) {
        return h.version() + h.headerLength() + h.typeOfService() + h.dscp() + h.ecn() + h.totalLength()
                + h.identification() + (h.reservedFlag() ? 1 : 0) + (h.dontFragment() ? 1 : 0)
                + (h.moreFragments() ? 1 : 0) + h.fragmentOffset() + (h.isFragment() ? 1 : 0) + h.ttl() + h.protocol()
                + h.headerChecksum() + h.sourceAddress() + h.destinationAddress() + h.optionsLength()
                + h.payloadOffset() + h.payloadLength() + h.availablePayloadLength() + h.computeChecksum()
                + (h.verifyChecksum() ? 1 : 0) + h.bufferLength() + IcmpHeader.quotedLength(h);
    }

    private static long readAll(IcmpHeader h) {
        return h.type() + h.code() + h.checksum() + h.restOfHeader() + h.echoIdentifier() + h.echoSequence()
                + h.nextHopMtu() + h.pointer() + h.dataOffset() + h.dataLength() + h.computeChecksum()
                + (h.verifyChecksum() ? 1 : 0) + h.length();
    }

    private static long readAll(UdpHeader h) {
        return h.sourcePort() + h.destinationPort() + h.length() + h.checksum() + h.payloadOffset()
                + h.payloadLength() + h.computeChecksum(1, 2) + (h.verifyChecksum(3, 4) ? 1 : 0);
    }
}
