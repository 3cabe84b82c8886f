package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.node.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs the `nupa` command for the tests: in a JVM of its own where the process is the point (nodes, perf tools, the
 * demo, exit codes of real runs), or in the test JVM ({@link #here}, through {@code Main.run}) for refusals and the
 * fabric commands.
 */
final class NupaCli {
    private NupaCli() {
    }

    record Run(int status, String out, String err) {
        String lastLine() {
            String[] lines = out.strip().split("\n");
            return lines[lines.length - 1];
        }
    }

    static Run nupa(String... args) throws IOException, InterruptedException {
        return nupa(Map.of(), args);
    }

    static Run nupa(Map<String, String> env, String... args) throws IOException, InterruptedException {
        return nupa(120, env, args);
    }

    /** A process to run `nupa ARGS` in a JVM of its own, on this JVM's class path. */
    static ProcessBuilder builder(String... args) {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), "dev.nupa.node.cli.Main"));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd);
    }

    /**
     * `nupa ARGS` in a JVM of its own, with {@code env} added to this one's environment; after {@code seconds} it and the
     * processes it started are killed and the test fails.
     */
    static Run nupa(long seconds, Map<String, String> env, String... args) throws IOException, InterruptedException {
        Path out = Files.createTempFile("nupa-out", ".txt");
        Path err = Files.createTempFile("nupa-err", ".txt");
        try {
            ProcessBuilder b = builder(args).redirectOutput(out.toFile()).redirectError(err.toFile());
            b.environment().putAll(env);
            Process p = b.start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new AssertionError("nupa " + String.join(" ", args) + " did not finish in " + seconds + " s: " + Files.readString(out));
            }
            return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /**
     * `nupa ARGS` run in this JVM with its output captured: for refusals and the fabric commands, whose point is what
     * they print and return, not their process (each JVM start costs about 0.4 s here).
     */
    static synchronized Run here(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        try (PrintStream po = new PrintStream(o, true, StandardCharsets.UTF_8); PrintStream pe = new PrintStream(e, true, StandardCharsets.UTF_8)) {
            System.setOut(po);
            System.setErr(pe);
            int status = Main.run(args);
            return new Run(status, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }

    static void assertOneLineError(Run r, int status, String mentions) {
        assertEquals(status, r.status(), r.err());
        String err = r.err().strip();
        assertFalse(err.contains("\n"), "one line, no stack trace: " + err);
        assertTrue(err.startsWith("nupa: ") && err.contains(mentions), err);
    }
}
