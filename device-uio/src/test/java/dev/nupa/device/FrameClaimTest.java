package dev.nupa.device;

import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricFixture.Collector;

/** Zero-copy sending: claim a slot, write the frame in place, publish or abort. */
class FrameClaimTest {
    private final FabricFixture fx = new FabricFixture();
    private FabricNode a;
    private FabricNode b;

    @BeforeEach
    void setUp() {
        Fabric fabric = fx.create(FabricFixture.small());
        a = fx.attach(fabric, 0);
        b = fx.attach(fabric, 1);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void claimWriteInPlaceAndPublish() {
        FrameClaim claim = new FrameClaim();
        assertEquals(OK, a.tryClaim(1, 100, claim));
        assertEquals(100, claim.length());
        assertEquals(1, claim.destination());
        MemorySegment m = claim.memory();
        assertTrue(claim.offset() >= 0 && claim.offset() + claim.length() <= m.byteSize());
        for (int i = 0; i < 100; i++) {
            m.set(ValueLayout.JAVA_BYTE, claim.offset() + i, (byte) (i ^ 0x5A));
        }
        Collector c = new Collector();
        assertEquals(0, b.poll(c, 10), "nothing is visible before publish");
        assertEquals(OK, claim.publish());
        assertEquals(1, b.poll(c, 10));
        byte[] got = c.frames.getFirst().data();
        assertEquals(100, got.length);
        for (int i = 0; i < 100; i++) {
            assertEquals((byte) (i ^ 0x5A), got[i]);
        }
        assertEquals(0, c.frames.getFirst().source());
        assertEquals(1, a.counters().framesSent());
        assertEquals(100, a.counters().bytesSent());
    }

    @Test
    void aClaimIsReusableAfterPublish() {
        FrameClaim claim = new FrameClaim();
        Collector c = new Collector();
        for (int round = 0; round < 3 * 8 + 1; round++) {
            assertEquals(OK, a.tryClaim(1, 4, claim));
            claim.memory().set(ValueLayout.JAVA_INT_UNALIGNED, claim.offset(), round);
            assertEquals(OK, claim.publish());
            assertEquals(1, b.poll(c, 10));
        }
        for (int round = 0; round < c.frames.size(); round++) {
            assertEquals(round, MemorySegment.ofArray(c.frames.get(round).data()).get(ValueLayout.JAVA_INT_UNALIGNED, 0));
        }
    }

    @Test
    void anAbortedClaimIsSkippedSilently() {
        FrameClaim claim = new FrameClaim();
        assertEquals(OK, send(a, 1, "before"));
        assertEquals(OK, a.tryClaim(1, 50, claim));
        claim.memory().set(ValueLayout.JAVA_BYTE, claim.offset(), (byte) 'X');
        FrameClaim other = new FrameClaim();
        assertEquals(OK, b.tryClaim(1, 5, other));
        other.memory().asSlice(other.offset(), 5).copyFrom(FabricFixture.seg("other"));
        claim.abort();
        assertEquals(OK, other.publish());
        assertEquals(OK, send(a, 1, "after"));
        Collector c = new Collector();
        assertEquals(3, b.poll(c, 10), "the aborted slot is not a frame");
        assertEquals(List.of("before", "other", "after"), c.texts());
        assertEquals(2, a.counters().framesSent(), "an abort is not a sent frame");
        assertEquals(0, a.counters().lateDrops());
        assertEquals(0, b.counters().handlerErrors());
        assertEquals(0, b.counters().corrupt());
        assertEquals(0, b.counters().stallSkips());
    }

    @Test
    void abortedSlotsDoNotCountAgainstThePollLimit() {
        FrameClaim claim = new FrameClaim();
        for (int i = 0; i < 3; i++) {
            assertEquals(OK, a.tryClaim(1, 8, claim));
            claim.abort();
        }
        assertEquals(OK, send(a, 1, "one"));
        assertEquals(OK, send(a, 1, "two"));
        Collector c = new Collector();
        assertEquals(1, b.poll(c, 1));
        assertEquals(List.of("one"), c.texts());
        assertEquals(1, b.poll(c, 1));
        assertEquals(List.of("one", "two"), c.texts());
    }

    @Test
    void aClaimMustBeFinishedBeforeItIsReused() {
        FrameClaim claim = new FrameClaim();
        assertEquals(OK, a.tryClaim(1, 8, claim));
        assertThrows(IllegalStateException.class, () -> a.tryClaim(1, 8, claim));
        assertEquals(OK, claim.publish());
        assertThrows(IllegalStateException.class, claim::publish, "publishing twice");
        assertThrows(IllegalStateException.class, claim::abort);
        assertThrows(IllegalStateException.class, () -> new FrameClaim().publish(), "a claim never made");
        assertEquals(1, b.poll(new Collector(), 10));
    }

    @Test
    void claimingOnAFullRingBackPressures() {
        FrameClaim claim = new FrameClaim();
        for (int i = 0; i < 8; i++) {
            assertEquals(OK, a.tryClaim(1, 8, claim));
            assertEquals(OK, claim.publish());
        }
        assertEquals(FabricDevice.BACK_PRESSURED, a.tryClaim(1, 8, claim));
        assertEquals(OK, a.tryClaim(0, 8, claim), "a back-pressured claim leaves the claim object usable");
        claim.abort();
        assertEquals(8, b.poll(new Collector(), 100));
        assertEquals(OK, a.tryClaim(1, 8, claim));
        claim.abort();
    }
}
