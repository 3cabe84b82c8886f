package dev.nupa.node.soak;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import dev.nupa.perf.Children;

/** A short-lived `nupa` child of a soak (an rping end), its output lines kept as they come. */
final class SoakProcess {
    final Process process;
    final List<String> lines = new CopyOnWriteArrayList<>();

    SoakProcess(List<String> args) throws IOException {
        process = new ProcessBuilder(Children.javaCommand(SoakChild.JVM, args)).redirectErrorStream(true).start();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                }
            } catch (IOException e) {
                // gone; its exit status says the rest
            }
        }, "soak-child");
        reader.setDaemon(true);
        reader.start();
    }

    /** Waits until a line starts with {@code prefix}; false when the process ends first or the time is up. */
    boolean awaitLine(String prefix, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            if (lines.stream().anyMatch(l -> l.startsWith(prefix))) {
                return true;
            }
            if (!process.isAlive()) {
                return lines.stream().anyMatch(l -> l.startsWith(prefix));
            }
            Thread.sleep(20);
        }
        return false;
    }

    /** The exit status; a process still running after {@code seconds} is killed and reads -1. */
    int exit(long seconds) {
        return Children.waitFor(process, seconds);
    }

    String tail() {
        int n = lines.size();
        return String.join(" | ", lines.subList(Math.max(0, n - 5), n));
    }
}
