package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.node.cli.Main;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.ring.RingCompletion;
import dev.nupa.roce.ring.WorkRing;
import dev.nupa.roce.ring.WorkRingLayout;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Work rings (docs/work-rings.md) end to end, each side a process of its own on one fabric file: an RDMA target
 * (`nupa node --rdma-target`), a proxy serving two rings on RC QPs connected to it (`nupa node --proxy`), and posters
 * that write WQEs into the rings: nupa-wr (C, libnupa) and this test's own Java node through {@link WorkRing}. What
 * reaches the target is checked by its FNV-1a 64 or read back with RDMA READ; errors come back as completions; a
 * proxy killed mid-stream ends its posters' waits.
 */
@Tag("process")
class WorkRingTest {
    private static final Path NATIVE = Path.of(System.getProperty("user.dir")).getParent().resolve("native");
    private static final Path WR = NATIVE.resolve("build/nupa-wr");
    private static final int PROXY = 2;

    private Path fabric;
    private ChildJvm target;
    private ChildJvm proxy;

    @BeforeEach
    void nodes() throws Exception {
        fabric = ChildJvm.newFabricPath();
        NupaCommandLineTest.Run made = NupaCommandLineTest.here("fabric", "create", "--fabric", fabric.toString());
        assertEquals(0, made.status(), made.err());
        target = ChildJvm.start("target", Main.class, "node", "--fabric", fabric, "--address", "1", "--rdma-target", "4000");
        target.awaitLine("nupa node: RDMA target on CM port 4000", 60_000);
        proxy = ChildJvm.start("proxy", Main.class, "node", "--fabric", fabric, "--address", Integer.toString(PROXY), "--proxy",
                "10.0.0.2:4000", "--proxy-rings", "2");
        proxy.awaitLine("nupa node: work ring 1:", 60_000);
    }

    @AfterEach
    void cleanUp() throws IOException {
        proxy.close();
        target.close();
        Files.deleteIfExists(fabric);
    }

    private static void needC() throws Exception {
        String missing = Linux.missing("make", "cc");
        Assumptions.assumeTrue(missing == null, () -> "skipping the test: no " + missing + " to build libnupa (apt-get install build-essential)");
        Linux.Result made = Linux.run(120, "make", "-C", NATIVE.toString());
        assertEquals(0, made.status(), "make -C native: " + made.output());
    }

    /** nupa-wr against the proxy's rings: RING MODE [ARGS]. */
    private Linux.Result wr(String... args) throws IOException, InterruptedException {
        String[] cmd = new String[args.length + 3];
        cmd[0] = WR.toString();
        cmd[1] = fabric.toString();
        cmd[2] = Integer.toString(PROXY);
        System.arraycopy(args, 0, cmd, 3, args.length);
        return Linux.run(120, cmd);
    }

    /** SIGTERM to the target: it prints what it received and its region's checksum on the way out. */
    private String targetLastWords() throws Exception {
        Linux.ok("kill", "-TERM", Long.toString(target.pid()));
        return target.awaitLine("nupa node: RDMA target:", 30_000);
    }

