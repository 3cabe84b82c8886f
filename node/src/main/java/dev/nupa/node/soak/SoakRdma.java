package dev.nupa.node.soak;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * RDMA traffic of a soak: rounds of `nupa rping` between two nodes of their own, the client checking every ping
 * (-V: the buffer the server READ and WROTE back is compared byte for byte with the one sent). The soak also kills
 * one end of a round now and then ({@link #killOne}): the other end must then end with an error, promptly, and not
 * report pings it did not see; the next round starts afresh on the same addresses.
 */
final class SoakRdma implements Runnable {
    static final int SIZE = 4096;
    private static final int PINGS = 300;
    /** How long the surviving end of a killed round may take to notice: the liveness timeout and a margin. */
    private static final int SURVIVOR_SECONDS = 30;
    private static final Pattern DONE = Pattern.compile("rping: (\\d+) pings done");

    final AtomicLong bytesChecked = new AtomicLong();
    final AtomicLong rounds = new AtomicLong();
    final AtomicLong kills = new AtomicLong();
    private final String fabric;
    private final int serverAddress;
    private final int clientAddress;
    private final SoakFailures failures;
    private volatile boolean stopping;
    private volatile SoakProcess server;
    private volatile SoakProcess client;
    private volatile SoakProcess killed;

    SoakRdma(String fabric, int serverAddress, int clientAddress, SoakFailures failures) {
        this.fabric = fabric;
        this.serverAddress = serverAddress;
        this.clientAddress = clientAddress;
        this.failures = failures;
    }

    void stop() {
        stopping = true;
    }

    /** SIGKILLs the server or the client of the round in progress; false when no round has both ends running. */
    boolean killOne(SplittableRandom random) {
        SoakProcess s = server;
        SoakProcess c = client;
        if (s == null || c == null || killed != null || !s.process.isAlive() || !c.process.isAlive()
                || s.lines.stream().noneMatch(l -> l.startsWith("rping: connection from"))) {
            return false; // only a connected round: a client killed before it connects would leave the server listening
        }
        SoakProcess victim = random.nextBoolean() ? s : c;
        killed = victim;
        victim.process.destroyForcibly();
        kills.incrementAndGet();
        return true;
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
        killed = null;
        SoakProcess s = new SoakProcess(List.of("rping", "-s", "--fabric", fabric, "--address", String.valueOf(serverAddress),
                "-S", String.valueOf(SIZE), "--timeout", "120"));
        server = s;
        SoakProcess c = null;
        try {
            if (!s.awaitLine("rping: listening on", 60)) {
                failures.add("rdma: the rping server did not listen: " + s.tail());
                return;
            }
            c = new SoakProcess(List.of("rping", "-c", "-a", "10.0.0." + (serverAddress + 1), "--fabric", fabric,
                    "--address", String.valueOf(clientAddress), "-S", String.valueOf(SIZE), "-C", String.valueOf(PINGS), "-V",
                    "--wait", "20", "--timeout", "120"));
            client = c;
            if (awaitClientOrKill(c, 150)) {
                SoakProcess victim = killed;
                SoakProcess survivor = victim == s ? c : s;
                survivor(survivor, survivor.exit(SURVIVOR_SECONDS), victim == s ? "client" : "server");
                return;
            }
            int status = c.exit(0);
            int serverStatus = s.exit(30);
            Matcher m = DONE.matcher(String.join("\n", c.lines));
            if (status != 0 || !m.find()) {
                failures.add("rdma: rping client exited " + status + ": " + c.tail());
                return;
            }
            if (serverStatus != 0) {
                failures.add("rdma: rping server exited " + serverStatus + ": " + s.tail());
                return;
            }
            bytesChecked.addAndGet(Long.parseLong(m.group(1)) * SIZE);
            rounds.incrementAndGet();
        } finally {
            server = null;
            client = null;
            s.exit(0);
            if (c != null) {
                c.exit(0);
            }
        }
    }

    /** Waits until the client ends or one end is killed (true); a client still running after the time is killed. */
    private boolean awaitClientOrKill(SoakProcess c, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (c.process.isAlive() && killed == null && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        return killed != null;
    }

    /**
     * The end that lived through its peer's kill: it must have ended by itself (-1 means it was still running when
     * its time was up), and a client must not claim the full count, unless it had finished before the kill.
     */
    private void survivor(SoakProcess p, int status, String which) {
        if (status == -1) {
            failures.add("rdma: the rping " + which + " was still running " + SURVIVOR_SECONDS + " s after its peer was killed: "
                    + p.tail());
            return;
        }
        Matcher m = DONE.matcher(String.join("\n", p.lines));
        if (status == 0 && which.equals("client") && m.find()) {
            bytesChecked.addAndGet(Long.parseLong(m.group(1)) * SIZE); // it finished before the server died
            rounds.incrementAndGet();
        }
    }
}
