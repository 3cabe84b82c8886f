package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Linux's tools, run to their end, for the tests that use them as peers. */
final class Linux {
    private Linux() {
    }

    record Result(int status, String output) {
    }

    static Result run(long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        return run(true, timeoutSeconds, cmd);
    }

    /** Standard output alone (tshark warns on standard error when it runs as root). */
    static String stdout(long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        return run(false, timeoutSeconds, cmd).output();
    }

    private static Result run(boolean withErrors, long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        ProcessBuilder b = new ProcessBuilder(cmd);
        if (withErrors) {
            b.redirectErrorStream(true);
        } else {
            b.redirectError(ProcessBuilder.Redirect.DISCARD);
        }
        Process p = b.start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes(); // ends when the process (and what it started) closes its output
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", cmd) + " did not finish in " + timeoutSeconds + " s");
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    static void ok(String... cmd) throws IOException, InterruptedException {
        Result r = run(10, cmd);
        assertEquals(0, r.status(), String.join(" ", cmd) + ": " + r.output());
    }

    /**
     * Starts tshark capturing on {@code iface} in namespace {@code ns} into {@code pcap} (the classic pcap format),
     * and returns once it writes; end it with {@link #endCapture}.
     */
    static Process capture(String ns, String iface, Path pcap) throws IOException {
        Process p = new ProcessBuilder("ip", "netns", "exec", ns, "tshark", "-q", "-F", "pcap", "-i", iface, "-w", pcap.toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        ChildJvm.waitUntil("tshark to start capturing", 30_000, () -> pcap.toFile().length() > 0);
        return p;
    }

    /** Ends a {@link #capture} once the last frames reached it; fails if tshark does not stop. */
    static void endCapture(Process capture) throws InterruptedException {
        Thread.sleep(500); // the last frames reach the capture
        capture.destroy();
        if (!capture.waitFor(20, TimeUnit.SECONDS)) {
            capture.destroyForcibly();
            throw new AssertionError("tshark did not stop within 20 s");
        }
    }

    /** The first of {@code tools} that is not on the PATH, or null. */
    static String missing(String... tools) throws IOException, InterruptedException {
        for (String t : tools) {
            if (run(5, "sh", "-c", "command -v " + t).status() != 0) {
                return t;
            }
        }
        return null;
    }
}
