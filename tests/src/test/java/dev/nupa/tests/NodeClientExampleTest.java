package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.examples.client.NodeClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
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

/**
 * The Java client example ({@code examples/node-client}) as a user runs it: two {@code nupa node} processes with
 * gRPC endpoints on one fabric, and {@link NodeClient} in a third process using them through Admin, Sockets and
 * Verbs only.
 */
@Tag("process")
class NodeClientExampleTest {
    private final Path fabric = Path.of("/dev/shm/nupa-test-node-client-" + UUID.randomUUID());
    private final List<Process> nodes = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (Process p : nodes) {
            p.destroy();
            p.waitFor(30, TimeUnit.SECONDS);
        }
        Files.deleteIfExists(fabric);
    }

    private static String java() {
        return ProcessHandle.current().info().command().orElseThrow();
    }

    /** Starts {@code nupa node} at {@code address} with a gRPC endpoint; returns the endpoint's HOST:PORT. */
    private String node(int address, String... more) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java(), "--enable-native-access=ALL-UNNAMED", "-cp",
                System.getProperty("java.class.path"), "dev.nupa.node.cli.Main", "node", "--fabric", fabric.toString(),
                "--address", String.valueOf(address), "--grpc", "127.0.0.1:0"));
        cmd.addAll(List.of(more));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        nodes.add(p);
        String first = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
        Matcher m = Pattern.compile("gRPC on (127\\.0\\.0\\.1:\\d+)").matcher(String.valueOf(first));
        assertTrue(m.find(), "node " + address + " said: " + first);
        return m.group(1);
    }

    @Test
    void theClientExampleUsesTwoNodesThroughTheirEndpointsOnly() throws Exception {
        Path spans = Files.createTempFile("nupa-node-spans-", ".jsonl");
        String ours = node(0, "--trace-export", "file=" + spans, "--trace-sample", "1");
        String peer = node(1, "--tcp-echo", "7");
        Process client = new ProcessBuilder(java(), "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                NodeClient.class.getName(), ours, "10.0.0.2:7", peer).redirectErrorStream(true).start();
        String out = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(client.waitFor(60, TimeUnit.SECONDS), out);
        assertEquals(0, client.exitValue(), out);
        assertTrue(out.contains("node 10.0.0.1/24 at fabric address 0 of " + fabric), out);
        assertTrue(Pattern.compile("TCP 10\\.0\\.0\\.1:\\d+ -> 10\\.0\\.0\\.2:7 through the node: sent 23 bytes, the same back")
                .matcher(out).find(), out);
        assertTrue(Pattern.compile("RDMA: QP \\d+ of 10\\.0\\.0\\.1 connected to QP \\d+ of 10\\.0\\.0\\.2").matcher(out).find(), out);
        assertTrue(out.contains("our completion: wr_id 2 IBV_WC_SUCCESS opcode 1, "), out);
        String text = "written by 10.0.0.1 with RDMA";
        assertTrue(out.contains("the peer's completion: wr_id 1 IBV_WC_SUCCESS opcode 129, " + text.length() + " bytes, immediate 42"), out);
        assertTrue(out.contains("the peer's region now holds \"" + text + "\""), out);

        // Node 0 was traced: once it stops, its file holds the gRPC calls' spans and the WRITE's, from post to completion.
        Process traced = nodes.getFirst();
        traced.destroy();
        assertTrue(traced.waitFor(30, TimeUnit.SECONDS));
        String exported = Files.readString(spans);
        Files.delete(spans);
        assertTrue(exported.contains("\"name\":\"verbs IBV_WR_RDMA_WRITE_WITH_IMM\""), exported);
        assertTrue(exported.contains("{\"key\":\"nupa.wc_status\",\"value\":{\"stringValue\":\"IBV_WC_SUCCESS\"}}"), exported);
        assertTrue(exported.contains("GetInfo"), "the Admin call's server span: " + exported);
    }
}
