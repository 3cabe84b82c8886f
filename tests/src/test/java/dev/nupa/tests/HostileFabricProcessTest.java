package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricLayout;
import dev.nupa.device.ShmFabric;
import dev.nupa.node.cli.Main;

/**
 * Node processes against what any process that can write the fabric file does to it (docs/fabric-layout.md 6.5,
 * 10.5): random bytes over a live node's receive ring and table entry leave it answering pings, and a fabric file
 * truncated or removed under a node makes it say so in one line and exit with status 1, with no stack trace.
 */
@Tag("process")
class HostileFabricProcessTest {
    private final Path fabric = ChildJvm.newFabricPath();
    private final List<ChildJvm> children = new ArrayList<>();

    @AfterEach
    void cleanUp() throws IOException {
        for (ChildJvm c : children) {
            c.close();
        }
        Files.deleteIfExists(fabric);
    }

    private ChildJvm node(String name, String... args) {
        ChildJvm c = ChildJvm.start(name, Main.class, (Object[]) args);
        children.add(c);
        return c;
    }

    private ChildJvm startNode0() {
        ChildJvm n = node("node0", "node", "--fabric", fabric.toString(), "--address", "0", "--udp-echo", "7");
        n.awaitLine("nupa node:", 60_000);
        return n;
    }

    private void writeJunk(long at, int length, long seed, byte state) throws IOException {
        byte[] junk = new byte[length];
        new Random(seed).nextBytes(junk);
        if (state != 0) {
            junk[0] = state;
        }
        try (FileChannel ch = FileChannel.open(fabric, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(junk), at);
        }
    }

    @Test
    void aNodeAnswersPingsAfterRandomBytesOverItsRingAndItsEntry() throws Exception {
        startNode0();
        FabricGeometry g;
        try (Fabric f = ShmFabric.inspect(fabric)) {
            g = f.geometry();
        }
        long ring = FabricLayout.ringsOffset(g.maxNodes()); // node 0's ring 0
        writeJunk(ring, (int) FabricLayout.ringBytes(g.ringSlots(), g.maxFrame()), 7, (byte) 0);
        // Its entry: the state word (with a state no node writes), pid, host and the attributes that name its address.
        writeJunk(FabricLayout.nodeTableOffset(), 64, 8, (byte) 9);
        writeJunk(FabricLayout.nodeTableOffset() + FabricLayout.N_ATTR_VERSION, FabricLayout.NODE_BYTES - (int) FabricLayout.N_ATTR_VERSION, 9,
                (byte) 0);

        ChildJvm ping = node("ping", "ping", "-c", "3", "-i", "0.2", "-W", "2", "--fabric", fabric.toString(), "--address", "1", "10.0.0.1");
        assertTrue(ping.process.waitFor(120, TimeUnit.SECONDS), ping.output());
        assertEquals(0, ping.process.exitValue(), ping.output());
        assertTrue(ping.output().contains("3 packets transmitted, 3 received, 0% packet loss"), ping.output());
    }

    private static void assertStopsWithOneLine(ChildJvm n, String line) throws InterruptedException {
        assertTrue(n.process.waitFor(30, TimeUnit.SECONDS), "the node did not stop:\n" + n.output());
        assertEquals(1, n.process.exitValue(), n.output());
        assertTrue(n.output().contains("nupa node: " + line + "; stopping"), n.output());
        assertNoStackTrace(n);
    }

    private static void assertNoStackTrace(ChildJvm n) {
        assertFalse(n.output().contains("Exception") || n.output().contains("InternalError") || n.output().contains("\tat "),
                "no stack trace:\n" + n.output());
    }

    @Test
    void aNodeWhoseFabricFileShrinksSaysSoAndExits() throws Exception {
        ChildJvm n = startNode0();
        long size = Files.size(fabric);
        try (RandomAccessFile f = new RandomAccessFile(fabric.toFile(), "rw")) {
            f.setLength(8192);
        }
        assertStopsWithOneLine(n, "fabric file " + fabric + " shrank from " + size + " to 8192 bytes");
    }

    /**
     * The file removed as soon as the node holds its table entry, before it says it is ready (while it deploys its
     * echoes): the loss may come before the node watches for it, and the node must still see it and leave.
     */
    @Test
    void aNodeWhoseFabricFileIsRemovedWhileItStartsSaysSoAndExits() throws Exception {
        ChildJvm n = node("node0", "node", "--fabric", fabric.toString(), "--address", "0", "--udp-echo", "7", "--tcp-echo", "7");
        ChildJvm.waitUntil("node 0 holds its entry", 60_000, this::nodeZeroIsUp);
        Files.delete(fabric);
        // Seen by the watch ("nupa node: ...; stopping") or by a step of the start that needs the fabric ("nupa: ...").
        assertTrue(n.process.waitFor(30, TimeUnit.SECONDS), "the node did not stop:\n" + n.output());
        assertEquals(1, n.process.exitValue(), n.output());
        assertTrue(n.output().contains("fabric file " + fabric + " was removed"), n.output());
        assertNoStackTrace(n);
    }

    private boolean nodeZeroIsUp() {
        if (!Files.exists(fabric)) {
            return false;
        }
        try (Fabric f = ShmFabric.inspect(fabric)) {
            return f.nodes().stream().anyMatch(i -> i.address() == 0 && i.state().equals("UP"));
        } catch (RuntimeException e) {
            return false; // the node is still writing the file's header
        }
    }

    @Test
    void aNodeWhoseFabricFileIsRemovedSaysSoAndExits() throws Exception {
        ChildJvm n = startNode0();
        Files.delete(fabric);
        assertStopsWithOneLine(n, "fabric file " + fabric + " was removed");
    }
}
