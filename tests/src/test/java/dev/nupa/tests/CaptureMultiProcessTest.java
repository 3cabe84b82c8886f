package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.node.cli.Main;

/** `nupa capture` records a `nupa perf` server's frames: the server is a Java fabric node, which serves the observer table. */
@Tag("process")
class CaptureMultiProcessTest {
    private final Path fabric = ChildJvm.newFabricPath();
    private final Path pcap = Path.of("/tmp/nupa-test-capture-" + UUID.randomUUID() + ".pcap");
    private final List<ChildJvm> children = new ArrayList<>();

    @AfterEach
    void cleanUp() throws IOException {
        for (ChildJvm c : children) {
            c.close();
        }
        Files.deleteIfExists(fabric);
        Files.deleteIfExists(pcap);
    }

    private ChildJvm nupa(String name, String... args) {
        ChildJvm c = ChildJvm.start(name, Main.class, (Object[]) args);
        children.add(c);
        return c;
    }

    @Test
    void aPerfServersFramesAreRecordedOrCountedDropped() throws Exception {
        ChildJvm server = nupa("perf-server", "perf", "fabric-bw", "--server", "--fabric", fabric.toString());
        server.awaitLine("ready", 60_000);
        ChildJvm capture = nupa("capture", "capture", "--fabric", fabric.toString(), "--node", "0", "-w", pcap.toString());
        capture.awaitLine("nupa capture: observing nodes [0]", 60_000);
        ChildJvm client = nupa("perf-client", "perf", "fabric-bw", "--client", "--fabric", fabric.toString(), "-s", "512",
                "-n", "3000");
        assertTrue(client.process.waitFor(300, TimeUnit.SECONDS), client.output());
        assertEquals(0, client.process.exitValue(), client.output());
        capture.process.toHandle().destroy(); // SIGTERM: it writes what the rings hold and prints its summary
        assertTrue(capture.process.waitFor(30, TimeUnit.SECONDS), capture.output());
        Matcher m = Pattern.compile("nupa capture: (\\d+) frames written to .*; node 0: (\\d+) recorded, (\\d+) dropped")
                .matcher(capture.output());
        assertTrue(m.find(), capture.output());
        long written = Long.parseLong(m.group(1));
        long recorded = Long.parseLong(m.group(2));
        long dropped = Long.parseLong(m.group(3));
        System.out.println("CaptureMultiProcessTest: " + m.group());
        assertTrue(recorded > 0, capture.output());
        assertTrue(recorded + dropped >= 3000, "the server received at least the 3000 measured frames: " + capture.output());
        assertEquals(recorded, written, "node 0 is the only node watched: each record is written");
        assertTrue(Files.size(pcap) > 24 + written * 16, "the records hold frame bytes");
    }
}
