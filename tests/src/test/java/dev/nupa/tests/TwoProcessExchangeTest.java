package dev.nupa.tests;

import static dev.nupa.tests.ChildJvm.num;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricCounters;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two JVMs, nodes 0 and 1 of one fabric file, each send the other 1,000,000 frames of seeded random
 * sizes while receiving the other's: every frame arrives once, in order and checksum-equal, and
 * each receiver's running hash over (seq, length, crc) equals its sender's.
 */
@Timeout(180)
@Tag("process")
class TwoProcessExchangeTest {
    static final long FRAMES = 1_000_000;
    /** A long stall timeout: no live sender may lose a claim to a busy machine's scheduler. */
    static final FabricGeometry GEOMETRY = FabricGeometry.defaults().withMaxNodes(8).withRing(256, 2048)
            .withWindows(4, 64 * 1024).withTimeouts(20_000_000L, 300_000_000L, 10_000_000_000L);

    private final Path path = ChildJvm.newFabricPath();
    private Fabric fabric;
    private ChildJvm a;
    private ChildJvm b;

    @AfterEach
    void cleanup() throws IOException {
        for (ChildJvm c : new ChildJvm[] {a, b}) {
            if (c != null) {
                c.close();
            }
        }
        if (fabric != null) {
            fabric.close();
        }
        Files.deleteIfExists(path);
    }

    @Test
    void aMillionFramesOfRandomSizesEachWayArriveOnceInOrderAndIntact() {
        fabric = ShmFabric.create(path, GEOMETRY);
        long t0 = System.nanoTime();
        a = ChildJvm.start("exchange-0", ExchangeNodeMain.class, path, 0, 1, FRAMES, 0xA11CEL, 150_000);
        b = ChildJvm.start("exchange-1", ExchangeNodeMain.class, path, 1, 0, FRAMES, 0xB0BL, 150_000);
        Map<String, String> ra = a.awaitResult(170_000);
        Map<String, String> rb = b.awaitResult(30_000);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("TwoProcessExchangeTest: " + ms + " ms in all\n  node 0: " + ra + "\n  node 1: " + rb);

        for (Map<String, String> r : java.util.List.of(ra, rb)) {
            String who = "node " + r.get("address") + ": " + r;
            assertEquals("none", r.get("error"), who);
            assertEquals("false", r.get("timedOut"), who);
            assertEquals(FRAMES, num(r, "sent"), who);
            assertEquals(0, num(r, "lates"), who);
            assertEquals(FRAMES, num(r, "in.received"), who);
            assertEquals(0, num(r, "in.gaps"), "frames lost or reordered; " + who);
            assertEquals(0, num(r, "in.duplicates"), "frames duplicated or reordered; " + who);
            assertEquals(0, num(r, "in.badCrc"), "frames corrupted; " + who);
            assertEquals(0, num(r, "in.tooShort"), who);
            assertEquals(0, num(r, "in.wrongSender"), who);
            assertEquals("true", r.get("peerDone"), who);
        }
        assertEquals(num(ra, "sentHash"), num(rb, "in.hash"), "what node 1 received differs from what node 0 sent");
        assertEquals(num(rb, "sentHash"), num(ra, "in.hash"), "what node 0 received differs from what node 1 sent");

        // The fabric's own books agree: each node sent and received the frames plus one DONE frame,
        // with nothing corrupt, late or failed in a handler, and both left cleanly.
        for (int address = 0; address < 2; address++) {
            FabricCounters c = fabric.counters(address);
            assertEquals(FRAMES + 1, c.framesSent(), "node " + address + ": " + c);
            assertEquals(FRAMES + 1, c.framesReceived(), "node " + address + ": " + c);
            assertEquals(0, c.lateDrops(), "node " + address + ": " + c);
            assertEquals(0, c.corrupt(), "node " + address + ": " + c);
            assertEquals(0, c.handlerErrors(), "node " + address + ": " + c);
            assertEquals(0, c.stallSkips(), "node " + address + ": " + c);
        }
        for (NodeInfo n : fabric.nodes()) {
            assertEquals("FREE", n.state(), "after both closed: " + n);
            assertEquals(0, n.ringOccupancy(), "after both closed: " + n);
        }
    }
}
