package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** `nupa capture` refuses what it cannot do with one line and status 2. */
class CaptureCommandTest {
    @Test
    void aCaptureFileInADirectoryThatDoesNotExistIsOneLineNamingTheProblem() throws Exception {
        Path dir = Path.of("/tmp/nupa-test-capture-" + UUID.randomUUID()); // not created
        Path fabric = Path.of("/dev/shm/nupa-test-capture-" + UUID.randomUUID());
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream before = System.err;
        int status;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            status = Main.run("capture", "--fabric", fabric.toString(), "-w", dir.resolve("x.pcap").toString());
        } finally {
            System.setErr(before);
        }
        String out = err.toString(StandardCharsets.UTF_8);
        assertEquals(2, status, out);
        assertEquals("nupa: cannot write capture file " + dir.resolve("x.pcap") + ": directory " + dir + " does not exist\n", out);
        assertFalse(Files.exists(fabric), "nothing was created");
    }
}
