package dev.nupa.node.soak;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.nupa.perf.Children;

/**
 * One long-lived `nupa node` process of a soak (TCP and UDP echo, on one node a gRPC endpoint too), which the soak
 * kills and starts again. {@link #generation} counts its lives: traffic that was in flight to an earlier life may
 * be lost, traffic within one life may not.
 */
final class SoakChild {
    static final List<String> JVM = List.of("-Xmx192m", "-XX:-UsePerfData");
    private static final Pattern GRPC = Pattern.compile("gRPC on 127\\.0\\.0\\.1:(\\d+)");

    final int address;
    final boolean grpc;
    private final Path fabric;
    private final int echoPort;
    private final ArrayDeque<String> lastLines = new ArrayDeque<>();
    volatile Process process;
    volatile boolean up;
    volatile int generation;
    volatile int grpcPort;
    long baseRss;
    long baseFds;

    SoakChild(Path fabric, int address, int echoPort, boolean grpc) {
        this.fabric = fabric;
        this.address = address;
        this.echoPort = echoPort;
        this.grpc = grpc;
    }

    /** The node's IPv4 address: the default one for its fabric address. */
    String ip() {
        return "10.0.0." + (address + 1);
    }

    /** Starts the process and waits until the node says it serves. */
    void start() throws Exception {
        List<String> args = new ArrayList<>(List.of("node", "--fabric", fabric.toString(), "--address", String.valueOf(address),
                "--tcp-echo", String.valueOf(echoPort), "--udp-echo", String.valueOf(echoPort)));
        if (grpc) {
            args.addAll(List.of("--grpc", "127.0.0.1:0"));
        }
        Process p = new ProcessBuilder(Children.javaCommand(JVM, args)).redirectErrorStream(true).start();
        process = p;
        CompletableFuture<String> ready = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("nupa node: ")) {
                        ready.complete(line);
                    }
                    synchronized (lastLines) {
                        lastLines.addLast(line);
                        if (lastLines.size() > 20) {
                            lastLines.removeFirst();
                        }
                    }
                }
            } catch (IOException e) {
                // the process is gone; its exit says the rest
            }
            ready.complete(null);
        }, "soak-node-" + address);
        reader.setDaemon(true);
        reader.start();
        String line = ready.get(60, TimeUnit.SECONDS);
        if (line == null) {
            throw new IllegalStateException("node " + address + " exited (status " + Children.waitFor(p, 5) + ") before it served: "
                    + lastLines());
        }
        if (grpc) {
            Matcher m = GRPC.matcher(line);
            if (!m.find()) {
                throw new IllegalStateException("node " + address + " did not say its gRPC port: " + line);
            }
            grpcPort = Integer.parseInt(m.group(1));
        }
        up = true;
    }

    /** SIGKILL: no shutdown hook runs, the node leaves nothing tidy behind. */
    void kill() throws InterruptedException {
        up = false;
        generation++;
        Process p = process;
        p.destroyForcibly(); // SIGKILL on Linux
        p.waitFor(30, TimeUnit.SECONDS);
    }

    String lastLines() {
        synchronized (lastLines) {
            return String.join(" | ", lastLines);
        }
    }

    long pid() {
        return process.pid();
    }

    /** VmRSS in bytes, from /proc/PID/status; -1 when the process is gone. */
    long rss() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/" + pid() + "/status"))) {
                if (l.startsWith("VmRSS:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** Open file descriptors, the entries of /proc/PID/fd; -1 when the process is gone. */
    long fds() {
        try (var s = Files.list(Path.of("/proc/" + pid() + "/fd"))) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }
}