    @Test
    void aCPosterWritesThroughTheProxyAndLearnsItsErrorsFromCompletions() throws Exception {
        needC();
        // The error cases first: their 64-byte WRITEs land at the region's start, which the stream below overwrites.
        Linux.Result badOffset = wr("1", "bad-offset");
        assertEquals(0, badOffset.status(), badOffset.output());
        assertTrue(badOffset.output().contains("out of range IBV_WC_LOC_PROT_ERR, then IBV_WC_SUCCESS; ring state 1"), badOffset.output());
        Linux.Result full = wr("0", "full");
        assertEquals(0, full.status(), full.output());
        Linux.Result badKey = wr("1", "bad-key");
        assertEquals(0, badKey.status(), badKey.output());
        assertTrue(badKey.output().contains("bad key IBV_WC_REM_ACCESS_ERR, then IBV_WC_WR_FLUSH_ERR; ring state 2"), badKey.output());
        Linux.Result none = wr("7", "full");
        assertEquals(2, none.status(), none.output());
        assertTrue(none.output().contains("node 2 serves no work ring 7 (it serves 2 rings)"), none.output());

        // The ring's window as any window (9.4): by the id and key the proxy printed, and refused under another key.
        Matcher w = Pattern.compile("work ring 0: window (\\d+) key (0x[0-9a-f]+)").matcher(proxy.output());
        assertTrue(w.find(), proxy.output());
        Linux.Result open = wr("0", "window", w.group(1), w.group(2));
        assertEquals(0, open.status(), open.output());
        assertTrue(open.output().contains("access 19, owner 2, valid 1"), open.output());
        Linux.Result stale = wr("0", "window", w.group(1), Long.toString(Long.decode(w.group(2)) ^ 2));
        assertEquals(1, stale.status(), stale.output());
        assertTrue(stale.output().contains("is not exported (closed, reclaimed, or a stale key)"), stale.output());

        Linux.Result write = wr("0", "write", Long.toString(40L << 20), "65536");
        assertEquals(0, write.status(), write.output());
        Matcher m = Pattern.compile("target fnv1a64=(0x[0-9a-f]+) over (\\d+) bytes").matcher(write.output());
        assertTrue(m.find(), write.output());
        String last = targetLastWords();
        assertTrue(last.contains("fnv1a64=" + m.group(1) + " over " + m.group(2) + " bytes"),
                "the target holds what the C poster wrote: " + last + " / " + write.output());
        System.out.println("WorkRingTest: " + full.output().strip() + "; " + write.output().strip() + "; " + last);
    }

    @Test
    void aJavaPosterWritesSendsAndReadsBackThroughTheSameRings() throws Exception {
        try (FabricNode node = ShmFabric.attach(fabric, 5, null); WorkRing ring = WorkRing.open(node, PROXY, 0)) {
            RdmaException none = assertThrows(RdmaException.class, () -> WorkRing.open(node, PROXY, 9));
            assertTrue(none.getMessage().contains("serves no work ring 9 (it serves 0, 1)"), none.getMessage());
            MemorySegment data = ring.data();
            int chunk = 4096;
            int chunks = 64;
            for (int i = 0; i < chunk * chunks; i++) {
                data.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + (i >> 12)));
            }
            RingCompletion c = new RingCompletion();
            for (int i = 0; i < chunks; i++) {
                assertTrue(ring.postWrite(i, (long) i * chunk, (long) i * chunk, chunk, true) >= 0, "room for WRITE " + i);
            }
            for (int i = 0; i < chunks; i++) {
                await(ring, c);
                assertEquals(WcStatus.SUCCESS, c.status, c.toString());
                assertEquals(i, c.wrId, "completions come in posting order");
                assertEquals(chunk, c.byteLen);
            }
            // Read the target's bytes back into the second half of the data area and compare.
            long back = (long) chunk * chunks;
            assertTrue(ring.post(WorkRingLayout.OP_READ, WorkRingLayout.F_SIGNALED, 100, ring.windowId(), ring.windowKey(),
                    ring.dataOffset() + back, chunk * chunks, ring.remoteAddr(), ring.remoteKey(), 0) >= 0);
            await(ring, c);
            assertEquals(WcStatus.SUCCESS, c.status, c.toString());
            assertEquals(-1L, data.asSlice(0, back).mismatch(data.asSlice(back, back)), "what was read back is what was written");

