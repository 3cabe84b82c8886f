package dev.nupa.node;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * RDMA traffic of a soak: rounds of `nupa rping` between two nodes of their own, the client checking every ping
 * (-V: the buffer the server READ and WROTE back is compared byte for byte with the one sent). A round that fails is
 * a failure: these two nodes are not among those killed.
 */
final class SoakRdma implements Runnable {
    static final int SIZE = 4096;
    private static final int PINGS = 300;
    private static final Pattern DONE = Pattern.compile("rping: (\\d+) pings done");

    final AtomicLong bytesChecked = new AtomicLong();
    final AtomicLong rounds = new AtomicLong();
    private final String fabric;
    private final int serverAddress;
    private final int clientAddress;
    private final SoakFailures failures;
    private volatile boolean stopping;

    SoakRdma(String fabric, int serverAddress, int clientAddress, SoakFailures failures) {
        this.fabric = fabric;
        this.serverAddress = serverAddress;
        this.clientAddress = clientAddress;
        this.failures = failures;
    }

    void stop() {
        stopping = true;
    }

    @Override
    public void run() {
        while (!stopping) {
            try {
                round();
            } catch (Exception e) {
                failures.add("rdma: " + e);
                return;
            }
        }
    }

    private void round() throws Exception {
        SoakProcess server = new SoakProcess(List.of("rping", "-s", "--fabric", fabric, "--address", String.valueOf(serverAddress),
                "-S", String.valueOf(SIZE), "--timeout", "120"));
        SoakProcess client = null;
        try {
            if (!server.awaitLine("rping: listening on", 60)) {
                failures.add("rdma: the rping server did not listen: " + server.tail());
                return;
            }
            client = new SoakProcess(List.of("rping", "-c", "-a", "10.0.0." + (serverAddress + 1), "--fabric", fabric,
                    "--address", String.valueOf(clientAddress), "-S", String.valueOf(SIZE), "-C", String.valueOf(PINGS), "-V",
                    "--wait", "20", "--timeout", "120"));
            int status = client.exit(150);
            Matcher m = DONE.matcher(String.join("\n", client.lines));
            if (status != 0 || !m.find()) {
                failures.add("rdma: rping client exited " + status + ": " + client.tail());
                return;
            }
            int serverStatus = server.exit(30);
            if (serverStatus != 0) {
                failures.add("rdma: rping server exited " + serverStatus + ": " + server.tail());
                return;
            }
            bytesChecked.addAndGet(Long.parseLong(m.group(1)) * SIZE);
            rounds.incrementAndGet();
        } finally {
            server.exit(0);
            if (client != null) {
                client.exit(0);
            }
        }
    }
}
