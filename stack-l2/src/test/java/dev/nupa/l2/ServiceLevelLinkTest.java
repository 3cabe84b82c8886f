package dev.nupa.l2;

import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.l2.L2Fixture.seg;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.l2.L2Fixture.Recorder;

/** Two nodes on a fabric of two rings per node: frames of two service levels land on two rings, counted per ring. */
class ServiceLevelLinkTest {
    private final L2Fixture fx = new L2Fixture();

    @AfterEach
    void cleanup() {
        fx.close();
    }

    private static FabricGeometry twoRings() {
        return new FabricGeometry(4, 2, 16, 1024, 8, 64 * 1024, 10 * L2Fixture.MS, 100 * L2Fixture.MS, 10_000 * L2Fixture.MS);
    }

    private static Link link(FabricNode n) {
        return new Link(n, Link.MIN_MTU);
    }

    private static int send(Link from, int to, String text, int level) {
        MemorySegment s = seg(text);
        return from.send(to, EtherType.IPV4, s, 0, (int) s.byteSize(), level);
    }

    @Test
    void twoLevelsLandOnTwoRingsAndTheHighOneIsServedFirst() {
        fx.create(twoRings());
        FabricNode na = fx.attach(0);
        FabricNode nb = fx.attach(1);
        Link a = link(na);
        Link b = link(nb);
        Recorder got = new Recorder();
        b.register(EtherType.IPV4, got);
        assertEquals(2, a.rings());

        assertEquals(OK, send(a, 1, "low 1", 0));
        assertEquals(OK, send(a, 1, "low 2", 7));
        assertEquals(OK, send(a, 1, "high 1", 8));
        assertEquals(OK, send(a, 1, "high 2", 15));
        // Each ring of node 1 holds what its levels sent: read them through the device, ring by ring.
        Recorder ring0 = new Recorder();
        Recorder ring1 = new Recorder();
        assertEquals(2, nb.poll(1, ring1, 16));
        assertEquals(2, nb.poll(0, ring0, 16));
        assertEquals(2, ring0.packets.size());
        assertEquals(2, ring1.packets.size());

        assertEquals(OK, send(a, 1, "low 3", 0));
        assertEquals(OK, send(a, 1, "high 3", 15));
        assertEquals(2, b.poll(16));
        assertEquals(List.of("high 3", "low 3"), got.texts(), "the higher ring first, though its frame came later");
        LinkCounters c = b.counters();
        assertEquals(List.of(1L, 1L), c.ringFrames());
        assertEquals(1, c.ringFrames(0));
        assertEquals(1, c.ringFrames(1));
        assertEquals(0, c.ringFrames(5), "a ring the node does not have");
    }

    @Test
    void aSharedMapPutsEveryLevelOnRingZero() {
        fx.create(twoRings());
        Link a = link(fx.attach(0));
        Link b = link(fx.attach(1));
        Recorder got = new Recorder();
        b.register(EtherType.IPV4, got);
        a.setServiceLevels(ServiceLevels.shared(2));
        assertEquals(OK, send(a, 1, "low", 0));
        assertEquals(OK, send(a, 1, "high", 15));
        assertEquals(2, b.poll(16));
        assertEquals(List.of("low", "high"), got.texts());
        assertEquals(List.of(2L, 0L), b.counters().ringFrames());
    }

    @Test
    void aLowRingIsServedWhileTheHighRingFloods() {
        fx.create(twoRings());
        Link a = link(fx.attach(0));
        Link b = link(fx.attach(1));
        Recorder got = new Recorder();
        b.register(EtherType.IPV4, got);
        assertEquals(OK, send(a, 1, "low", 0));
        // Keep the high ring full through every poll: the low frame still comes out within one cycle of rounds.
        int polls = 0;
        while (b.counters().ringFrames(0) == 0) {
            while (send(a, 1, "high", 15) == OK) {
                // fill ring 1 up
            }
            b.poll(8);
            polls++;
            assertTrue(polls <= RingPolicy.DEFAULT_LOWER_EVERY, "the low ring waited " + polls + " polls");
        }
        assertTrue(got.texts().contains("low"));
    }

    @Test
    void sendingAtLevelsAndTheScheduledPollAllocateNothingInSteadyState() {
        fx.create(twoRings());
        Link a = link(fx.attach(0));
        Link b = link(fx.attach(1));
        long[] got = {0};
        b.register(EtherType.IPV4, (src, mem, off, len) -> got[0]++);
        MemorySegment payload = MemorySegment.ofArray(new byte[64]);
        LinkClaim claim = new LinkClaim();
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long allocated = -1;
        long sent = 0;
        // Some round of 5,000 allocates nothing at all once the JIT has compiled the path (as StackZeroAllocationTest).
        for (int round = 0; round < 20 && allocated != 0; round++) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 5_000; i++) {
                sent += a.send(1, EtherType.IPV4, payload, 0, 64, i & 15) == OK ? 1 : 0;
                if (a.tryClaim(1, EtherType.IPV4, 64, 15 - (i & 15), claim) == OK) {
                    sent += claim.publish() == OK ? 1 : 0;
                }
                while (b.poll(16) > 0) {
                    // until quiet
                }
            }
            allocated = threads.getCurrentThreadAllocatedBytes() - before;
        }
        assertEquals(0, allocated, "bytes allocated by 5,000 rounds of sends at two levels and scheduled polls, after 20 tries");
        assertEquals(sent, got[0]);
        assertTrue(b.counters().ringFrames(0) > 0 && b.counters().ringFrames(1) > 0, b.counters().ringFrames().toString());
    }

    @Test
    void aMapOrPolicyForAnotherRingCountIsRefused() {
        fx.create(twoRings());
        Link a = link(fx.attach(0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.setServiceLevels(ServiceLevels.defaults(4)));
        assertTrue(e.getMessage().contains("has 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.setRingPolicy(RingPolicy.defaults(3)));
    }

    @Test
    void oneRingCountsEveryFrameOnRingZero() {
        fx.create(twoRings().withRingsPerNode(1));
        Link a = link(fx.attach(0));
        Link b = link(fx.attach(1));
        b.register(EtherType.IPV4, new Recorder());
        assertEquals(OK, send(a, 1, "x", 15));
        assertEquals(OK, send(a, 1, "y", 0));
        assertEquals(2, b.poll(16));
        assertEquals(List.of(2L), b.counters().ringFrames());
    }
}
