package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.examples.ClusterClient;
import dev.nupa.examples.ClusterService;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The clustered event-bus examples as `./nupa example cluster-service` and `cluster-client` run them, each in a JVM of
 * its own on one fabric file: the client's requests are answered by the service over the fabric, and the service prints
 * every message the client published.
 */
@Tag("process")
class ClusterExampleTest {
    @Test
    void theClientsRequestsAreAnsweredAndItsNewsPrinted() throws Exception {
        clientAndService("hazelcast");
    }

    @Test
    void theClientsRequestsAreAnsweredAndItsNewsPrintedWithInfinispan() throws Exception {
        clientAndService("infinispan");
    }

    private static void clientAndService(String manager) throws Exception {
        Path fabric = ChildJvm.newFabricPath();
        int firstPort = freeRun(4);
        try (ChildJvm service = ChildJvm.start("cluster-service", ClusterService.class, "--cluster-manager", manager,
                fabric, 0, firstPort)) {
            service.awaitLine("cluster service on 10.0.0.1", 90_000);
            try (ChildJvm client = ChildJvm.start("cluster-client", ClusterClient.class, "--cluster-manager", manager,
                    fabric, 1, firstPort, 3)) {
                assertTrue(client.process.waitFor(90, TimeUnit.SECONDS), "the client did not finish: " + client.output());
                assertEquals(0, client.process.exitValue(), client.output());
                String out = client.output();
                for (int i = 1; i <= 3; i++) {
                    assertTrue(out.contains("hello request " + i + " from 10.0.0.1\n"), out);
                }
                assertTrue(out.contains("hello client at 10.0.0.2 (last) from 10.0.0.1\n"), out);
            }
            for (int i = 1; i <= 3; i++) {
                service.awaitLine("news: news " + i + " from 10.0.0.2", 10_000);
            }
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** The first of {@code n} consecutive TCP ports on loopback that are free now (the examples' cluster lists them). */
    static int freeRun(int n) throws IOException {
        for (int attempt = 0; attempt < 100; attempt++) {
            int first = ThreadLocalRandom.current().nextInt(20_000, 60_000);
            boolean free = true;
            for (int p = first; p < first + n && free; p++) {
                try (ServerSocket s = new ServerSocket(p, 1, InetAddress.getByName("127.0.0.1"))) {
                    free = s.getLocalPort() == p;
                } catch (IOException taken) {
                    free = false;
                }
            }
            if (free) {
                return first;
            }
        }
        throw new IOException("no " + n + " consecutive free ports on loopback in 100 tries");
    }
}
