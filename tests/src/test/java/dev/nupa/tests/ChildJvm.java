package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A child JVM that runs one of this package's {@code *Main} classes on the test class path. Its
 * stdout and stderr go to a log file (so a full pipe never blocks it); the child ends with a
 * line {@code RESULT key=value ...} that {@link #awaitResult} parses. {@link #close()} kills it if
 * it still runs and deletes the log.
 */
final class ChildJvm implements AutoCloseable {
    static final long MS = 1_000_000L;

    final String name;
    final Process process;
    private final Path log;

    private ChildJvm(String name, Process process, Path log) {
        this.name = name;
        this.process = process;
        this.log = log;
    }

    static ChildJvm start(String name, Class<?> main, Object... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("no java command")));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-XX:+UseSerialGC"); // fewer GC threads beside busy pollers on a 2-core machine
        cmd.add("-Xmx256m");
        cmd.add("-XX:-UsePerfData");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        for (Object a : args) {
            cmd.add(String.valueOf(a));
        }
        try {
            Path log = Files.createTempFile("nupa-mp-" + name + "-", ".log");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            return new ChildJvm(name, p, log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start child JVM " + name, e);
        }
    }

    static Path newFabricPath() {
        return Path.of("/dev/shm/nupa-mp-" + UUID.randomUUID());
    }

    long pid() {
        return process.pid();
    }

    String output() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    /** Waits until the child has printed a line starting with {@code prefix}; fails if it exits first or after {@code timeoutMs}. */
    String awaitLine(String prefix, long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * MS;
        while (true) {
            for (String line : output().split("\n")) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            if (!process.isAlive()) {
                fail(name + " exited (status " + process.exitValue() + ") before printing " + prefix + "; its output:\n" + output());
            }
            if (System.nanoTime() - deadline > 0) {
                fail(name + " printed no " + prefix + " line within " + timeoutMs + " ms; its output:\n" + output());
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RuntimeException(e);
            }
        }
    }

    /** Closes the child's stdin: the producers that run "until stdin closes" finish and report. */
    void closeStdin() {
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // the child is gone already; its result (or its absence) tells
        }
    }

    /** SIGKILL, and wait for the process to be gone. */
    void kill() {
        process.destroyForcibly();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                fail(name + " (pid " + pid() + ") survived SIGKILL for 10 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeException(e);
        }
    }

    /** Waits for the child to exit with status 0 and returns its RESULT fields; fails with its output otherwise. */
    Map<String, String> awaitResult(long timeoutMs) {
        try {
            if (!process.waitFor(timeoutMs, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
                fail(name + " did not finish within " + timeoutMs + " ms; its output:\n" + output());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeException(e);
        }
        String out = output();
        Map<String, String> result = parseResult(out);
        if (result == null) {
            fail(name + " exited with status " + process.exitValue() + " and no RESULT line; its output:\n" + out);
        }
        if (process.exitValue() != 0) {
            fail(name + " exited with status " + process.exitValue() + "; its output:\n" + out);
        }
        return result;
    }

    static Map<String, String> parseResult(String out) {
        Map<String, String> result = null;
        for (String line : out.split("\n")) {
            if (line.startsWith("RESULT ")) {
                result = new LinkedHashMap<>();
                for (String field : line.substring(7).trim().split(" +")) {
                    int eq = field.indexOf('=');
                    if (eq > 0) {
                        result.put(field.substring(0, eq), field.substring(eq + 1));
                    }
                }
            }
        }
        return result;
    }

    static long num(Map<String, String> result, String key) {
        String v = result.get(key);
        if (v == null) {
            fail("RESULT has no field " + key + ": " + result);
        }
        return Long.parseLong(v);
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // ignore
        }
        try {
            Files.deleteIfExists(log);
        } catch (IOException e) {
            // a leftover log in the temp directory is harmless
        }
    }

    /** Polls {@code condition} every millisecond until it holds; fails after {@code timeoutMs}. */
    static void waitUntil(String what, long timeoutMs, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeoutMs * MS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out after " + timeoutMs + " ms waiting until " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RuntimeException(e);
            }
        }
    }
}
