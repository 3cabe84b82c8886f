package dev.nupa.ip.wire;

import static dev.nupa.ip.wire.WireBytes.concat;
import static dev.nupa.ip.wire.WireBytes.hex;
import static dev.nupa.ip.wire.WireBytes.naiveSum;
import static dev.nupa.ip.wire.WireBytes.seg;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class IcmpTest {
    private static final byte[] PING_DATA = "abcdefghijklmnopqrstuvwabcdefghi".getBytes(StandardCharsets.US_ASCII);
    private static final int LOCALHOST = 0x7F000001;
    private static final int A = Ipv4Address.parse("10.0.0.1");
    private static final int B = Ipv4Address.parse("10.0.0.2");

    private final Ipv4Header ip = new Ipv4Header();
    private final IcmpHeader icmp = new IcmpHeader();

    private void wrapIcmpOf(byte[] packet) {
        assertEquals(WireStatus.OK, ip.wrap(seg(packet), 0, packet.length));
        assertEquals(WireStatus.OK, icmp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength()));
    }

    @Test
    void linuxEchoRequestParsesToItsIdSequenceAndData() {
        byte[] b = hex(Captured.ECHO_REQUEST);
        assertEquals(0xFFFF, naiveSum(b, 20, 60), "independent check of the ICMP checksum 3b27");
        wrapIcmpOf(b);
        assertEquals(IcmpHeader.TYPE_ECHO_REQUEST, icmp.type());
        assertEquals(0, icmp.code());
        assertEquals(0x3B27, icmp.checksum());
        assertEquals(0x3B27, icmp.computeChecksum());
        assertEquals(0x1234, icmp.echoIdentifier());
        assertEquals(1, icmp.echoSequence());
        assertEquals(28, icmp.dataOffset());
        assertEquals(32, icmp.dataLength());
        assertEquals(IcmpRepr.echoRequest(0x1234, 1, PING_DATA), IcmpRepr.parse(icmp));
    }

    @Test
    void echoRequestReprEmitsTheCapturedBytes() {
        IcmpRepr repr = IcmpRepr.echoRequest(0x1234, 1, PING_DATA);
        byte[] out = new byte[repr.length()];
        repr.emitInto(seg(out), 0);
        assertArrayEquals(Arrays.copyOfRange(hex(Captured.ECHO_REQUEST), 20, 60), out);
        assertEquals(8, repr.headerLength());
        assertEquals(40, repr.length());
    }

    @Test
    void echoRequestTurnedIntoReplyInPlaceMatchesTheKernelsReply() {
        // RFC 792: the reply is the request with type 0; the kernel's checksum 4327 = 3b27 + 0800.
        byte[] req = hex(Captured.ECHO_REQUEST);
        byte[] rep = hex(Captured.ECHO_REPLY);
        assertEquals(0xFFFF, naiveSum(rep, 0, 20));
        assertEquals(0xFFFF, naiveSum(rep, 20, 60));
        wrapIcmpOf(req);
        icmp.echoRequestToReply();
        assertArrayEquals(Arrays.copyOfRange(rep, 20, 60), Arrays.copyOfRange(req, 20, 60));
        wrapIcmpOf(rep);
        assertEquals(IcmpRepr.echoReply(0x1234, 1, PING_DATA), IcmpRepr.parse(icmp));
    }

    @Test
    void oddLengthEchoDataIsChecksummedWithAZeroPad() {
        byte[] data = hex("0102030405");
        IcmpRepr repr = IcmpRepr.echoRequest(7, 9, data);
        byte[] out = new byte[13];
        repr.emitInto(seg(out), 0);
        assertEquals(0xFFFF, naiveSum(out));
        assertEquals(WireStatus.OK, icmp.wrap(seg(out), 0, 13));
        assertEquals(repr, IcmpRepr.parse(icmp));
    }

    @Test
    void linuxPortUnreachableQuotesTheUdpHeaderWithItsPorts() {
        byte[] b = hex(Captured.PORT_UNREACHABLE);
        assertEquals(0xFFFF, naiveSum(b, 0, 20));
        assertEquals(0xFFFF, naiveSum(b, 20, b.length), "independent check of ICMP checksum 1eb3");
        wrapIcmpOf(b);
        assertEquals(48, ip.dscp());
        assertEquals(IcmpHeader.TYPE_DESTINATION_UNREACHABLE, icmp.type());
        assertEquals(IcmpHeader.UNREACHABLE_PORT, icmp.code());
        assertTrue(IcmpHeader.isError(icmp.type()));
        assertEquals(0, icmp.restOfHeader());
        Ipv4Header quoted = new Ipv4Header();
        assertEquals(WireStatus.OK, quoted.wrapQuoted(icmp.segment(), icmp.dataOffset(), icmp.dataLength()));
        assertEquals(Ipv4Header.PROTOCOL_UDP, quoted.protocol());
        UdpHeader udp = new UdpHeader();
        assertEquals(WireStatus.OK, udp.wrap(quoted.segment(), quoted.payloadOffset(), quoted.availablePayloadLength()));
        assertEquals(40000, udp.sourcePort());
        assertEquals(9, udp.destinationPort());

        IcmpRepr repr = IcmpRepr.parse(icmp);
        assertTrue(repr.isError());
        assertEquals(new Ipv4Repr(LOCALHOST, LOCALHOST, 17, 13, 64, 0, 0, 0xD04F, true, false, 0), repr.quotedHeader());
        byte[] out = new byte[repr.length()];
        repr.emitInto(seg(out), 0);
        assertArrayEquals(Arrays.copyOfRange(b, 20, b.length), out);
    }

    @Test
    void emitErrorQuotesTheOriginalHeaderAndFirst8PayloadBytes() {
        // RFC 792 / RFC 1122 3.2.2: "Internet Header + 64 bits of Original Data Datagram".
        byte[] original = hex(Captured.UDP_HELLO);
        assertEquals(WireStatus.OK, ip.wrap(seg(original), 0, original.length));
        byte[] out = new byte[100];
        int n = icmp.emitError(seg(out), 4, 96, IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.UNREACHABLE_PORT, 0, ip);
        assertEquals(8 + 20 + 8, n);
        assertEquals(0xFFFF, naiveSum(out, 4, 4 + n));
        assertArrayEquals(Arrays.copyOf(original, 28), Arrays.copyOfRange(out, 12, 40));
        assertEquals(WireStatus.OK, icmp.wrap(seg(out), 4, n));
        assertEquals(IcmpRepr.destinationUnreachable(3, IcmpRepr.quote(ip)), IcmpRepr.parse(icmp));
        assertEquals(-1, icmp.emitError(seg(out), 0, 35, 3, 3, 0, ip), "capacity too small");
    }

    @Test
    void emitErrorQuotesLessWhenTheOriginalPayloadIsShorterThan8() {
        byte[] original = new byte[23];
        new Ipv4Repr(A, B, 17, 3, 64).emitInto(seg(original), 0, true);
        assertEquals(WireStatus.OK, ip.wrap(seg(original), 0, 23));
        byte[] out = new byte[64];
        assertEquals(8 + 23, icmp.emitError(seg(out), 0, 64, 3, 2, 0, ip));
    }

    @Test
    void emitErrorBuiltOverTheOriginalsOwnBufferStillQuotesTheOriginalBytes() {
        // In-place answer: the ICMP message starts 20 bytes in, where the original's header was being read.
        byte[] original = hex(Captured.UDP_HELLO);
        byte[] buf = java.util.Arrays.copyOf(original, 100);
        assertEquals(WireStatus.OK, ip.wrap(seg(buf), 0, original.length));
        int n = icmp.emitError(seg(buf), 20, 80, 3, 3, 0, ip);
        assertEquals(36, n);
        assertArrayEquals(Arrays.copyOf(original, 28), Arrays.copyOfRange(buf, 28, 56));
        assertEquals(0xFFFF, naiveSum(buf, 20, 56));
    }

    @Test
    void fragmentationNeededCarriesTheNextHopMtuInTheLowHalfOfTheUnusedWord() {
        // RFC 1191 section 4: | type 3 | code 4 | checksum | unused = 0 | Next-Hop MTU |
        byte[] original = hex(Captured.UDP_HELLO);
        ip.wrap(seg(original), 0, original.length);
        IcmpRepr repr = IcmpRepr.fragmentationNeeded(1500, IcmpRepr.quote(ip));
        byte[] out = new byte[repr.length()];
        repr.emitInto(seg(out), 0);
        assertArrayEquals(hex("0304"), Arrays.copyOf(out, 2));
        assertArrayEquals(hex("000005dc"), Arrays.copyOfRange(out, 4, 8));
        assertEquals(0xFFFF, naiveSum(out));
        assertEquals(WireStatus.OK, icmp.wrap(seg(out), 0, out.length));
        assertEquals(1500, icmp.nextHopMtu());
        assertEquals(1500, IcmpRepr.parse(icmp).nextHopMtu());
        assertEquals(repr, IcmpRepr.parse(icmp));
        assertThrows(IllegalArgumentException.class, () -> IcmpRepr.fragmentationNeeded(65536, new byte[0]));
    }

    @Test
    void timeExceededRoundTripsWithItsQuotedHeader() {
        byte[] original = hex(Captured.ECHO_REQUEST);
        ip.wrap(seg(original), 0, original.length);
        IcmpRepr repr = IcmpRepr.timeExceeded(IcmpHeader.TIME_EXCEEDED_TTL, IcmpRepr.quote(ip));
        assertEquals(28, repr.data().length);
        byte[] out = new byte[repr.length()];
        repr.emitInto(seg(out), 0);
        assertEquals(WireStatus.OK, icmp.wrap(seg(out), 0, out.length));
        IcmpRepr back = IcmpRepr.parse(icmp);
        assertEquals(repr, back);
        assertEquals(Ipv4Repr.parse(ip), back.quotedHeader());
    }

    @Test
    void anErrorWhoseDataIsNoIpv4HeaderHasNoQuotedHeader() {
        assertNull(IcmpRepr.destinationUnreachable(1, new byte[5]).quotedHeader());
        assertNull(IcmpRepr.destinationUnreachable(1, new byte[28]).quotedHeader(), "version 0");
    }

    @Test
    void fewerThan8BytesIsTruncated() {
        byte[] b = Arrays.copyOfRange(hex(Captured.ECHO_REQUEST), 20, 60);
        for (int len = 0; len < 8; len++) {
            assertEquals(WireStatus.TRUNCATED, icmp.wrap(seg(b), 0, len, false), "length " + len);
        }
        assertEquals(WireStatus.TRUNCATED, icmp.wrap(seg(b), 33, 8));
        assertEquals(WireStatus.TRUNCATED, icmp.wrap(seg(b), -1, 8));
    }

    @Test
    void checksumCoversTheWholeMessageIncludingData() {
        byte[] b = Arrays.copyOfRange(hex(Captured.ECHO_REQUEST), 20, 60);
        b[39] ^= 1;
        assertEquals(WireStatus.BAD_CHECKSUM, icmp.wrap(seg(b), 0, 40));
        assertEquals(WireStatus.OK, icmp.wrap(seg(b), 0, 40, false), "verification switched off");
        assertEquals(WireStatus.BAD_CHECKSUM, icmp.wrap(seg(b), 0, 39), "a shorter message sums differently");
    }

    @Test
    void errorTypesAreExactlyThoseOfRfc1122Section322() {
        for (int t = 0; t < 256; t++) {
            boolean want = t == 3 || t == 4 || t == 5 || t == 11 || t == 12;
            assertEquals(want, IcmpHeader.isError(t), "type " + t);
            if (want) {
                assertFalse(IcmpHeader.isQuery(t));
            }
        }
        assertTrue(IcmpHeader.isQuery(IcmpHeader.TYPE_ECHO_REQUEST));
        assertTrue(IcmpHeader.isQuery(IcmpHeader.TYPE_TIMESTAMP_REPLY));
        assertFalse(IcmpHeader.isQuery(42));
    }

    private boolean mayAnswer(int src, int dst, int protocol, int fragmentOffset, boolean mf, byte[] payload,
            boolean broadcast) {
        Ipv4Repr r = new Ipv4Repr(src, dst, protocol, payload.length, 64, 0, 0, 1, false, mf, fragmentOffset);
        byte[] b = new byte[r.length()];
        r.emitInto(seg(b), 0, true);
        System.arraycopy(payload, 0, b, 20, payload.length);
        assertEquals(WireStatus.OK, ip.wrap(seg(b), 0, b.length));
        return IcmpHeader.mayAnswerWithError(ip, broadcast);
    }

    @Test
    void errorsMayAnswerAUnicastUdpDatagramAndAnEchoRequest() {
        assertTrue(mayAnswer(A, B, 17, 0, false, new byte[8], false));
        assertTrue(mayAnswer(A, B, 1, 0, false, hex("0800000000000000"), false));
        assertTrue(mayAnswer(A, B, 17, 0, true, new byte[8], false), "a first fragment may be answered");
    }

    @Test
    void noErrorAboutAnIcmpErrorOrAnIcmpMessageOfUnknownType() {
        for (int t : new int[] {3, 4, 5, 11, 12}) {
            assertFalse(mayAnswer(A, B, 1, 0, false, new byte[] {(byte) t, 0, 0, 0, 0, 0, 0, 0}, false), "type " + t);
        }
        assertFalse(mayAnswer(A, B, 1, 0, false, hex("2a00000000000000"), false), "unknown type 42");
        assertFalse(mayAnswer(A, B, 1, 0, false, new byte[0], false), "ICMP too short to tell");
    }

    @Test
    void noErrorAboutANonFirstFragment() {
        assertFalse(mayAnswer(A, B, 17, 8, true, new byte[8], false));
        assertFalse(mayAnswer(A, B, 17, 1480, false, new byte[8], false));
    }

    @Test
    void noErrorAboutADatagramToBroadcastOrMulticast() {
        assertFalse(mayAnswer(A, Ipv4Address.BROADCAST, 17, 0, false, new byte[8], false));
        assertFalse(mayAnswer(A, Ipv4Address.parse("224.0.0.251"), 17, 0, false, new byte[8], false));
        assertFalse(mayAnswer(A, B, 17, 0, false, new byte[8], true), "link broadcast or directed broadcast");
    }

    @Test
    void noErrorToASourceThatIsNotASingleHost() {
        for (String src : new String[] {"0.0.0.0", "127.0.0.1", "224.1.1.1", "240.0.0.1", "255.255.255.255"}) {
            assertFalse(mayAnswer(Ipv4Address.parse(src), B, 17, 0, false, new byte[8], false), src);
        }
    }

    @Test
    void reprRejectsBadTypeCodeIdAndNullData() {
        assertThrows(IllegalArgumentException.class, () -> new IcmpRepr(256, 0, 0, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> new IcmpRepr(0, -1, 0, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> new IcmpRepr(0, 0, 0, null));
        assertThrows(IllegalArgumentException.class, () -> IcmpRepr.echoRequest(65536, 0, new byte[0]));
        assertThrows(IllegalArgumentException.class, () -> new IcmpRepr(8, 0, 0, new byte[65508]));
        assertThrows(IndexOutOfBoundsException.class,
                () -> IcmpRepr.echoRequest(1, 1, new byte[10]).emitInto(MemorySegment.ofArray(new byte[17]), 0));
    }

    @Test
    void reprEqualityComparesDataByContent() {
        assertEquals(IcmpRepr.echoReply(1, 2, hex("0102")), IcmpRepr.echoReply(1, 2, hex("0102")));
        assertEquals(IcmpRepr.echoReply(1, 2, hex("0102")).hashCode(), IcmpRepr.echoReply(1, 2, hex("0102")).hashCode());
        assertFalse(IcmpRepr.echoReply(1, 2, hex("0102")).equals(IcmpRepr.echoReply(1, 2, hex("0103"))));
        assertTrue(IcmpRepr.echoReply(1, 2, hex("0102")).toString().contains("0102"));
    }

    @Test
    void icmpInsideAFullDatagramEmittedFromReprsParsesBack() {
        IcmpRepr echo = IcmpRepr.echoRequest(0xBEEF, 65535, concat(PING_DATA, hex("ff")));
        Ipv4Repr head = new Ipv4Repr(A, B, Ipv4Header.PROTOCOL_ICMP, echo.length(), 64);
        byte[] b = new byte[head.length()];
        head.emitInto(seg(b), 0, true);
        echo.emitInto(seg(b), head.headerLength());
        wrapIcmpOf(b);
        assertEquals(head, Ipv4Repr.parse(ip));
        assertEquals(echo, IcmpRepr.parse(icmp));
        assertEquals(0xBEEF, IcmpRepr.parse(icmp).identifier());
        assertEquals(65535, IcmpRepr.parse(icmp).sequence());
    }
}
