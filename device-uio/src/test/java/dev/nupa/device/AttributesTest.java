package dev.nupa.device;

import static dev.nupa.device.FabricLayout.ATTR_BYTES;
import static dev.nupa.device.FabricLayout.N_ATTR_VERSION;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Node attributes: a small record that travels with a node's table entry. */
class AttributesTest {
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

    private long versionWord(int address) {
        return (long) FabricLayout.LONG.getVolatile(fabric.mem, fabric.nodeOffset(address) + N_ATTR_VERSION);
    }

    /**
     * Reads attributes on a helper thread, so a reader that never returns fails the test instead of
     * hanging it; such a reader is released by zeroing the version word (then it returns false).
     */
    private boolean readGuarded(FabricNode reader, int address, MemorySegment into) throws Exception {
        AtomicReference<Boolean> result = new AtomicReference<>();
        Thread t = Thread.ofPlatform().daemon().start(() -> result.set(reader.readAttributes(address, into)));
        t.join(2_000);
        if (t.isAlive()) {
            long word = versionWord(address);
            FabricLayout.LONG.setVolatile(fabric.mem, fabric.nodeOffset(address) + N_ATTR_VERSION, 0L);
            t.join(2_000);
            fail("readAttributes(" + address + ") did not return within 2 s; the attribute version word was "
                    + word + (word % 2 != 0 ? " (odd: a writer looks forever in progress)" : ""));
        }
        return result.get();
    }

    @Test
    void aWriterThatHoldsTheAttributesForeverDoesNotHoldTheReader() {
        a.publishAttributes(MemorySegment.ofArray("10.0.0.1/24".getBytes(StandardCharsets.US_ASCII)));
        MemorySegment into = MemorySegment.ofArray(new byte[ATTR_BYTES]);
        assertTrue(b.readAttributes(0, into));
        // What a writer that died between steps 2 and 4 (or a hostile process) leaves: an odd version.
        long version = fabric.mem.get(ValueLayout.JAVA_LONG, fabric.nodeOffset(0) + N_ATTR_VERSION);
        fabric.mem.set(ValueLayout.JAVA_LONG, fabric.nodeOffset(0) + N_ATTR_VERSION, version | 1);
        long start = System.nanoTime();
        assertFalse(b.readAttributes(0, into), "no attributes for now");
        long waited = System.nanoTime() - start;
        assertTrue(waited < 1_000_000_000L, "the reader gave up after " + waited + " ns");
        assertEquals(1, b.attributeReadsAbandoned());
        fabric.mem.set(ValueLayout.JAVA_LONG, fabric.nodeOffset(0) + N_ATTR_VERSION, version + 2); // the writer finished
        assertTrue(b.readAttributes(0, into), "a later read finds the record");
    }

    @Test
    void aNodeThatPublishedNothingHasNoAttributes() throws Exception {
        MemorySegment into = MemorySegment.ofArray(new byte[16]);
        assertFalse(readGuarded(a, 1, into));
        assertFalse(readGuarded(a, 3, into), "nor has an address nobody holds");
        assertFalse(readGuarded(a, 0, into), "nor the reader itself");
    }

    @Test
    void publishedAttributesReadBackOnAnotherNode() throws Exception {
        a.publishAttributes(MemorySegment.ofArray("10.0.0.1/24".getBytes(StandardCharsets.US_ASCII)));
        byte[] into = new byte[ATTR_BYTES];
        assertTrue(readGuarded(b, 0, MemorySegment.ofArray(into)));
        assertEquals(0, versionWord(0) % 2, "a finished publish leaves the version even");
        assertEquals("10.0.0.1/24", new String(into, 0, 11, StandardCharsets.US_ASCII));
        assertEquals(0, into[11], "the rest of the record is zero");

        // A second, shorter publish replaces the first completely.
        a.publishAttributes(MemorySegment.ofArray("fe80::1".getBytes(StandardCharsets.US_ASCII)));
        byte[] again = new byte[16];
        assertTrue(readGuarded(b, 0, MemorySegment.ofArray(again)));
        assertEquals("fe80::1", new String(again, 0, 7, StandardCharsets.US_ASCII));
        for (int i = 7; i < 16; i++) {
            assertEquals(0, again[i], "byte " + i + " of the old record is cleared");
        }
        // A full-size record round-trips.
        byte[] full = new byte[ATTR_BYTES];
        for (int i = 0; i < full.length; i++) {
            full[i] = (byte) (i + 1);
        }
        a.publishAttributes(MemorySegment.ofArray(full));
        byte[] back = new byte[ATTR_BYTES];
        assertTrue(readGuarded(b, 0, MemorySegment.ofArray(back)));
        assertArrayEquals(full, back);
    }

    @Test
    void publishingRaisesTheVersionWord() {
        assertEquals(0, versionWord(0));
        a.publishAttributes(MemorySegment.ofArray(new byte[] {1, 2, 3}));
        long v1 = versionWord(0);
        assertTrue(v1 > 0);
        a.publishAttributes(MemorySegment.ofArray(new byte[] {4}));
        assertTrue(versionWord(0) > v1, "every publish moves the version on");
        assertEquals(4, fabric.mem.get(ValueLayout.JAVA_BYTE, fabric.nodeOffset(0) + FabricLayout.N_ATTRS));
        assertEquals(0, fabric.mem.get(ValueLayout.JAVA_BYTE, fabric.nodeOffset(0) + FabricLayout.N_ATTRS + 1),
                "a shorter record clears the rest");
    }

    @Test
    void attributesAreWithdrawnWhenTheNodeCloses() throws Exception {
        b.publishAttributes(MemorySegment.ofArray("gone soon".getBytes(StandardCharsets.US_ASCII)));
        b.close();
        assertFalse(readGuarded(a, 1, MemorySegment.ofArray(new byte[16])));
        FabricNode b2 = fx.attach(fabric, 1);
        assertFalse(readGuarded(a, 1, MemorySegment.ofArray(new byte[16])), "a new incarnation starts without any");
        assertEquals(2, b2.generation());
    }

    @Test
    void oversizedAttributesAreRefused() {
        FabricException e = assertThrows(FabricException.class,
                () -> a.publishAttributes(MemorySegment.ofArray(new byte[ATTR_BYTES + 1])));
        assertTrue(e.getMessage().contains(String.valueOf(ATTR_BYTES)), e.getMessage());
        assertEquals(0, versionWord(0), "nothing was published");
    }
}
