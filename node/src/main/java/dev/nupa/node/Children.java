package dev.nupa.node;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Starts this same command line in child JVMs (the two sides of a perf test or the demo's nodes). */
final class Children {
    private Children() {
    }

    static List<String> javaCommand(List<String> args) {
        return javaCommand(List.of(), args);
    }

    /** The command of a child JVM with {@code jvmOptions} before the main class and {@code args} after it. */
    static List<String> javaCommand(List<String> jvmOptions, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-XX:+UseSerialGC"); // fewer GC threads competing with two busy pollers on a small machine
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(args);
        return cmd;
    }

    static Process start(List<String> args) {
        return start(List.of(), args);
    }

    static Process start(List<String> jvmOptions, List<String> args) {
        try {
            return new ProcessBuilder(javaCommand(jvmOptions, args)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start a child JVM: " + e.getMessage(), e);
        }
    }

    static BufferedReader stdout(Process p) {
        return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    }

    /** Reads lines until one equals {@code line}; fails if the child exits first. */
    static void awaitLine(Process p, BufferedReader out, String line) throws IOException {
        String s;
        while ((s = out.readLine()) != null) {
            if (s.equals(line)) {
                return;
            }
            System.err.println(s);
        }
        throw new IllegalStateException("child process exited (status " + waitFor(p, 5) + ") before it was ready");
    }

    static int waitFor(Process p, long seconds) {
        try {
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
                return -1;
            }
            return p.exitValue();
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    /** Asks {@code p} to end (SIGTERM, so its shutdown hooks run), and kills it if it has not within {@code seconds}. */
    static void stop(Process p, long seconds) {
        if (p != null && p.isAlive()) {
            p.destroy();
            waitFor(p, seconds);
        }
    }

    static void kill(Process p) {
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
        }
    }
}
