package dev.nupa.tests;

import static dev.nupa.tests.ChildJvm.num;
import static dev.nupa.tests.ChildJvm.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricCounters;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.PeerEvent;
import dev.nupa.device.PeerEvent.Kind;
import dev.nupa.device.ShmFabric;
import dev.nupa.device.WindowInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A consumer in this JVM and three producer JVMs; one producer is killed with SIGKILL mid-stream.
 * The consumer goes on receiving from the others; the dead node is reported DOWN and reclaimed
 * (its entry FREE, its receive ring drained, its window withdrawn); a new process attaches at the
 * same address with the next generation and its frames arrive. Every frame that arrived from any
 * incarnation is in order and checksum-valid; the live ones lose nothing. A frame the victim had
 * claimed but not published when it died is skipped after the stall timeout: at most one.
 */
@Timeout(150)
@Tag("process")
class KilledProducerTest {
    static final int CONSUMER = 0;
    static final int VICTIM = 2;
    static final int[] PRODUCERS = {1, 2, 3};
    /** Frames per producer that count as "flowing", and how many more prove the flow goes on after the kill. */
    static final long FLOWING = 20_000;
    static final long AFTER_KILL = 5_000;
    /** Fast heartbeats (a dead node is found within tens of ms); a 1 s stall timeout for the victim's last claim. */
    static final FabricGeometry GEOMETRY = FabricGeometry.defaults().withMaxNodes(8).withRing(256, 2048)
            .withWindows(16, 1 << 20).withTimeouts(20_000_000L, 300_000_000L, 1_000_000_000L);

    private final Path path = ChildJvm.newFabricPath();
    private final List<ChildJvm> children = new ArrayList<>();
    private final Map<Long, TestFrames.Track> tracks = new ConcurrentHashMap<>();
    private final List<PeerEvent> allEvents = new CopyOnWriteArrayList<>();
    private Fabric fabric;
    private FabricNode consumer;
    private Thread consumerThread;
    private volatile boolean consuming = true;
    private volatile Throwable consumerFailure;

    @AfterEach
    void cleanup() throws IOException, InterruptedException {
        for (ChildJvm c : children) {
            c.close();
        }
        consuming = false;
        if (consumerThread != null) {
            consumerThread.join(10_000);
        }
        if (consumer != null) {
            consumer.close();
        }
        if (fabric != null) {
            fabric.close();
        }
        Files.deleteIfExists(path);
    }

    private static long key(int address, int generation) {
        return (long) address << 32 | (generation & 0xFFFFFFFFL);
    }

    private long received(int address, int generation) {
        TestFrames.Track t = tracks.get(key(address, generation));
        return t == null ? 0 : t.received;
    }

    private NodeInfo node(int address) {
        return fabric.nodes().stream().filter(n -> n.address() == address).findFirst().orElse(null);
    }

    private boolean nodeIs(int address, String state) {
        NodeInfo n = node(address);
        return n != null && n.state().equals(state);
    }

    private ChildJvm startProducer(String name, int address, long seed, long holdAfter) {
        ChildJvm p = ChildJvm.start(name, ProducerMain.class, path, address, CONSUMER, address, -1, seed, "claim",
                address == VICTIM ? 1 : 0, 120_000, holdAfter);
        children.add(p);
        return p;
    }

    /** Waits until the consumer's listener has seen an event that matches; events stay in {@link #allEvents}. */
    private PeerEvent awaitEvent(String what, Predicate<PeerEvent> match, long timeoutMs) {
        waitUntil(what + " event (seen " + allEvents + ")", timeoutMs, () -> allEvents.stream().anyMatch(match));
        return allEvents.stream().filter(match).findFirst().orElseThrow();
    }

    private void startConsumer() {
        FrameHandler handler = (src, mem, off, len) -> {
            int gen = len >= TestFrames.HEADER ? mem.get(ValueLayout.JAVA_INT_UNALIGNED, off + 16) : -1;
            tracks.computeIfAbsent(key(src, gen), k -> new TestFrames.Track(src, gen)).accept(mem, off, len);
        };
        consumerThread = Thread.ofPlatform().name("test-consumer").start(() -> {
            try {
                IdleRounds idle = new IdleRounds(consumer);
                while (consuming) {
                    idle.after(consumer.poll(handler, 256));
                }
            } catch (Throwable t) {
                consumerFailure = t;
            }
        });
    }

    /** Killed wherever it happens to be: between frames, or (rarely) between a claim and its publish. */
    @Test
    void aProducerKilledMidStreamIsReclaimedWhileTheOthersGoOnAndANewProcessRejoins() throws Exception {
        scenario(false);
    }

