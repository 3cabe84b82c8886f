package dev.nupa.device;

import static dev.nupa.device.FabricDevice.OK;
import static dev.nupa.device.FabricFixture.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.nupa.device.FabricFixture.Collector;

/**
 * Random bytes written over a live node's receive ring (any process that maps the fabric can) do not stop it
 * receiving: its idle checks put the head back, pull the tail back and repair the slots' laps, each counted as
 * corrupt, and frames flow again without waiting out a stall timeout per slot.
 */
class RingGarbageTest {
    private final FabricFixture fx = new FabricFixture();
    private Fabric fabric;
    private FabricNode a;
    private FabricNode b;

    @BeforeEach
    void setUp() {
        fabric = fx.create(FabricFixture.small());
        a = fx.attach(fabric, 0);
        b = fx.attach(fabric, 1);
    }

    @AfterEach
    void cleanup() {
        fx.close();
    }

    @Test
    void aNodeReceivesAgainAfterGarbageOverItsRing() {
        Collector c = new Collector();
        assertEquals(OK, send(a, 1, "before"));
        assertEquals(1, b.poll(c, 10));
        for (long seed = 1; seed <= 20; seed++) {
            overwrite(fabric.ringOffset(1, 0), fabric.ringBytes, seed);
            // A frame in flight while the bytes land may be lost with them, as one overwritten in transit would be;
            // the node's idle polls (a check every 4096th) then repair the ring, and from there nothing is lost.
            for (int i = 0; i < 2 * 4096; i++) {
                b.poll(c, 100);
            }
            List<String> sent = new ArrayList<>();
            int refused = 0;
            for (int f = 0; f < 3 * fabric.geometry.ringSlots(); f++) {
                String text = "seed-" + seed + "-frame-" + f;
                if (send(a, 1, text) == OK) {
                    sent.add(text);
                } else {
                    refused++;
                }
                b.poll(c, 100);
            }
            String prefix = "seed-" + seed + "-";
            List<String> got = c.texts().stream().filter(t -> t.startsWith(prefix)).toList();
            assertEquals(sent, got, "after garbage " + seed + ", every frame accepted arrives, in order");
            assertEquals(0, refused, "after the repair no send is refused");
        }
        assertTrue(b.counters().corrupt() > 0, "the repairs are counted: " + b.counters());
    }

    private void overwrite(long at, long bytes, long seed) {
        byte[] junk = new byte[(int) bytes];
        new Random(seed).nextBytes(junk);
        MemorySegment.copy(junk, 0, fabric.mem, ValueLayout.JAVA_BYTE, at, junk.length);
    }
}
