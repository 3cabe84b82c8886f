package dev.nupa.node.soak;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import dev.nupa.perf.PerfRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

import dev.nupa.l2.Datapath;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa soak`: mixed traffic between node processes on a fabric file of its own while it kills (SIGKILL) and
 * restarts random nodes, checking every byte, and that the nodes' memory and file descriptors come back to their
 * baseline after each kill and restart settles.
 */
@Command(name = "soak", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run mixed traffic between node processes on a fabric of its own (TCP and UDP echo, RDMA through rping,"
                + " a live capture over gRPC) while killing (SIGKILL) and restarting random nodes; check every byte, and that the"
                + " nodes' memory (VmRSS) and file descriptors come back to their baseline after each restart settles.",
                "Exit status 0 when every check held, 1 when one did not, 2 for bad options."})
public final class SoakCommand implements Callable<Integer> {
    private static final int ECHO_PORT = 7;
    private static final long RSS_SLACK = 64L << 20;
    private static final int FD_SLACK = 8;

    @Option(names = "--minutes", paramLabel = "M", description = "How long to run, in minutes (default: 1).")
    Double minutes;

    @Option(names = "--seconds", paramLabel = "S", description = "How long to run, in seconds (instead of --minutes).")
    Double seconds;

    @Option(names = "--seed", paramLabel = "N", description = "Seed of the kills' choices and times, and of the datagram lengths (default: from the clock, printed).")
    Long seed;

    @Option(names = "--nodes", paramLabel = "N", defaultValue = "3", description = "Echo nodes, which are killed and restarted, 1..16 (default: ${DEFAULT-VALUE}).")
    int nodes;

    @Option(names = "--kill-every", paramLabel = "SECONDS", defaultValue = "15",
            description = "Mean seconds between kills, 2..3600; each wait is drawn from half to one and a half times it (default: ${DEFAULT-VALUE}).")
    double killEvery;

    @Option(names = "--progress", paramLabel = "SECONDS", defaultValue = "30", description = "Seconds between progress lines (default: ${DEFAULT-VALUE}).")
    double progress;

    private final SoakFailures failures = new SoakFailures();
    private final List<SoakChild> children = new ArrayList<>();
    private long kills;
    private long restarts;
    private long maxRss;
    private long maxRssBase;
    private long maxFds;
    private long maxFdsBase;
    private boolean sampled;

    @Override
    public Integer call() throws Exception {
        if (minutes != null && seconds != null) {
            throw new IllegalArgumentException("give --minutes or --seconds, not both");
        }
        double runSeconds = seconds != null ? seconds : (minutes != null ? minutes * 60 : 60);
        if (!(runSeconds >= 5 && runSeconds <= 7 * 24 * 3600)) {
            throw new IllegalArgumentException("the run must last 5 s to 7 days (--seconds 5.. or --minutes 0.084..)");
        }
        if (nodes < 1 || nodes > 16 || !(killEvery >= 2 && killEvery <= 3600) || !(progress > 0)) {
            throw new IllegalArgumentException("need --nodes 1..16, --kill-every 2..3600 and --progress above 0");
        }
        long s = seed != null ? seed : System.nanoTime();
        SplittableRandom random = new SplittableRandom(s);
        Path fabric = PerfRunner.freshFabricPath("soak");
        System.out.printf(Locale.ROOT, "soak: %.0f s, %d echo nodes, a kill every %.0f s or so, seed %d, fabric %s%n", runSeconds, nodes,
                killEvery, s, fabric);
        NupaNode self = null;
        SoakTcp tcp = null;
        SoakUdp udp = null;
        SoakRdma rdma = null;
        SoakCapture capture = null;
        List<Thread> threads = new ArrayList<>();
        List<Process> started = new ArrayList<>();
        try {
            // This process is node 0 (the traffic's client, which creates the fabric); echo nodes 1..N; rping's ends after them.
            self = NupaNode.create(NodeConfig.defaults(fabric, 0).withIdle(Datapath.Idle.adaptive())).await(30, TimeUnit.SECONDS);
            for (int i = 1; i <= nodes; i++) {
                SoakChild c = new SoakChild(fabric, i, ECHO_PORT, i == 1);
                children.add(c);
                c.start();
                started.add(c.process);
            }
            tcp = new SoakTcp(self.vertx(), ECHO_PORT, failures);
            udp = new SoakUdp(self.vertx(), ECHO_PORT, s, failures);
            rdma = new SoakRdma(fabric.toString(), nodes + 1, nodes + 2, failures);
            capture = new SoakCapture(children.get(0), ECHO_PORT, failures);
            tcp.start(children);
            udp.start(children);
            threads.add(Thread.ofPlatform().daemon().name("soak-rdma").start(rdma));
            threads.add(Thread.ofPlatform().daemon().name("soak-capture").start(capture));

            long start = System.nanoTime();
            long end = start + (long) (runSeconds * 1e9);
            // The baseline: each node after a few seconds of traffic, when its JVM has warmed up to the load.
            settle(Math.min(10, runSeconds / 4), end);
            for (SoakChild c : children) {
                baseline(c);
            }
            long nextProgress = System.nanoTime() + (long) (progress * 1e9);
            long nextKill = System.nanoTime() + killWait(random);
            while (System.nanoTime() < end) { // on through failures: the summary counts them all
                long now = System.nanoTime();
                if (now >= nextProgress) {
                    progress(start, tcp, udp, rdma, capture);
                    nextProgress = now + (long) (progress * 1e9);
                }
                if (now >= nextKill && end - now > 10_000_000_000L && random.nextInt(children.size() + 1) == 0
                        && rdma.killOne(random)) { // an rping end, as often as each echo node; the round checks its survivor
                    kills++;
                    nextKill = System.nanoTime() + killWait(random);
                } else if (now >= nextKill && end - now > 10_000_000_000L) { // leave room for the restart to settle
                    SoakChild victim = children.get(random.nextInt(children.size()));
                    victim.kill();
                    kills++;
                    Thread.sleep(500 + random.nextInt(2500)); // down for a while: its peers notice
                    victim.start();
                    started.add(victim.process);
                    restarts++;
                    settle(5, end);
                    baseline(victim); // a new process: a new baseline
                    checkResources(victim);
                    nextKill = System.nanoTime() + killWait(random);
                }
                Thread.sleep(50);
            }
            progress(start, tcp, udp, rdma, capture);
            checkResources(null);
            for (SoakChild c : children) {
                if (!c.process.isAlive()) {
                    failures.add("node " + c.address + " died without being killed: " + c.lastLines());
                }
            }
        } finally {
            if (tcp != null) {
                tcp.stop();
            }
            if (udp != null) {
                udp.stop();
            }
            if (rdma != null) {
                rdma.stop();
            }
            if (capture != null) {
                capture.stop();
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(180));
            }
            for (SoakChild c : children) {
                if (c.process != null) {
                    dev.nupa.perf.Children.stop(c.process, 20);
                }
            }
            if (self != null) {
                self.closeAndWait();
            }
            Files.deleteIfExists(fabric);
        }
        leftBehind(started);
        return summary(tcp, udp, rdma, capture);
    }

    private long killWait(SplittableRandom random) {
        return (long) (killEvery * (0.5 + random.nextDouble()) * 1e9);
    }

    /** Waits while the traffic runs, as long as the run is not over. */
    private void settle(double secondsToWait, long end) throws InterruptedException {
        long until = Math.min(end, System.nanoTime() + (long) (secondsToWait * 1e9));
        while (System.nanoTime() < until) {
            Thread.sleep(50);
        }
    }

    private void baseline(SoakChild c) {
        c.baseRss = c.rss();
        c.baseFds = c.fds();
    }

    /**
     * Every node that lived through the kill (not {@code restarted}) must be back near its baseline: VmRSS within
     * +25% or +64 MiB of it (whichever allows more), open descriptors within +8.
     */
    private void checkResources(SoakChild restarted) {
        for (SoakChild c : children) {
            if (c == restarted) {
                continue;
            }
            long rss = c.rss();
            long fds = c.fds();
            if (rss < 0 || fds < 0) {
                failures.add("node " + c.address + " is gone: " + c.lastLines());
                continue;
            }
            if (!sampled || rss - c.baseRss > maxRss - maxRssBase) {
                maxRss = rss;
                maxRssBase = c.baseRss;
            }
            if (!sampled || fds - c.baseFds > maxFds - maxFdsBase) {
                maxFds = fds;
                maxFdsBase = c.baseFds;
            }
            sampled = true;
            if (rss > Math.max(c.baseRss + c.baseRss / 4, c.baseRss + RSS_SLACK)) {
                failures.add("node " + c.address + " VmRSS " + rss / 1024 + " KiB, over its baseline " + c.baseRss / 1024
                        + " KiB + 25% or + 64 MiB");
            }
            if (fds > c.baseFds + FD_SLACK) {
                failures.add("node " + c.address + " has " + fds + " file descriptors open, over its baseline " + c.baseFds + " + 8");
            }
        }
    }

    /** No process this soak started, nor any child of one, may outlive it. */
    private void leftBehind(List<Process> started) {
        for (Process p : started) {
            p.descendants().filter(ProcessHandle::isAlive).forEach(d -> {
                failures.add("process " + d.pid() + " (a child of node process " + p.pid() + ") was left behind");
                d.destroyForcibly();
            });
            if (p.isAlive()) {
                failures.add("node process " + p.pid() + " was left behind");
                p.destroyForcibly();
            }
        }
        ProcessHandle.current().children().filter(ProcessHandle::isAlive).forEach(d -> {
            failures.add("process " + d.pid() + " " + d.info().commandLine().orElse("") + " was left behind");
            d.destroyForcibly();
        });
    }

    private void progress(long start, SoakTcp tcp, SoakUdp udp, SoakRdma rdma, SoakCapture capture) {
        System.out.printf(Locale.ROOT, "soak: %4.0f s  tcp %s  udp %s  rdma %s  capture %s  kills %d  restarts %d  resets %d  lost %d  failures %d%n",
                (System.nanoTime() - start) / 1e9, mib(tcp.bytesChecked.get()), mib(udp.bytesChecked.get()),
                mib(rdma.bytesChecked.get()), mib(capture.bytesChecked.get()), kills, restarts, tcp.resets.get(), udp.lost.get(),
                failures.count());
        System.out.flush();
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    private int summary(SoakTcp tcp, SoakUdp udp, SoakRdma rdma, SoakCapture capture) {
        if (tcp == null) {
            return 1; // it failed to start; the exception says why
        }
        System.out.println("soak: summary");
        System.out.println("soak:   tcp bytes checked " + tcp.bytesChecked.get() + " in " + tcp.connections.get() + " connections, resets "
                + tcp.resets.get());
        System.out.println("soak:   udp bytes checked " + udp.bytesChecked.get() + " in " + udp.datagrams.get() + " datagrams, lost "
                + udp.lost.get());
        System.out.println("soak:   rdma bytes checked " + rdma.bytesChecked.get() + " in " + rdma.rounds.get() + " rping rounds, "
                + rdma.kills.get() + " rping ends killed");
        System.out.println("soak:   capture bytes checked " + capture.bytesChecked.get() + " in " + capture.frames.get()
                + " frames, captures broken " + capture.broken.get());
        System.out.println("soak:   kills " + kills + ", restarts " + restarts);
        System.out.println("soak:   max rss growth " + (maxRss - maxRssBase) / 1024 + " KiB (" + maxRss / 1024 + " KiB against baseline "
                + maxRssBase / 1024 + " KiB; allowed +25% or +64 MiB)");
        System.out.println("soak:   max fd growth " + (maxFds - maxFdsBase) + " (" + maxFds + " against baseline " + maxFdsBase
                + "; allowed +8)");
        long n = failures.count();
        failures.first().forEach(f -> System.out.println("soak:   failure: " + f));
        System.out.println(n == 0 ? "soak: PASS" : "soak: FAIL (" + n + " failures)");
        return n == 0 ? 0 : 1;
    }
}