    /**
     * Killed while it holds a claimed, half-written slot (it stops there on purpose): the consumer's
     * ring is blocked at that slot until the stall timeout, then skips exactly that one frame.
     */
    @Test
    void aProducerKilledHoldingAClaimCostsExactlyOneSkippedSlot() throws Exception {
        scenario(true);
    }

    private void scenario(boolean holdingAClaim) throws Exception {
        long t0 = System.nanoTime();
        fabric = ShmFabric.create(path, GEOMETRY);
        consumer = fabric.attach(CONSUMER);
        consumer.addPeerListener(allEvents::add);
        startConsumer();
        Map<Integer, ChildJvm> producers = new TreeMap<>();
        for (int a : PRODUCERS) {
            producers.put(a, startProducer("producer-" + a, a, 100L + a, holdingAClaim && a == VICTIM ? FLOWING : -1));
        }

        // All three up, with frames flowing from each.
        waitUntil("producers 1, 2 and 3 are up", 30_000, () -> nodeIs(1, "UP") && nodeIs(2, "UP") && nodeIs(3, "UP"));
        Map<Integer, Integer> gen = new TreeMap<>();
        for (int a : PRODUCERS) {
            gen.put(a, node(a).generation());
        }
        int victimGen = gen.get(VICTIM);
        waitUntil("frames flow from every producer", 60_000,
                () -> gen.entrySet().stream().allMatch(e -> received(e.getKey(), e.getValue()) >= FLOWING));
        for (int a : PRODUCERS) {
            int g = gen.get(a);
            awaitEvent("UP of producer " + a, e -> e.kind() == Kind.UP && e.address() == a && e.generation() == g, 10_000);
        }
        waitUntil("the victim's window is exported", 10_000, () -> fabric.windows().stream()
                .anyMatch(w -> w.owner() == VICTIM && w.ownerGeneration() == victimGen));

        // Frames into the victim's own ring, which it never polls: reclaim must drain them.
        MemorySegment hello = MemorySegment.ofArray(new long[] {42, 43});
        for (int i = 0; i < 5; i++) {
            assertEquals(FabricDevice.OK, consumer.offer(VICTIM, hello, 0, 16));
        }
        assertEquals(5, node(VICTIM).ringOccupancy(), "frames waiting in the victim's ring: " + node(VICTIM));

        // SIGKILL, mid-stream (or right after it took the claim it holds).
        if (holdingAClaim) {
            producers.get(VICTIM).awaitLine("HOLDING", 30_000);
        }
        long before1 = received(1, gen.get(1));
        long before3 = received(3, gen.get(3));
        long victimPid = producers.get(VICTIM).pid();
        producers.get(VICTIM).kill();
        long killedAt = System.nanoTime();
        assertFalse(ProcessHandle.of(victimPid).map(ProcessHandle::isAlive).orElse(false), "the victim still runs");

        // The others go on: more frames than the ring could have held at the kill arrive from each.
        waitUntil("producers 1 and 3 go on after the kill", 30_000,
                () -> received(1, gen.get(1)) >= before1 + AFTER_KILL && received(3, gen.get(3)) >= before3 + AFTER_KILL);

        // The victim is reported down and reclaimed.
        PeerEvent down = awaitEvent("DOWN of the killed producer",
                e -> e.kind() == Kind.DOWN && e.address() == VICTIM, 10_000);
        assertEquals(new PeerEvent(Kind.DOWN, VICTIM, victimGen), down);
        waitUntil("the victim's node entry is FREE", 10_000, () -> nodeIs(VICTIM, "FREE"));
        long reclaimMs = (System.nanoTime() - killedAt) / 1_000_000;
        NodeInfo freed = node(VICTIM);
        assertEquals(victimGen, freed.generation(), "a FREE entry keeps the dead node's generation: " + freed);
        assertFalse(consumer.isUp(VICTIM));
        assertEquals(0, freed.ringOccupancy(), "the victim's receive ring is drained: " + freed);
        assertEquals(5, freed.counters().discarded(), "the frames drained from the victim's ring are counted: " + freed);
        List<WindowInfo> windows = fabric.windows();
        assertTrue(windows.stream().noneMatch(w -> w.owner() == VICTIM), "the victim's window is withdrawn: " + windows);
        assertTrue(nodeIs(1, "UP") && nodeIs(3, "UP") && nodeIs(CONSUMER, "UP"), "the living stay up: " + fabric.nodes());
        assertEquals(FabricDevice.PEER_DOWN, consumer.offer(VICTIM, hello, 0, 16));

        // A new process at the same address comes back with the next generation, and its frames arrive.
        ChildJvm reborn = startProducer("producer-" + VICTIM + "-reborn", VICTIM, 200L + VICTIM, -1);
        producers.put(VICTIM, reborn);
        PeerEvent up = awaitEvent("UP or RESTARTED of the new producer",
                e -> (e.kind() == Kind.UP || e.kind() == Kind.RESTARTED) && e.address() == VICTIM
                        && e.generation() != victimGen, 30_000);
        assertEquals(victimGen + 1, up.generation(), "the rejoined node's generation: " + up);
        assertEquals(victimGen + 1, node(VICTIM).generation(), node(VICTIM).toString());
        gen.put(VICTIM, victimGen + 1);
        waitUntil("frames flow from the new producer", 60_000, () -> received(VICTIM, victimGen + 1) >= FLOWING);
        assertTrue(fabric.windows().stream().anyMatch(w -> w.owner() == VICTIM && w.ownerGeneration() == victimGen + 1),
                "the new producer's window: " + fabric.windows());
        List<PeerEvent> eventsBeforeStop = List.copyOf(allEvents);

        // Stop the living producers; everything each says it sent arrives.
        Map<Integer, Map<String, String>> results = new TreeMap<>();
        producers.values().forEach(ChildJvm::closeStdin);
        for (Map.Entry<Integer, ChildJvm> p : producers.entrySet()) {
            results.put(p.getKey(), p.getValue().awaitResult(30_000));
        }
        for (Map.Entry<Integer, Map<String, String>> r : results.entrySet()) {
            int a = r.getKey();
            long sent = num(r.getValue(), "sent");
            assertEquals(gen.get(a).longValue(), num(r.getValue(), "generation"), r.toString());
            waitUntil("all " + sent + " frames of producer " + a + " arrived (have " + received(a, gen.get(a)) + ")",
                    15_000, () -> received(a, gen.get(a)) >= sent);
        }
        consuming = false;
        consumerThread.join(10_000);
        assertFalse(consumerThread.isAlive(), "the consumer thread did not stop");
        if (consumerFailure != null) {
            throw new AssertionError("the consumer thread failed", consumerFailure);
        }
        FabricCounters counters = consumer.counters();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        StringBuilder report = new StringBuilder("KilledProducerTest" + (holdingAClaim ? " (holding a claim)" : "")
                + ": " + ms + " ms in all; victim seen FREE "
                + reclaimMs + " ms after SIGKILL; consumer " + counters);
        tracks.values().forEach(t -> report.append("\n  ").append(t));
        results.forEach((a, r) -> report.append("\n  producer ").append(a).append(": ").append(r));
        report.append("\n  events before stop: ").append(eventsBeforeStop);
        System.out.println(report);

        // The living lost, duplicated, reordered and corrupted nothing.
        for (Map.Entry<Integer, Map<String, String>> r : results.entrySet()) {
            int a = r.getKey();
            TestFrames.Track t = tracks.get(key(a, gen.get(a)));
            String who = "producer " + a + ": " + r.getValue() + "; received " + t;
            assertEquals("none", r.getValue().get("error"), who);
            assertEquals(num(r.getValue(), "sent"), t.received, who);
            assertEquals(0, t.bad(), who);
            assertEquals(num(r.getValue(), "hash"), t.hash, "what arrived differs from what was sent; " + who);
        }
        // What arrived from the victim is a clean prefix of its stream: in order, from 0, checksums valid.
        TestFrames.Track victim = tracks.get(key(VICTIM, victimGen));
        assertTrue(victim.received >= FLOWING, victim.toString());
        assertEquals(0, victim.bad(), "frames of the killed producer: " + victim);
        assertEquals(victim.received, victim.expected, "frames of the killed producer: " + victim);
        // Nothing else arrived: four incarnations, each the one it claims to be.
        assertEquals(4, tracks.size(), "frames from unexpected sources or generations: " + tracks.values());
        // At most the frame the victim had claimed when it died was lost (skipped after the stall timeout).
        if (holdingAClaim) {
            assertEquals(FLOWING, victim.received, "every frame the victim published before its held claim: " + victim);
            assertEquals(1, counters.stallSkips(), "the held slot, skipped once: " + counters);
        } else {
            assertTrue(counters.stallSkips() <= 1, "stall skips: " + counters);
        }
        assertEquals(0, counters.corrupt(), counters.toString());
        assertEquals(0, counters.handlerErrors(), counters.toString());
        assertTrue(eventsBeforeStop.stream().noneMatch(e -> e.kind() == Kind.EVICTED || (e.kind() == Kind.DOWN && e.address() != VICTIM)),
                "only the victim went down: " + eventsBeforeStop);
        assertEquals(1, eventsBeforeStop.stream().filter(e -> e.kind() == Kind.DOWN).count(), eventsBeforeStop.toString());
    }
}