            // A wrong local key is the poster's own error: the ring stays READY and the next WQE succeeds.
            assertTrue(ring.post(WorkRingLayout.OP_WRITE, WorkRingLayout.F_SIGNALED, 200, ring.windowId(), ring.windowKey() ^ 2,
                    ring.dataOffset(), 64, ring.remoteAddr(), ring.remoteKey(), 0) >= 0);
            await(ring, c);
            assertEquals(WcStatus.LOC_PROT_ERR, c.status, c.toString());
            assertEquals(WorkRingLayout.READY, ring.state());
            // An unsignaled WRITE completes nothing; a signaled one after it does. Then three SENDs for the target to count.
            assertTrue(ring.postWrite(300, 0, 0, 64, false) >= 0);
            for (int i = 0; i < 3; i++) {
                assertTrue(ring.postSend(400 + i, 0, 1000, true) >= 0);
            }
            for (int i = 0; i < 3; i++) {
                await(ring, c);
                assertEquals(WcStatus.SUCCESS, c.status, c.toString());
                assertEquals(400 + i, c.wrId, "the unsignaled WRITE wrote no completion");
            }
            // Full: with nobody taking completions the proxy stops taking WQEs once the completions would not fit.
            long posted = 0;
            while (ring.postWrite(500 + posted, 0, 0, 8, true) >= 0) {
                posted++;
                assertTrue(posted <= ring.sqEntries() + ring.cqEntries(), "the ring said full in time");
            }
            assertTrue(posted >= ring.sqEntries(), "took " + posted);
            for (long i = 0; i < posted; i++) {
                await(ring, c);
                assertEquals(500 + i, c.wrId);
            }
            String last = targetLastWords();
            assertTrue(last.contains("sends=3 bytes=3000"), last);
            System.out.println("WorkRingTest: Java poster: " + chunks + " WRITEs of " + chunk + ", READ back intact, " + posted
                    + " WQEs before full; " + last);
        }
    }

    /**
     * A proxy that polls its ring only once a minute when idle, and whose node sleeps meanwhile, takes a WQE when its
     * poster rings the doorbell: three posts after 300 ms of quiet each, every one completed well within the minute
     * (30 s: a generous bound, as the test is about the wake and not its speed, which it prints).
     */
    @Test
    void theDoorbellWakesAnIdleProxy() throws Exception {
        try (ChildJvm slow = ChildJvm.start("slow-proxy", Main.class, "node", "--fabric", fabric, "--address", "3", "--proxy",
                "10.0.0.2:4000", "--proxy-poll-us", "60000000", "--proxy-spin-us", "100");
                FabricNode node = ShmFabric.attach(fabric, 5, null)) {
            slow.awaitLine("nupa node: work ring 0:", 60_000);
            try (WorkRing ring = WorkRing.open(node, 3, 0)) {
                RingCompletion c = new RingCompletion();
                long worst = 0;
                for (int i = 0; i < 3; i++) {
                    Thread.sleep(300);
                    long t0 = System.nanoTime();
                    assertTrue(ring.postWrite(i, 0, 0, 64, true) >= 0);
                    ring.doorbell();
                    await(ring, c);
                    assertEquals(WcStatus.SUCCESS, c.status, c.toString());
                    worst = Math.max(worst, System.nanoTime() - t0);
                }
                assertTrue(worst < TimeUnit.SECONDS.toNanos(30), "the slowest post took " + worst / 1_000_000 + " ms");
                System.out.println("WorkRingTest: an idle proxy (60 s polls) woken by the doorbell: slowest of 3 posts "
                        + worst / 1_000 + " us");
            }
        }
    }

    @Test
    void postersLearnThatTheirProxyDiedAndNothingHangs() throws Exception {
        needC();
        Process c = new ProcessBuilder(WR.toString(), fabric.toString(), Integer.toString(PROXY), "1", "stream", "60").redirectErrorStream(true).start();
        try (FabricNode node = ShmFabric.attach(fabric, 5, null); WorkRing ring = WorkRing.open(node, PROXY, 0)) {
            RingCompletion done = new RingCompletion();
            for (int i = 0; i < 100; i++) {
                while (ring.postWrite(i, 0, 0, 256, true) < 0) {
                    Thread.onSpinWait();
                }
                await(ring, done);
            }
            proxy.kill(); // SIGKILL: no goodbye; the fabric's liveness rules tell the posters
            long t0 = System.nanoTime();
            RdmaException gone = assertThrows(RdmaException.class, () -> {
                while (true) {
                    if (ring.postWrite(1, 0, 0, 256, true) >= 0) {
                        ring.poll(done);
                    }
                    Thread.sleep(1);
                    if (System.nanoTime() - t0 > TimeUnit.SECONDS.toNanos(60)) {
                        return;
                    }
                }
            });
            assertTrue(gone.getMessage().contains("is gone: its proxy left or died"), gone.getMessage());
            assertTrue(c.waitFor(60, TimeUnit.SECONDS), "the C poster ended");
            String out = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, c.exitValue(), out);
            assertTrue(out.contains("the proxy stopped serving the ring after"), out);
            System.out.println("WorkRingTest: the Java poster learned in " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)
                    + " ms that its proxy died; " + out.strip());
        } finally {
            c.destroyForcibly();
        }
    }

    /** Waits up to 10 s for the next completion. */
    private static void await(WorkRing ring, RingCompletion c) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ring.poll(c) == 0) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no completion within 10 s from " + ring);
            }
            Thread.onSpinWait();
        }
    }
}
