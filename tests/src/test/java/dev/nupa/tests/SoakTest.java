package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** `nupa soak` for a short while: every kind of traffic checked, a node killed and restarted, nothing left behind. */
@Tag("process")
class SoakTest {
    private static long count(String out, String pattern) {
        Matcher m = Pattern.compile(pattern).matcher(out);
        assertTrue(m.find(), "no '" + pattern + "' in:\n" + out);
        return Long.parseLong(m.group(1));
    }

    /** Runs `nupa soak`: longer than NupaCommandLineTest's 120 s allow, for the nodes' starts and the last rounds' ends. */
    private static NupaCommandLineTest.Run soak(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), "dev.nupa.node.cli.Main", "soak"));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("nupa-soak-out", ".txt");
        Path err = Files.createTempFile("nupa-soak-err", ".txt");
        try {
            Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(400, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new AssertionError("nupa soak did not finish in 400 s: " + Files.readString(out));
            }
            return new NupaCommandLineTest.Run(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    @Test
    void aShortSoakChecksEveryKindOfTrafficThroughAKillAndRestart() throws Exception {
        NupaCommandLineTest.Run r = soak("--seconds", "30", "--kill-every", "6", "--seed", "7", "--progress", "10");
        String out = r.out() + r.err();
        assertEquals(0, r.status(), out);
        assertTrue(r.out().contains("soak: PASS"), out);
        assertTrue(count(out, "tcp bytes checked (\\d+)") > 0, out);
        assertTrue(count(out, "udp bytes checked (\\d+)") > 0, out);
        assertTrue(count(out, "rdma bytes checked (\\d+)") > 0, out);
        assertTrue(count(out, "capture bytes checked (\\d+)") > 0, out);
        assertTrue(count(out, "kills (\\d+)") >= 1, out);
        assertTrue(count(out, "restarts (\\d+)") >= 1, out);
        Matcher fabric = Pattern.compile("fabric (/dev/shm/nupa-soak-\\S+)").matcher(out);
        assertTrue(fabric.find(), out);
        assertFalse(Files.exists(Path.of(fabric.group(1))), "the soak's fabric file is removed");
    }

    @Test
    void badOptionsAreOneLineWithStatusTwo() throws Exception {
        NupaCommandLineTest.Run r = NupaCommandLineTest.nupa("soak", "--seconds", "1");
        assertEquals(2, r.status(), r.out() + r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("5 s to 7 days"), r.err());
    }
}
