package dev.nupa.ip;

import static dev.nupa.ip.IpFixture.bytes;
import static dev.nupa.ip.IpFixture.ip;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.nupa.ip.wire.Checksum;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.UdpHeader;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.FaultPlan;
import dev.nupa.l2.FaultyDevice;

/** The IPv4 stack between nodes on one fabric, on virtual time: delivery, fragments, ICMP, bad input. */
class Ipv4StackTest {

    /** Builds a raw datagram: a 20-byte header (checksum filled) and {@code payload}. */
    static byte[] datagram(int src, int dst, int protocol, int ttl, int id, boolean mf, int fragOffset, byte[] payload) {
        byte[] b = new byte[20 + payload.length];
        MemorySegment s = MemorySegment.ofArray(b);
        Ipv4Header h = new Ipv4Header();
        h.wrapForWrite(s, 0, b.length);
        h.setVersionAndHeaderLength(20).setTotalLength(b.length).setIdentification(id)
                .setFlagsAndFragmentOffset(false, mf, fragOffset).setTtl(ttl).setProtocol(protocol)
                .setSourceAddress(src).setDestinationAddress(dst).fillChecksum();
        System.arraycopy(payload, 0, b, 20, payload.length);
        return b;
    }

    /** A UDP header and data with its checksum, as the payload of a datagram src > dst. */
    static byte[] udp(int src, int dst, int srcPort, int dstPort, byte[] data) {
        byte[] b = new byte[8 + data.length];
        MemorySegment s = MemorySegment.ofArray(b);
        System.arraycopy(data, 0, b, 8, data.length);
        UdpHeader u = new UdpHeader();
        u.wrapForWrite(s, 0, b.length);
        u.setSourcePort(srcPort).setDestinationPort(dstPort).setLength(b.length).fillChecksum(src, dst);
        return b;
    }

    static void inject(IpFixture f, int fromNode, int toNode, byte[] datagram) {
        assertEquals(0, f.links.get(fromNode).send(toNode, EtherType.IPV4, MemorySegment.ofArray(datagram), 0,
                datagram.length));
    }

