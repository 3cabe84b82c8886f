package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
        List<String> all = new ArrayList<>(List.of("soak"));
        all.addAll(List.of(args));
        return NupaCommandLineTest.nupa(400, java.util.Map.of(), all.toArray(String[]::new));
    }

    @Test
    void aShortSoakChecksEveryKindOfTrafficThroughAKillAndRestart() throws Exception {
        NupaCommandLineTest.Run r = soak("--seconds", "20", "--kill-every", "4", "--seed", "7", "--progress", "10");
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
        NupaCommandLineTest.Run r = NupaCommandLineTest.here("soak", "--seconds", "1");
        assertEquals(2, r.status(), r.out() + r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("5 s to 7 days"), r.err());
    }
}
