package dev.nupa.perf;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Starts this same command line in child JVMs (the two sides of a perf test or the demo's nodes). The command
 * line sits above this module, so it names its main class here when it starts ({@link #launcher}).
 */
public final class Children {
    private static volatile String launcher;

    private Children() {
    }

    /** The class whose {@code main} child JVMs run: the `nupa` command line's, set as it starts. */
    public static void launcher(Class<?> main) {
        launcher = main.getName();
    }

    public static List<String> javaCommand(List<String> args) {
        return javaCommand(List.of(), args);
    }

    /** The command of a child JVM with {@code jvmOptions} before the main class and {@code args} after it. */
    public static List<String> javaCommand(List<String> jvmOptions, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-XX:+UseSerialGC"); // fewer GC threads competing with two busy pollers on a small machine
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        String main = launcher;
        if (main == null) {
            throw new IllegalStateException("no command line to start child JVMs with: call Children.launcher(Main.class) first");
        }
        cmd.add(main);
        cmd.addAll(args);
        return cmd;
    }

    public static Process start(List<String> args) {
        return start(List.of(), args);
    }

    public static Process start(List<String> jvmOptions, List<String> args) {
        try {
            return new ProcessBuilder(javaCommand(jvmOptions, args)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start a child JVM: " + e.getMessage(), e);
        }
    }

    public static BufferedReader stdout(Process p) {
        return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    }

    /** Reads lines until one equals {@code line}; fails if the child exits first. */
    public static void awaitLine(Process p, BufferedReader out, String line) throws IOException {
        String s;
        while ((s = out.readLine()) != null) {
            if (s.equals(line)) {
                return;
            }
            System.err.println(s);
        }
        throw new IllegalStateException("child process exited (status " + waitFor(p, 5) + ") before it was ready");
    }

    public static int waitFor(Process p, long seconds) {
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
    public static void stop(Process p, long seconds) {
        if (p != null && p.isAlive()) {
            p.destroy();
            waitFor(p, seconds);
        }
    }

    public static void kill(Process p) {
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
        }
    }

    /** Runs {@code nupa ARGS} (a tool given --json) in a child JVM to its end; its last line of output, as JSON. */
    static io.vertx.core.json.JsonObject runJson(List<String> args) throws IOException, InterruptedException {
        Process p = start(args);
        String last = null;
        try (BufferedReader r = p.inputReader(StandardCharsets.UTF_8)) {
            for (String line; (line = r.readLine()) != null; ) {
                last = line;
            }
        }
        int rc = p.waitFor();
        if (rc != 0 || last == null || !last.startsWith("{")) {
            throw new IllegalStateException("nupa " + String.join(" ", args) + " failed (exit " + rc + "); its last line: " + last);
        }
        return new io.vertx.core.json.JsonObject(last);
    }
}
