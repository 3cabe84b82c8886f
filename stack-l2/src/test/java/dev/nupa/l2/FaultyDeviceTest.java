package dev.nupa.l2;

import static dev.nupa.device.FabricDevice.BACK_PRESSURED;
import static dev.nupa.device.FabricDevice.OK;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricNode;
import dev.nupa.l2.FaultyDevice.FaultCounters;
import dev.nupa.l2.L2Fixture.Recorder;

/**
 * The fault-injecting device between two raw nodes: rates roughly as configured, counts exact,
 * transparent with no faults, deterministic per seed.
 */
class FaultyDeviceTest {
    private static final int N = 4000;
    private static final int FRAME = 64;
    private static final long SEED = 0x5EEDL;

    private final L2Fixture fx = new L2Fixture();
    private FabricNode a;
    private FabricNode b;

    @BeforeEach
    void setUp() {
        fx.create(L2Fixture.small());
        a = fx.attach(0);
        b = fx.attach(1);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    /** Frame i: its sequence number (4 bytes) then a pattern that depends on it. */
    private static MemorySegment frame(int seq) {
        MemorySegment m = MemorySegment.ofArray(new byte[FRAME]);
        m.set(ValueLayout.JAVA_INT_UNALIGNED, 0, seq);
        for (int i = 4; i < FRAME; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) (seq * 7 + i));
        }
        return m;
    }

    private static int seq(byte[] data) {
        return MemorySegment.ofArray(data).get(ValueLayout.JAVA_INT_UNALIGNED, 0);
    }

    private static boolean intact(byte[] data) {
        return data.length == FRAME && java.util.Arrays.equals(data, frame(seq(data)).toArray(ValueLayout.JAVA_BYTE));
    }

    /** Sends N frames from {@code sender} to node 1 in bursts, polling {@code receiver} between them, then drains it. */
    private static Recorder exchange(FabricDeviceLike sender, dev.nupa.device.FabricDevice receiver, int limit) {
        Recorder r = new Recorder();
        int seq = 0;
        while (seq < N) {
            for (int i = 0; i < 16 && seq < N; i++) {
                MemorySegment f = frame(seq);
                int rc = sender.offer(1, f, 0, FRAME);
                if (rc == BACK_PRESSURED) {
                    break;
                }
                assertEquals(OK, rc);
                seq++;
            }
            receiver.poll(r, limit);
            sender.poll();
        }
        for (int i = 0; i < 3 * FaultyDevice.REORDER_MAX_POLLS; i++) {
            sender.poll();
            receiver.poll(r, limit);
        }
        return r;
    }

    /** The sending side: a raw node or a faulty device, which needs polls to release held frames. */
    private interface FabricDeviceLike {
        int offer(int destination, MemorySegment source, long offset, int length);

        void poll();
    }

    private FabricDeviceLike raw() {
        return new FabricDeviceLike() {
            public int offer(int d, MemorySegment s, long o, int l) {
                return a.offer(d, s, o, l);
            }

            public void poll() {
            }
        };
    }

    private static FabricDeviceLike faulty(FaultyDevice f) {
        return new FabricDeviceLike() {
            public int offer(int d, MemorySegment s, long o, int l) {
                return f.offer(d, s, o, l);
            }

            public void poll() {
                f.poll((src, mem, off, len) -> { }, 64);
            }
        };
    }

    private FaultCounters receiveWith(FaultPlan plan, Recorder[] out) {
        FaultyDevice rx = FaultyDevice.receiving(b, SEED, plan);
        out[0] = exchange(raw(), rx, 64);
        FaultCounters c = rx.receiveFaults();
        assertEquals(0, c.held(), "everything held was released");
        assertEquals(N - c.dropped() + c.duplicated(), c.passed(), "passed = in - dropped + duplicated: " + c);
        assertEquals(c.passed(), out[0].packets.size(), "the handler saw every frame passed");
        return c;
    }

    private static void assertRate(long count, double rate, String what) {
        double expected = rate * N;
        assertTrue(Math.abs(count - expected) < 0.25 * expected, what + ": " + count + " of " + N + ", expected about " + expected);
    }

    private static List<Integer> seqs(Recorder r) {
        return r.packets.stream().map(p -> seq(p.data())).toList();
    }

    @Test
    void noFaultsIsTransparent() {
        FaultyDevice rx = new FaultyDevice(b, SEED, FaultPlan.NONE, FaultPlan.NONE);
        FaultyDevice tx = new FaultyDevice(a, SEED, FaultPlan.NONE, FaultPlan.NONE);
        Recorder r = exchange(faulty(tx), rx, 64);
        assertEquals(N, r.packets.size());
        for (int i = 0; i < N; i++) {
            assertEquals(i, seq(r.packets.get(i).data()));
            assertTrue(intact(r.packets.get(i).data()));
            assertEquals(0, r.packets.get(i).source());
        }
        assertEquals(new FaultCounters(N, 0, 0, 0, 0, 0, 0, 0, 0, 0), rx.receiveFaults());
        assertEquals(new FaultCounters(N, 0, 0, 0, 0, 0, 0, 0, 0, 0), tx.sendFaults());
        assertEquals(0, rx.sendFaults().passed());
        assertEquals(1, rx.address());
        assertEquals(b.geometry(), rx.geometry());
        assertEquals(b.maxFrame(), rx.maxFrame());
        assertTrue(rx.isUp(0));
        assertEquals(N, b.counters().framesReceived(), "the wrapped device did the work");
    }

    @Test
    void dropsRoughlyAtTheRateAndCountsExactly() {
        Recorder[] r = new Recorder[1];
        FaultCounters c = receiveWith(FaultPlan.NONE.withDrop(0.1), r);
        assertRate(c.dropped(), 0.1, "dropped");
        List<Integer> s = seqs(r[0]);
        for (int i = 1; i < s.size(); i++) {
            assertTrue(s.get(i) > s.get(i - 1), "order kept");
        }
        assertTrue(r[0].packets.stream().allMatch(p -> intact(p.data())));
    }

    @Test
    void duplicatesRoughlyAtTheRate() {
        Recorder[] r = new Recorder[1];
        FaultCounters c = receiveWith(FaultPlan.NONE.withDuplicate(0.1), r);
        assertRate(c.duplicated(), 0.1, "duplicated");
        Map<Integer, Integer> times = new HashMap<>();
        seqs(r[0]).forEach(s -> times.merge(s, 1, Integer::sum));
        assertEquals(N, times.size(), "every frame arrived");
        assertEquals(c.duplicated(), times.values().stream().filter(t -> t == 2).count());
        assertTrue(times.values().stream().allMatch(t -> t <= 2));
    }

    @Test
    void reordersRoughlyAtTheRate() {
        Recorder[] r = new Recorder[1];
        FaultCounters c = receiveWith(FaultPlan.NONE.withReorder(0.1), r);
        assertRate(c.reordered(), 0.1, "reordered");
        List<Integer> s = seqs(r[0]);
        assertEquals(N, s.stream().distinct().count());
        long inversions = 0;
        for (int i = 1; i < s.size(); i++) {
            if (s.get(i) < s.get(i - 1)) {
                inversions++;
            }
        }
        assertTrue(inversions > 0.5 * c.reordered() && inversions <= c.reordered(), inversions + " inversions, " + c);
    }

    @Test
    void corruptsOneByteRoughlyAtTheRate() {
        Recorder[] r = new Recorder[1];
        FaultCounters c = receiveWith(FaultPlan.NONE.withCorrupt(0.1, 4), r);
        assertRate(c.corrupted(), 0.1, "corrupted");
        long bad = r[0].packets.stream().filter(p -> !intact(p.data())).count();
        assertEquals(c.corrupted(), bad, "each corrupted frame differs, the others are intact");
        for (var p : r[0].packets) {
            byte[] want = frame(seq(p.data())).toArray(ValueLayout.JAVA_BYTE);
            int diff = 0;
            for (int i = 0; i < FRAME; i++) {
                diff += want[i] != p.data()[i] ? 1 : 0;
            }
            assertTrue(diff <= 1, "at most one byte flipped");
        }
        assertEquals(List.copyOf(new java.util.TreeSet<>(seqs(r[0]))), seqs(r[0]), "nothing else happened");
    }

    @Test
    void delaysByPollsAndReleasesEverything() {
        Recorder[] r = new Recorder[1];
        FaultCounters c = receiveWith(FaultPlan.NONE.withDelay(0.1, 3), r);
        assertRate(c.delayed(), 0.1, "delayed");
        assertEquals(N, seqs(r[0]).stream().distinct().count());
    }

    @Test
    void aDelayedFrameComesOutAfterExactlyThatManyPolls() {
        FaultyDevice rx = FaultyDevice.receiving(b, SEED, FaultPlan.NONE.withDelay(1.0, 3));
        Recorder r = new Recorder();
        assertEquals(OK, a.offer(1, frame(5), 0, FRAME));
        assertEquals(0, rx.poll(r, 10));
        assertTrue(rx.awaitFrames(1_000_000_000L), "held frames make awaitFrames return at once");
        assertEquals(0, rx.poll(r, 10));
        assertEquals(0, rx.poll(r, 10));
        assertEquals(1, rx.poll(r, 10), "the third poll after the one that took it hands it over");
        assertEquals(5, seq(r.packets.getFirst().data()));
        assertEquals(0, r.packets.getFirst().source());
    }

    @Test
    void rateLimitCapsEachPoll() {
        FaultyDevice rx = FaultyDevice.receiving(b, SEED, FaultPlan.NONE.withRateLimit(3));
        for (int i = 0; i < 10; i++) {
            assertEquals(OK, a.offer(1, frame(i), 0, FRAME));
        }
        Recorder r = new Recorder();
        List<Integer> per = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            per.add(rx.poll(r, 64));
        }
        assertEquals(List.of(3, 3, 3, 1, 0), per);
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), seqs(r));
        assertEquals(3, rx.receiveFaults().rateLimited());
        for (int i = 0; i < 3; i++) {
            assertEquals(OK, a.offer(1, frame(i), 0, FRAME));
        }
        assertEquals(2, rx.poll(r, 2), "a smaller caller limit is not a rate limit");
        assertEquals(3, rx.receiveFaults().rateLimited());
    }

    @Test
    void sendFaultsApplyToOffers() {
        FaultyDevice tx = FaultyDevice.sending(a, SEED, FaultPlan.NONE.withDrop(0.1).withDuplicate(0.05));
        Recorder r = exchange(faulty(tx), b, 64);
        FaultCounters c = tx.sendFaults();
        assertRate(c.dropped(), 0.1, "dropped");
        assertTrue(c.duplicated() > 0.03 * N && c.duplicated() < 0.07 * N, "duplicated " + c.duplicated());
        assertEquals(0, c.held());
        assertEquals(N - c.dropped() + c.duplicated(), c.passed());
        assertEquals(c.passed(), r.packets.size());
        assertEquals(new FaultCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), tx.receiveFaults());
    }

    @Test
    void sendRateLimitBackPressuresUntilThePoll() {
        FaultyDevice tx = FaultyDevice.sending(a, SEED, FaultPlan.NONE.withRateLimit(4));
        for (int i = 0; i < 4; i++) {
            assertEquals(OK, tx.offer(1, frame(i), 0, FRAME));
        }
        assertEquals(BACK_PRESSURED, tx.offer(1, frame(4), 0, FRAME));
        assertEquals(BACK_PRESSURED, tx.tryClaim(1, 8, new dev.nupa.device.FrameClaim()));
        tx.poll((s, m, o, l) -> { }, 1);
        var claim = new dev.nupa.device.FrameClaim();
        assertEquals(OK, tx.tryClaim(1, 8, claim), "a claim passes through (unfaulted) after the poll");
        claim.publish();
        assertEquals(new FaultCounters(4, 0, 0, 0, 0, 0, 2, 1, 0, 0), tx.sendFaults());
        assertEquals(5, b.poll(new Recorder(), 64));
    }

    @Test
    void sendDelayAndReorderReleaseOnLaterPolls() {
        FaultyDevice tx = FaultyDevice.sending(a, SEED, FaultPlan.NONE.withDelay(0.1, 2).withReorder(0.1));
        Recorder r = exchange(faulty(tx), b, 64);
        FaultCounters c = tx.sendFaults();
        assertEquals(0, c.held());
        assertEquals(N, c.passed());
        assertEquals(N, r.packets.size());
        assertEquals(N, seqs(r).stream().distinct().count());
        assertTrue(c.delayed() > 0 && c.reordered() > 0, c.toString());
        assertNotEquals(List.copyOf(new java.util.TreeSet<>(seqs(r))), seqs(r), "order changed");
    }

    @Test
    void theSameSeedGivesTheSameFaults() {
        FaultPlan plan = new FaultPlan(0.05, 0.05, 0.05, 0.05, 0, 0.05, 2, 0);
        Recorder[] r1 = new Recorder[1];
        FaultCounters c1 = receiveWith(plan, r1);
        Recorder[] r2 = new Recorder[1];
        FaultCounters c2 = receiveWith(plan, r2);
        assertEquals(c1, c2);
        assertEquals(seqs(r1[0]), seqs(r2[0]));
    }

    @Test
    void planValidation() {
        assertThrows(IllegalArgumentException.class, () -> FaultPlan.NONE.withDrop(1.5));
        assertThrows(IllegalArgumentException.class, () -> FaultPlan.NONE.withDrop(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> FaultPlan.NONE.withDelay(0.1, 0));
        assertThrows(IllegalArgumentException.class, () -> FaultPlan.NONE.withRateLimit(-1));
        assertThrows(IllegalArgumentException.class, () -> FaultPlan.NONE.withCorrupt(0.1, -1));
        assertTrue(FaultPlan.NONE.isNone());
        assertFalse(FaultPlan.NONE.withRateLimit(1).isNone());
    }

    /** A link over a faulty device: faults on the receiving side reach link traffic, which is sent through claims. */
    @Test
    void aLinkOverAFaultyDevice() {
        L2Fixture jumbo = fx.track(new L2Fixture());
        jumbo.create(L2Fixture.jumbo());
        Link sender = new Link(new FaultyDevice(jumbo.attach(0), SEED, FaultPlan.NONE.withDrop(0.5), FaultPlan.NONE));
        FaultyDevice rx = FaultyDevice.receiving(jumbo.attach(1), SEED,
                FaultPlan.NONE.withDrop(0.2).withCorrupt(0.2, LinkHeader.LENGTH + 4)); // spare the sequence number
        Link receiver = new Link(rx);
        Recorder r = new Recorder();
        receiver.register(EtherType.IPV4, r);
        int n = 1000;
        for (int i = 0; i < n; i++) {
            assertEquals(OK, sender.send(1, EtherType.IPV4, frame(i), 0, FRAME));
            receiver.poll(64);
        }
        FaultCounters c = rx.receiveFaults();
        assertEquals(n, ((FaultyDevice) sender.device()).sendFaults().claimed(), "link sends are claims: not faulted");
        assertEquals(n - c.dropped(), r.packets.size());
        assertEquals(n - c.dropped(), receiver.counters().protocol(EtherType.IPV4).framesIn());
        assertEquals(c.corrupted(), r.packets.stream().filter(p -> !intact(p.data())).count(),
                "corruption past the link header reaches the payload");
    }
}
