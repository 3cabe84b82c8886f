package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Fuzzes what reads the node table (docs/fabric-layout.md section 5), which any process mapping the fabric
 * can write: the input overwrites bytes of the other nodes' entries (state word, generation, heartbeat,
 * pid, counters, the attributes and their seqlock), then a node reads them as it does while running: its
 * liveness watch (which may reclaim a node it finds dead), attribute reads, and the tools' snapshots.
 * Whatever the bytes, nothing is thrown, every call returns (an attribute read gives up on a writer that
 * holds the entry forever), and the reading node's own entry stays UP with its generation.
 * docs/fuzzing.md says how to run it.
 *
 * <p>Input (a {@link FuzzedDataProvider}): writes (a node address other than the reader's, an offset into
 * its 512-byte entry, up to 16 bytes) until the input ends, then how many liveness ticks to run.
 */
class NodeTableFuzzTest {
    private static FabricFixture fx;
    private static Fabric fabric;
    private static FabricNode self;

    @BeforeAll
    static void join() {
        fx = new FabricFixture();
        fabric = fx.create(FabricFixture.small());
        self = fx.attach(fabric, 0);
    }

    @AfterAll
    static void leave() {
        fx.close();
    }

    @FuzzTest
    void nodeTable(FuzzedDataProvider data) {
        int nodes = fabric.geometry().maxNodes();
        MemorySegment clean = MemorySegment.ofArray(new byte[FabricLayout.NODE_BYTES * (nodes - 1)]);
        MemorySegment.copy(fabric.mem, fabric.nodeOffset(1), clean, 0, clean.byteSize()); // to put back after
        long selfWord = fabric.stateWord(0);
        try {
            while (data.remainingBytes() > 3) {
                int address = data.consumeInt(1, nodes - 1);
                int at = data.consumeInt(0, FabricLayout.NODE_BYTES - 1);
                byte[] bytes = data.consumeBytes(Math.min(16, FabricLayout.NODE_BYTES - at));
                MemorySegment.copy(bytes, 0, fabric.mem, ValueLayout.JAVA_BYTE, fabric.nodeOffset(address) + at, bytes.length);
            }
            Liveness watch = new Liveness(fabric, self);
            long now = System.nanoTime();
            for (int t = 0; t < 4; t++) {
                now += 1_000_000_000L; // past every timeout: a peer that looks dead is reclaimed
                watch.tick(now);
            }
            MemorySegment attrs = MemorySegment.ofArray(new byte[FabricLayout.ATTR_BYTES]);
            for (int a = 0; a < nodes; a++) {
                self.readAttributes(a, attrs);
                self.isUp(a);
                fabric.counters(a);
            }
            for (NodeInfo n : fabric.nodes()) {
                assertTrue(n.address() >= 0 && n.address() < nodes, "node " + n);
            }
            assertEquals(selfWord, fabric.stateWord(0), "the reader's own entry is its own");
        } finally {
            MemorySegment.copy(clean, 0, fabric.mem, fabric.nodeOffset(1), clean.byteSize());
        }
    }
}