    @Test
    void rfc792EchoRequestIsAnsweredWithTheSameIdentifierSequenceAndData() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1);
            List<int[]> replies = new ArrayList<>();
            List<byte[]> data = new ArrayList<>();
            a.addEchoListener(77, (from, seq, ttl, mem, off, len, now) -> {
                replies.add(new int[] {from, seq, ttl});
                data.add(mem.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE));
            });
            MemorySegment payload = bytes(56, 1);
            assertEquals(SendStatus.OK, a.sendEchoRequest(ip(1), 77, 3, payload, 0, 56));
            f.pump();
            assertEquals(1, replies.size());
            assertArrayEquals(new int[] {ip(1), 3, 64}, replies.get(0));
            assertArrayEquals(payload.toArray(ValueLayout.JAVA_BYTE), data.get(0));
            assertEquals(1, b.counter(IpCounter.ICMP_IN_ECHOS));
            assertEquals(1, b.counter(IpCounter.ICMP_OUT_ECHO_REPS));
        }
    }

    @Test
    void echoRequestLargerThanTheMtuIsFragmentedReassembledAndAnswered() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1);
            List<byte[]> data = new ArrayList<>();
            a.addEchoListener(1, (from, seq, ttl, mem, off, len, now) -> data.add(mem.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE)));
            MemorySegment payload = bytes(30_000, 2);
            assertEquals(SendStatus.OK, a.sendEchoRequest(ip(1), 1, 1, payload, 0, 30_000));
            f.pump();
            assertEquals(1, data.size());
            assertArrayEquals(payload.toArray(ValueLayout.JAVA_BYTE), data.get(0));
            assertEquals(1, b.counter(IpCounter.REASM_OKS));
            assertEquals(1, a.counter(IpCounter.REASM_OKS));
            assertEquals(4, a.counter(IpCounter.FRAG_CREATES)); // 30,028 bytes of ICMP in 8976-byte pieces
        }
    }

    @Test
    void rfc768UdpDatagramsOfEverySizeArriveWithTheirPortsAndData() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1);
            RecordingReceiver rb = new RecordingReceiver();
            b.bindUdp(7, rb);
            int[] sizes = {0, 1, 7, 8972, 8973, 17_952, 60_000, 65_507};
            for (int size : sizes) {
                assertEquals(SendStatus.OK, a.sendUdp(5000, ip(1), 7, bytes(size, size), 0, size));
                f.pump();
            }
            assertEquals(sizes.length, rb.got.size());
            for (int i = 0; i < sizes.length; i++) {
                assertArrayEquals(bytes(sizes[i], sizes[i]).toArray(ValueLayout.JAVA_BYTE), rb.got.get(i).data());
                assertEquals(5000, rb.got.get(i).sourcePort());
                assertEquals(ip(0), rb.got.get(i).source());
            }
            assertEquals(0, b.counter(IpCounter.UDP_IN_ERRORS));
            assertThrows(IllegalArgumentException.class, () -> a.sendUdp(5000, ip(1), 7, bytes(65_508, 0), 0, 65_508));
        }
    }

    @Test
    void datagramToOwnAddressLoopsThroughOwnRing() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            RecordingReceiver r = new RecordingReceiver();
            a.bindUdp(9, r);
            assertEquals(SendStatus.OK, a.sendUdp(9, ip(0), 9, bytes(20_000, 3), 0, 20_000));
            f.pump();
            assertEquals(1, r.got.size());
        }
    }

    @Test
    void rfc1122ClosedUdpPortIsAnsweredWithPortUnreachableDeliveredToTheSender() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1);
            RecordingReceiver ra = new RecordingReceiver();
            int port = a.bindUdp(0, ra);
            assertTrue(port >= Ipv4Stack.EPHEMERAL_FIRST);
            a.sendUdp(port, ip(1), 4242, bytes(10, 0), 0, 10);
            f.pump();
            assertEquals(1, b.counter(IpCounter.UDP_NO_PORTS));
            assertEquals(1, b.counter(IpCounter.ICMP_OUT_DEST_UNREACHS));
            assertEquals(List.of(new RecordingReceiver.Error(3, 3, ip(1), 4242)), ra.errors);
        }
    }

    @Test
    void unknownProtocolIsAnsweredWithProtocolUnreachable() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1);
            inject(f, 0, 1, datagram(ip(0), ip(1), 253, 64, 1, false, 0, new byte[12]));
            f.pump();
            assertEquals(1, b.counter(IpCounter.IN_UNKNOWN_PROTOS));
            assertEquals(1, b.counter(IpCounter.ICMP_OUT_DEST_UNREACHS));
            assertEquals(1, a.counter(IpCounter.ICMP_IN_DEST_UNREACHS));
        }
    }

    @Test
    void rfc1122NoIcmpErrorAboutAnIcmpErrorNorAboutABroadcast() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            f.node(0);
            Ipv4Stack b = f.node(1);
            // A port-unreachable error sent to b about a datagram b never sent, to b's closed port.
            byte[] icmp = new byte[8 + 28];
            icmp[0] = 3;
            icmp[1] = 3;
            byte[] inner = datagram(ip(1), ip(0), 17, 64, 9, false, 0, udp(ip(1), ip(0), 1, 2, new byte[0]));
            System.arraycopy(inner, 0, icmp, 8, 28);
            MemorySegment s = MemorySegment.ofArray(icmp);
            s.set(Checksum.BE_SHORT, 2, (short) Checksum.compute(s, 0, icmp.length));
            inject(f, 0, 1, datagram(ip(0), ip(1), 1, 64, 2, false, 0, icmp));
            // A UDP datagram to the subnet broadcast, for a closed port.
            int bcast = Ipv4Address.of(10, 0, 0, 255);
            inject(f, 0, 1, datagram(ip(0), bcast, 17, 64, 3, false, 0, udp(ip(0), bcast, 1, 2, new byte[4])));
            f.pump();
            assertEquals(1, b.counter(IpCounter.ICMP_IN_DEST_UNREACHS));
            assertEquals(1, b.counter(IpCounter.UDP_NO_PORTS));
            assertEquals(0, b.counter(IpCounter.ICMP_OUT_MSGS));
        }
    }

    @Test
    void rfc1812IcmpErrorsAreRateLimited() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1, d -> d, c -> c.withIcmpErrorRate(10, 3));
            for (int i = 0; i < 20; i++) {
                a.sendUdp(1000, ip(1), 4000, bytes(4, i), 0, 4);
            }
            f.pump();
            assertEquals(20, b.counter(IpCounter.UDP_NO_PORTS));
            assertEquals(3, b.counter(IpCounter.ICMP_OUT_DEST_UNREACHS)); // the burst, then nothing at the same instant
            assertEquals(17, b.counter(IpCounter.ICMP_OUT_RATE_LIMITED));
            f.advance(100 * IpFixture.MS); // one token a tenth of a second
            a.sendUdp(1000, ip(1), 4000, bytes(4, 0), 0, 4);
            f.pump();
            assertEquals(4, b.counter(IpCounter.ICMP_OUT_DEST_UNREACHS));
        }
    }

    @Test
    void malformedDatagramsAreCountedAndDroppedAndTheNextOneStillArrives() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            f.node(0);
            Ipv4Stack b = f.node(1);
            RecordingReceiver rb = new RecordingReceiver();
            b.bindUdp(7, rb);
            byte[] good = datagram(ip(0), ip(1), 17, 64, 1, false, 0, udp(ip(0), ip(1), 1, 7, new byte[] {1, 2, 3}));
            byte[] badChecksum = good.clone();
            badChecksum[10] ^= 1;
            byte[] badVersion = good.clone();
            badVersion[0] = 0x65;
            byte[] truncated = java.util.Arrays.copyOf(good, 25);
            byte[] shortIhl = good.clone();
            shortIhl[0] = 0x44;
            byte[] badUdpChecksum = good.clone();
            badUdpChecksum[good.length - 1] ^= 0x40;
            byte[] broadcastSource = datagram(Ipv4Address.BROADCAST, ip(1), 17, 64, 1, false, 0,
                    udp(Ipv4Address.BROADCAST, ip(1), 1, 7, new byte[1]));
            byte[] notForUs = datagram(ip(0), ip(2), 17, 64, 1, false, 0, udp(ip(0), ip(2), 1, 7, new byte[1]));
            byte[] ttlZero = datagram(ip(0), ip(1), 17, 0, 1, false, 0, udp(ip(0), ip(1), 1, 7, new byte[] {9}));
            for (byte[] d : List.of(badChecksum, badVersion, truncated, shortIhl, badUdpChecksum, broadcastSource, notForUs,
                    ttlZero, good)) {
                inject(f, 0, 1, d);
            }
            f.pump();
            assertEquals(3, b.counter(IpCounter.IN_HDR_ERRORS)); // checksum, version, IHL
            assertEquals(1, b.counter(IpCounter.IN_TRUNCATED));
            assertEquals(1, b.counter(IpCounter.UDP_IN_ERRORS));
            assertEquals(2, b.counter(IpCounter.IN_ADDR_ERRORS));
            // RFC 1122 3.2.1.7: TTL 0 does not stop delivery to the host itself.
            assertEquals(2, rb.got.size());
            assertArrayEquals(new byte[] {9}, rb.got.get(0).data());
            assertArrayEquals(new byte[] {1, 2, 3}, rb.got.get(1).data());
        }
    }

    @Test
    void rfc815FragmentsInAnyOrderWithDuplicatesReassembleOnce() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            f.node(0);
            Ipv4Stack b = f.node(1);
            RecordingReceiver rb = new RecordingReceiver();
            b.bindUdp(7, rb);
            byte[] data = bytes(3000, 5).toArray(ValueLayout.JAVA_BYTE);
            byte[] whole = udp(ip(0), ip(1), 1, 7, data);
            List<byte[]> frags = fragments(whole, 1000, 42);
            int[] order = {3, 1, 1, 0, 2, 3, 0};
            for (int i : order) {
                inject(f, 0, 1, frags.get(i));
            }
            f.pump();
            assertEquals(1, rb.got.size());
            assertArrayEquals(data, rb.got.get(0).data());
            assertEquals(1, b.counter(IpCounter.REASM_OKS));
            assertEquals(1, b.counter(IpCounter.REASM_DUPLICATES)); // the second 1; later 3 and 0 start a new datagram
        }
    }

    /** Splits a transport payload into datagrams of {@code per} bytes (a multiple of 8) with one identification. */
    static List<byte[]> fragments(byte[] payload, int per, int id) {
        List<byte[]> out = new ArrayList<>();
        for (int at = 0; at < payload.length; at += per) {
            int n = Math.min(per, payload.length - at);
            out.add(datagram(ip(0), ip(1), 17, 64, id, at + n < payload.length, at,
                    java.util.Arrays.copyOfRange(payload, at, at + n)));
        }
        return out;
    }

    @Test
    void overlappingFragmentsDropTheWholeDatagram() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            f.node(0);
            Ipv4Stack b = f.node(1);
            RecordingReceiver rb = new RecordingReceiver();
            b.bindUdp(7, rb);
            byte[] whole = udp(ip(0), ip(1), 1, 7, bytes(2000, 6).toArray(ValueLayout.JAVA_BYTE));
            List<byte[]> frags = fragments(whole, 1000, 7);
            inject(f, 0, 1, frags.get(0));
            // A rogue fragment at offset 992 (overlaps the last 8 bytes of the first) with other bytes.
            inject(f, 0, 1, datagram(ip(0), ip(1), 17, 64, 7, true, 992, new byte[16]));
            inject(f, 0, 1, frags.get(1));
            inject(f, 0, 1, frags.get(2));
            f.pump();
            assertEquals(0, rb.got.size());
            assertEquals(1, b.counter(IpCounter.REASM_OVERLAPS));
            assertEquals(0, b.counter(IpCounter.REASM_OKS));
        }
    }

    @Test
    void fragmentsPastSixtyFourKibOrOddSizedAreRefused() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            f.node(0);
            Ipv4Stack b = f.node(1);
            inject(f, 0, 1, datagram(ip(0), ip(1), 17, 64, 8, false, 65_528, new byte[16])); // "ping of death"
            inject(f, 0, 1, datagram(ip(0), ip(1), 17, 64, 9, true, 0, new byte[13])); // MF with 13 bytes
            f.pump();
            assertEquals(2, b.counter(IpCounter.REASM_BAD_FRAGMENTS));
            assertEquals(0, b.counter(IpCounter.REASM_OKS));
        }
    }

    @Test
    void rfc1122IncompleteReassemblyTimesOutWithTimeExceededWhenFragmentZeroCame() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack b = f.node(1, d -> d, c -> c.withReassembly(2_000 * IpFixture.MS, 4));
            List<byte[]> frags = fragments(udp(ip(0), ip(1), 1, 7, new byte[2000]), 1000, 11);
            inject(f, 0, 1, frags.get(0));
            inject(f, 0, 1, frags.get(2));
            List<byte[]> noZero = fragments(udp(ip(0), ip(1), 1, 7, new byte[2000]), 1000, 12);
            inject(f, 0, 1, noZero.get(1));
            f.pump();
            f.advance(1_999 * IpFixture.MS);
            f.pump();
            assertEquals(0, b.counter(IpCounter.REASM_TIMEOUTS));
            f.advance(2 * IpFixture.MS);
            f.pump();
            assertEquals(2, b.counter(IpCounter.REASM_TIMEOUTS));
            assertEquals(1, b.counter(IpCounter.ICMP_OUT_TIME_EXCDS));
            assertEquals(1, a.counter(IpCounter.ICMP_IN_TIME_EXCDS));
        }
    }

    @Test
    void reassemblyMemoryIsBoundedByEvictingTheOldest() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            f.node(0);
            Ipv4Stack b = f.node(1, d -> d, c -> c.withReassembly(30_000 * IpFixture.MS, 4));
            for (int id = 0; id < 50; id++) {
                inject(f, 0, 1, fragments(udp(ip(0), ip(1), 1, 7, new byte[2000]), 1000, id).get(1));
                f.pump();
            }
            assertEquals(46, b.counter(IpCounter.REASM_EVICTIONS));
        }
    }

    @Test
    void rfc1812ForwardingRouterDecrementsTtlAndAnswersExpiredTtlWithTimeExceeded() throws Exception {
        try (IpFixture f = new IpFixture(3)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack r = f.node(1, d -> d, c -> c.withForwarding(true));
            Ipv4Stack c = f.node(2);
            // a reaches 10.9.0.0/16 through r; c is given that address's route back via r too.
            int far = Ipv4Address.of(10, 9, 0, 1);
            a.routes().add(new Route(Ipv4Address.of(10, 9, 0, 0), 16, ip(1)));
            r.routes().add(new Route(Ipv4Address.of(10, 9, 0, 0), 16, ip(2)));
            // c answers for the far address only through its route table: c holds ip(2), so the
            // forwarded datagram to `far` reaches c, which is not `far` and does not forward: counted.
            a.sendUdp(1, far, 7, bytes(100, 1), 0, 100);
            f.pump();
            assertEquals(1, r.counter(IpCounter.FORW_DATAGRAMS));
            assertEquals(1, c.counter(IpCounter.IN_ADDR_ERRORS));
            // TTL 1 at the router: time exceeded back to a.
            inject(f, 0, 1, datagram(ip(0), far, 17, 1, 5, false, 0, udp(ip(0), far, 1, 7, new byte[4])));
            f.pump();
            assertEquals(1, r.counter(IpCounter.FORW_TTL_EXCEEDED));
            assertEquals(1, a.counter(IpCounter.ICMP_IN_TIME_EXCDS));
        }
    }

    @Test
    void rfc1191_routerAnswersATooBigDontFragmentDatagramWithFragmentationNeededAndItsMtu() throws Exception {
        try (IpFixture f = new IpFixture(3)) {
            Ipv4Stack a = f.node(0);
            Ipv4Stack r = f.node(1, 1500, d -> d, c -> c.withForwarding(true)); // a router whose link takes 1500
            f.node(2);
            int far = Ipv4Address.of(10, 9, 0, 1);
            a.routes().add(new Route(Ipv4Address.of(10, 9, 0, 0), 16, ip(1)));
            r.routes().add(new Route(Ipv4Address.of(10, 9, 0, 0), 16, ip(2)));
            RecordingReceiver ra = new RecordingReceiver();
            a.bindUdp(1, ra);
            byte[] payload = udp(ip(0), far, 1, 7, new byte[4000]);
            byte[] d = datagram(ip(0), far, 17, 64, 77, false, 0, payload);
            d[6] |= 0x40; // DF
            MemorySegment seg = MemorySegment.ofArray(d);
            seg.set(Checksum.BE_SHORT, 10, (short) 0);
            seg.set(Checksum.BE_SHORT, 10, (short) Checksum.compute(seg, 0, 20));
            inject(f, 0, 1, d);
            f.pump();
            assertEquals(1, r.counter(IpCounter.FRAG_FAILS));
            assertEquals(List.of(new RecordingReceiver.Error(3, 4, far, 7)), ra.errors, "fragmentation needed, to the sender");
            // Without DF the router fragments to its MTU and forwards.
            inject(f, 0, 1, datagram(ip(0), far, 17, 64, 78, false, 0, payload));
            f.pump();
            assertEquals(1, r.counter(IpCounter.FORW_DATAGRAMS));
            assertEquals(1, r.counter(IpCounter.FRAG_OKS));
        }
    }

    @Test
    void unroutableAndUnboundDestinationsFailTheSendWithAReason() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            assertEquals(SendStatus.NO_ROUTE, a.sendUdp(1, Ipv4Address.of(192, 168, 1, 1), 7, bytes(1, 0), 0, 1));
            assertEquals(SendStatus.NO_NEIGHBOR, a.sendUdp(1, Ipv4Address.of(10, 0, 0, 99), 7, bytes(1, 0), 0, 1));
            assertEquals(2, a.counter(IpCounter.OUT_NO_ROUTES));
            assertTrue(SendStatus.describe(SendStatus.NO_NEIGHBOR).contains("unreachable"));
        }
    }

    @Test
    void portInUseAndBadConfigurationGetErrorsThatNameTheProblem() throws Exception {
        try (IpFixture f = new IpFixture(2)) {
            Ipv4Stack a = f.node(0);
            a.bindUdp(53, new RecordingReceiver());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.bindUdp(53, new RecordingReceiver()));
            assertTrue(e.getMessage().contains("53 is already in use"), e.getMessage());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> IpConfig.parse("10.0.0.0/24")).getMessage()
                .contains("network or broadcast"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> IpConfig.parse("10.0.0.1/33")).getMessage()
                .contains("outside 0..32"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Route.parse("10.0.0.1/24 via 10.0.0.2")).getMessage()
                .contains("host bits"));
    }

    @Test
    void fragmentedDatagramsSurviveReorderingAndDuplicationAndLossOnlyLosesWholeDatagrams() throws Exception {
        FaultPlan plan = FaultPlan.NONE.withReorder(0.2).withDuplicate(0.1);
        for (double loss : new double[] {0.0, 0.05}) {
            try (IpFixture f = new IpFixture(2, 256)) {
                Ipv4Stack a = f.node(0);
                Ipv4Stack b = f.node(1, d -> FaultyDevice.receiving(d, 1234, plan.withDrop(loss)), c -> c);
                RecordingReceiver rb = new RecordingReceiver();
                b.bindUdp(7, rb);
                java.util.Random rnd = new java.util.Random(99);
                int sent = 300;
                java.util.Map<Integer, byte[]> bySize = new java.util.HashMap<>();
                for (int i = 0; i < sent; i++) {
                    int size = 4 + rnd.nextInt(60_000);
                    byte[] d = bytes(size, i).toArray(ValueLayout.JAVA_BYTE);
                    MemorySegment.ofArray(d).set(ValueLayout.JAVA_INT_UNALIGNED, 0, i);
                    bySize.put(i, d);
                    assertEquals(SendStatus.OK, a.sendUdp(1, ip(1), 7, MemorySegment.ofArray(d), 0, size));
                    f.pump();
                }
                f.advance(60_000 * IpFixture.MS);
                f.pump();
                java.util.Set<Integer> seen = new java.util.HashSet<>();
                for (RecordingReceiver.Got g : rb.got) {
                    int i = MemorySegment.ofArray(g.data()).get(ValueLayout.JAVA_INT_UNALIGNED, 0);
                    assertArrayEquals(bySize.get(i), g.data(), "datagram " + i + " arrived changed");
                    seen.add(i);
                }
                if (loss == 0) {
                    assertEquals(sent, seen.size(), "no loss: every datagram arrives; " + b.counters());
                } else {
                    assertTrue(seen.size() < sent && seen.size() > sent / 3, "some lost, most arrive: " + seen.size());
                }
                assertEquals(0, b.counter(IpCounter.UDP_IN_ERRORS));
                assertEquals(0, b.counter(IpCounter.REASM_OVERLAPS));
            }
        }
    }
}
