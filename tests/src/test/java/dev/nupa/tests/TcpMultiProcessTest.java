package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.node.cli.Main;

/**
 * TCP between node processes on one fabric file: `nupa node --tcp-echo` serving, `nupa tcp-check`
 * opening connections all at once, checking every echoed byte, closing, and checking that no
 * connection state is left on either side afterwards.
 */
@Tag("process")
class TcpMultiProcessTest {
    private final Path fabric = ChildJvm.newFabricPath();
    private final List<ChildJvm> children = new ArrayList<>();

    @AfterEach
    void cleanUp() throws IOException {
        for (ChildJvm c : children) {
            c.close();
        }
        Files.deleteIfExists(fabric);
    }

    private ChildJvm nupa(String name, String... args) {
        ChildJvm c = ChildJvm.start(name, Main.class, (Object[]) args);
        children.add(c);
        return c;
    }

    /**
     * The echo server. For 10,000 connections an Ethernet-sized MTU and 4 KiB buffers ({@link #SMALL})
     * keep them within the children's 256 MiB of direct memory (their buffers are native) and
     * exercise a small MSS.
     */
    private static final List<String> SMALL = List.of("--mtu", "1500", "--tcp-buffer", "4096");

    private ChildJvm server(List<String> sizing) {
        List<String> args = new ArrayList<>(List.of("node", "--fabric", fabric.toString(), "--address", "0", "--tcp-echo", "7",
                "--tcp-time-wait", "5"));
        args.addAll(sizing);
        ChildJvm s = nupa("node0", args.toArray(new String[0]));
        s.awaitLine("nupa node:", 60_000);
        return s;
    }

    private String check(int connections, long bytes, List<String> sizing) throws InterruptedException {
        List<String> args = new ArrayList<>(List.of("tcp-check", "--fabric", fabric.toString(), "--address", "1",
                "--connections", Integer.toString(connections), "--bytes", Long.toString(bytes), "--tcp-time-wait", "5",
                "--wait-time-wait", "--timeout", "600", "10.0.0.1"));
        args.addAll(1, sizing);
        ChildJvm c = nupa("tcp-check", args.toArray(new String[0]));
        assertTrue(c.process.waitFor(700, TimeUnit.SECONDS), "tcp-check did not finish:\n" + c.output());
        assertEquals(0, c.process.exitValue(), c.output());
        return c.output();
    }

    /** Stops the server (SIGTERM) and returns its last words: counters and the connections left. */
    private String stop(ChildJvm server) throws InterruptedException {
        server.process.toHandle().destroy();
        assertTrue(server.process.waitFor(30, TimeUnit.SECONDS));
        return server.output();
    }

    @Test
    void concurrentConnectionsEchoIntactCloseCleanlyAndLeaveNoStateOnEitherSide() throws Exception {
        ChildJvm server = server(SMALL);
        int n = Integer.getInteger("nupa.tcpConnections", 10_000);
        String out = check(n, 1000, SMALL);
        Matcher m = Pattern.compile("(\\d+) echoed intact, (\\d+) failed, (\\d+) closed, (\\d+) left open").matcher(out);
        assertTrue(m.find(), out);
        assertEquals(n + " 0 " + n + " 0", m.group(1) + " " + m.group(2) + " " + m.group(3) + " " + m.group(4), out);
        System.out.println("TcpMultiProcessTest: " + out.lines().filter(l -> l.startsWith("tcp-check:")).findFirst().orElse(""));
        // The server's side: every accepted connection closed, none left in any state. The client
        // waited out its TIME-WAIT (5 s), so the server's last ACKs have long been answered.
        String words = stop(server);
        assertTrue(words.contains("tcp connections open=0 {}"), words);
        assertTrue(words.contains("connections_accepted=" + n) && words.contains("connections_closed=" + n), words);
    }

    @Test
    void bulkEchoOfSixtyFourMegabytesOnOneConnection() throws Exception {
        server(List.of()); // the default 9000-byte MTU and 256 KiB buffers
        String out = check(1, 64_000_000, List.of());
        assertTrue(out.contains("1 echoed intact, 0 failed, 1 closed, 0 left open"), out);
        System.out.println("TcpMultiProcessTest: " + out.lines().filter(l -> l.startsWith("tcp-check:")).findFirst().orElse(""));
    }
}
