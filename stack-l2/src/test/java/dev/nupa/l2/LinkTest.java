package dev.nupa.l2;

import static dev.nupa.device.FabricDevice.BACK_PRESSURED;
import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.l2.L2Fixture.bytes;
import static dev.nupa.l2.L2Fixture.seg;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricNode;
import dev.nupa.l2.L2Fixture.Recorder;

/** Two links on one shm fabric: sending, zero-copy claims, dispatch, drops by reason, MTU, capture hooks. */
class LinkTest {
    private final L2Fixture fx = new L2Fixture();
    private FabricNode nodeA;
    private FabricNode nodeB;
    private Link a;
    private Link b;
    private final Recorder ip = new Recorder();
    private final Recorder rdma = new Recorder();

    @BeforeEach
    void setUp() {
        fx.create(L2Fixture.jumbo());
        nodeA = fx.attach(0);
        nodeB = fx.attach(1);
        a = new Link(nodeA);
        b = new Link(nodeB);
        b.register(EtherType.IPV4, ip);
        b.register(EtherType.NUPA_RDMA, rdma);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private static int send(Link from, int to, int protocol, String text) {
        MemorySegment s = seg(text);
        return from.send(to, protocol, s, 0, (int) s.byteSize());
    }

    @Test
    void framesAreDispatchedByProtocol() {
        assertEquals(OK, send(a, 1, EtherType.IPV4, "ip one"));
        assertEquals(OK, send(a, 1, EtherType.NUPA_RDMA, "rdma one"));
        assertEquals(OK, send(a, 1, EtherType.IPV4, "ip two"));
        assertEquals(3, b.poll(10));
        assertEquals(List.of("ip one", "ip two"), ip.texts());
        assertEquals(List.of("rdma one"), rdma.texts());
        assertEquals(0, ip.packets.getFirst().source());

        LinkCounters cb = b.counters();
        assertEquals(2, cb.protocol(EtherType.IPV4).framesIn());
        assertEquals(12, cb.protocol(EtherType.IPV4).bytesIn());
        assertEquals(1, cb.protocol(EtherType.NUPA_RDMA).framesIn());
        assertEquals(8, cb.protocol(EtherType.NUPA_RDMA).bytesIn());
        assertEquals(0, cb.totalDrops());
        LinkCounters ca = a.counters();
        assertEquals(2, ca.protocol(EtherType.IPV4).framesOut());
        assertEquals(12, ca.protocol(EtherType.IPV4).bytesOut());
        assertEquals(1, ca.protocol(EtherType.NUPA_RDMA).framesOut());
        assertEquals(3, ca.framesOut());
        assertEquals(3 * 8 + 20, nodeA.counters().bytesSent(), "the device carries header + payload");
    }

    @Test
    void sendCopiesFromAnOffsetAndTheFrameCarriesTheHeader() {
        MemorySegment payload = seg("xxHELLOyy");
        assertEquals(OK, a.send(1, EtherType.IPV4, payload, 2, 5));
        Recorder raw = new Recorder();
        assertEquals(1, nodeB.poll(raw, 10));
        assertArrayEquals(new byte[] {0, 1, 0, 0, 8, 0, 0, 5, 'H', 'E', 'L', 'L', 'O'}, raw.packets.getFirst().data());
    }

    @Test
    void aFullMtuPayloadAndAnEmptyOneGoThrough() {
        byte[] big = new byte[Link.DEFAULT_MTU];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 31);
        }
        assertEquals(OK, a.send(1, EtherType.IPV4, MemorySegment.ofArray(big), 0, big.length));
        assertEquals(OK, a.send(1, EtherType.IPV4, MemorySegment.ofArray(big), 0, 0));
        assertEquals(2, b.poll(10));
        assertArrayEquals(big, ip.packets.get(0).data());
        assertEquals(0, ip.packets.get(1).data().length);
        assertThrows(IllegalArgumentException.class, () -> a.send(1, EtherType.IPV4, MemorySegment.ofArray(new byte[9001]), 0, 9001));
    }

    @Test
    void zeroCopyClaimWritesInPlace() {
        LinkClaim claim = new LinkClaim();
        assertEquals(OK, a.tryClaim(1, EtherType.NUPA_RDMA, 6, claim));
        assertTrue(claim.isActive());
        assertEquals(6, claim.payloadLength());
        assertEquals(1, claim.destination());
        claim.memory().asSlice(claim.payloadOffset(), 6).copyFrom(seg("direct"));
        assertEquals(0, b.poll(10), "nothing is visible before publish");
        assertEquals(OK, claim.publish());
        assertFalse(claim.isActive());
        assertEquals(1, b.poll(10));
        assertEquals(List.of("direct"), rdma.texts());
        assertEquals(1, a.counters().protocol(EtherType.NUPA_RDMA).framesOut());
        assertEquals(6, a.counters().protocol(EtherType.NUPA_RDMA).bytesOut());

        assertEquals(OK, a.tryClaim(1, EtherType.IPV4, 3, claim));
        assertThrows(IllegalStateException.class, () -> a.tryClaim(1, EtherType.IPV4, 3, claim));
        claim.abort();
        assertThrows(IllegalStateException.class, claim::publish);
        assertThrows(IllegalStateException.class, claim::payloadOffset);
        assertEquals(0, b.poll(10), "an aborted claim is not a frame");
        assertEquals(0, a.counters().protocol(EtherType.IPV4).framesOut());
        assertThrows(IllegalArgumentException.class, () -> a.tryClaim(1, EtherType.IPV4, 9001, claim));
    }

    @Test
    void aFullRingBackPressuresAndTheLinkCountsOnlyWhatWasSent() {
        for (int i = 0; i < 16; i++) {
            assertEquals(OK, send(a, 1, EtherType.IPV4, "f" + i));
        }
        assertEquals(BACK_PRESSURED, send(a, 1, EtherType.IPV4, "too many"));
        assertEquals(BACK_PRESSURED, a.tryClaim(1, EtherType.IPV4, 4, new LinkClaim()));
        assertEquals(16, a.counters().protocol(EtherType.IPV4).framesOut());
        assertEquals(8, b.poll(8));
        assertEquals(8, b.poll(100));
        assertEquals(16, ip.packets.size());
        assertEquals(OK, send(a, 1, EtherType.IPV4, "again"));
    }

    @Test
    void registeringAProtocolTwiceNamesIt() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.register(EtherType.IPV4, ip));
        assertTrue(e.getMessage().contains("IPv4"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> b.register(0x10000, ip));
        assertThrows(NullPointerException.class, () -> b.register(0x88B5, null));
    }

    @Test
    void aProtocolFirstSentThenRegisteredKeepsItsCounters() {
        assertEquals(OK, send(b, 0, 0x88B5, "out first"));
        a.register(0x88B5, ip);
        assertEquals(1, a.poll(10), "registered after the frame arrived but before the poll: delivered");
        assertEquals(List.of("out first"), ip.texts());
        assertEquals(1, b.counters().protocol(0x88B5).framesOut());
    }

    /** Frames written straight to the device by node 0, bypassing its link, to reach every drop reason. */
    @Test
    void everyDropReasonIsCounted() {
        FabricNode raw = nodeA;
        List<MemorySegment> frames = new ArrayList<>();
        frames.add(bytes(0, 1, 0, 0, 8));                                           // truncated: 5 bytes
        frames.add(bytes());                                                        // truncated: empty
        frames.add(bytes(0, 1, 0, 0, 8, 0, 0, 100, 1, 2, 3, 4));                    // length 100 in a 12-byte frame
        frames.add(bytes(0, 2, 0, 0, 8, 0, 0, 1, 9));                               // to node 2
        frames.add(bytes(0, 1, 0, 3, 8, 0, 0, 1, 9));                               // claims source 3
        frames.add(bytes(0, 1, 0, 0, 0x86, 0xDD, 0, 1, 9));                         // IPv6: no handler
        frames.add(bytes(0, 1, 0, 0, 8, 0, 0, 2, 'o', 'k', 0xEE, 0xEE));            // good, with trailing bytes
        for (MemorySegment f : frames) {
            assertEquals(OK, raw.offer(1, f, 0, (int) f.byteSize()));
        }
        assertEquals(frames.size(), b.poll(100), "poll counts every frame it took, dropped or not");
        assertEquals(List.of("ok"), ip.texts());
        LinkCounters c = b.counters();
        assertEquals(2, c.drops(DropReason.TRUNCATED));
        assertEquals(1, c.drops(DropReason.BAD_LENGTH));
        assertEquals(1, c.drops(DropReason.WRONG_DESTINATION));
        assertEquals(1, c.drops(DropReason.SOURCE_MISMATCH));
        assertEquals(1, c.drops(DropReason.UNKNOWN_PROTOCOL));
        assertEquals(0, c.drops(DropReason.HANDLER_ERROR));
        assertEquals(6, c.totalDrops());
        assertEquals(1, c.protocol(EtherType.IPV4).framesIn());
        assertEquals(2, c.protocol(EtherType.IPV4).bytesIn());
        assertEquals(0, nodeB.counters().handlerErrors(), "nothing escaped the link to the device");
    }

    @Test
    void aThrowingHandlerIsCountedAndTheLoopGoesOn() {
        Link c = new Link(fx.attach(2));
        Recorder after = new Recorder();
        c.register(EtherType.IPV4, (src, mem, off, len) -> {
            if (mem.get(ValueLayout.JAVA_BYTE, off) == 'x') {
                throw new IllegalStateException("handler bug");
            }
            if (mem.get(ValueLayout.JAVA_BYTE, off) == 'm') {
                throw new StackOverflowError("a handler out of stack");
            }
            after.onPacket(src, mem, off, len);
        });
        c.register(EtherType.NUPA_RDMA, (src, mem, off, len) -> {
            throw new AssertionError("another bug");
        });
        assertEquals(OK, send(a, 2, EtherType.IPV4, "x1"));
        assertEquals(OK, send(a, 2, EtherType.IPV4, "fine"));
        assertEquals(OK, send(a, 2, EtherType.NUPA_RDMA, "x2"));
        assertEquals(OK, send(a, 2, EtherType.IPV4, "m3"));
        assertEquals(OK, send(a, 2, EtherType.IPV4, "also fine"));
        assertEquals(5, assertDoesNotThrow(() -> c.poll(10)));
        assertEquals(List.of("fine", "also fine"), after.texts());
        assertEquals(3, c.counters().drops(DropReason.HANDLER_ERROR));
        assertEquals(4, c.counters().protocol(EtherType.IPV4).framesIn(), "handed to the handler, thrown or not");
    }

    @Test
    void mtuIsValidated() {
        assertEquals(9000, a.mtu());
        IllegalArgumentException low = assertThrows(IllegalArgumentException.class, () -> new Link(nodeA, 575));
        assertTrue(low.getMessage().contains("576") && low.getMessage().contains("RFC 791"), low.getMessage());
        assertEquals(576, new Link(nodeA, 576).mtu());
        assertEquals(9208, new Link(nodeA, 9208).mtu());
        IllegalArgumentException high = assertThrows(IllegalArgumentException.class, () -> new Link(nodeA, 9209));
        assertTrue(high.getMessage().contains("9216") && high.getMessage().contains("at most 9208"), high.getMessage());
        IllegalArgumentException tiny = assertThrows(IllegalArgumentException.class, () -> Link.checkMtu(9000, 256));
        assertTrue(tiny.getMessage().contains("at least 584"), tiny.getMessage());
        assertEquals(1500, Link.checkMtu(1500, 1508));
        assertEquals(65535, Link.checkMtu(65535, Link.frameFor(65535)));
        assertEquals(65600, Link.frameFor(65535), "the packet and the link header in whole cache lines");
        IllegalArgumentException huge = assertThrows(IllegalArgumentException.class, () -> Link.checkMtu(65536, 1 << 20));
        assertTrue(huge.getMessage().contains("RFC 791") && huge.getMessage().contains("at most 65535"), huge.getMessage());

        Link small = new Link(nodeA, 1500);
        assertThrows(IllegalArgumentException.class, () -> small.send(1, EtherType.IPV4, MemorySegment.ofArray(new byte[1501]), 0, 1501));
        assertEquals(OK, small.send(1, EtherType.IPV4, MemorySegment.ofArray(new byte[1500]), 0, 1500));
        assertThrows(IllegalArgumentException.class, () -> small.send(1, 0x10000, seg("x"), 0, 1));
        assertThrows(IllegalArgumentException.class, () -> small.send(1, EtherType.IPV4, seg("x"), 1, 1));
    }

    @Test
    void captureSeesBothDirectionsAndNullTurnsItOff() {
        record Seen(long ts, boolean out, int src, int dst, int protocol, String text) {
        }
        List<Seen> seen = new ArrayList<>();
        PacketCapture cap = (ts, out, src, dst, protocol, mem, off, len) -> seen.add(new Seen(ts, out, src, dst, protocol,
                new String(mem.asSlice(off, len).toArray(ValueLayout.JAVA_BYTE))));
        a.setCapture(cap);
        b.setCapture(cap);
        a.setCaptureClock(() -> 42L);
        b.setCaptureClock(() -> 43L);
        assertEquals(OK, send(a, 1, EtherType.IPV4, "seen"));
        LinkClaim claim = new LinkClaim();
        assertEquals(OK, a.tryClaim(1, EtherType.NUPA_RDMA, 5, claim));
        claim.memory().asSlice(claim.payloadOffset(), 5).copyFrom(seg("claim"));
        assertEquals(OK, claim.publish());
        assertEquals(2, b.poll(10));
        assertEquals(List.of(new Seen(42, true, 0, 1, 0x0800, "seen"), new Seen(42, true, 0, 1, 0x8915, "claim"),
                new Seen(43, false, 0, 1, 0x0800, "seen"), new Seen(43, false, 0, 1, 0x8915, "claim")), seen);

        a.setCapture(null);
        b.setCapture(null);
        assertNull(a.capture());
        assertEquals(OK, send(a, 1, EtherType.IPV4, "unseen"));
        assertEquals(1, b.poll(10));
        assertEquals(4, seen.size());

        b.setCapture((ts, out, src, dst, protocol, mem, off, len) -> {
            throw new IllegalStateException("capture bug");
        });
        assertEquals(OK, send(a, 1, EtherType.IPV4, "still delivered"));
        assertEquals(1, b.poll(10));
        assertEquals("still delivered", ip.texts().getLast());
        assertEquals(1, b.counters().captureErrors());
    }

    /**
     * Steady-state send, poll and dispatch allocate nothing. Measured with the thread's allocation
     * counter after a warm-up; the bound leaves room for a stray allocation by the JIT'ing runtime.
     */
    @Test
    void steadyStateAllocatesNothingPerFrame() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long[] sink = new long[1];
        b.setCapture(null);
        Link c = new Link(fx.attach(2));
        c.register(EtherType.IPV4, (src, mem, off, len) -> sink[0] += len);
        MemorySegment payload = MemorySegment.ofArray(new byte[64]);
        LinkClaim claim = new LinkClaim();
        Runnable round = () -> {
            for (int i = 0; i < 8; i++) {
                a.send(2, EtherType.IPV4, payload, 0, 64);
            }
            if (a.tryClaim(2, EtherType.IPV4, 64, claim) == OK) {
                claim.publish();
            }
            c.poll(64);
        };
        for (int i = 0; i < 30_000; i++) {
            round.run();
        }
        long tid = Thread.currentThread().threadId();
        long before = threads.getThreadAllocatedBytes(tid);
        int rounds = 20_000;
        for (int i = 0; i < rounds; i++) {
            round.run();
        }
        long allocated = threads.getThreadAllocatedBytes(tid) - before;
        long frames = rounds * 9L;
        assertTrue(allocated < frames / 10, allocated + " bytes allocated for " + frames + " frames");
        assertEquals((30_000L + rounds) * 9, c.counters().protocol(EtherType.IPV4).framesIn());
    }
}
