package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * `bench/cluster-two-fabrics.sh run` as a user runs it, from the repository root: the cluster examples on two fabrics
 * behind gateways, two namespaces for the hosts. Each client is answered by the services on both fabrics, each service
 * prints every client's news, and afterwards nothing the script made is left (namespaces, TAP and veth devices, fabric
 * files, its state, its processes). A failed run says why in one line and removes what it made. Each run names what it
 * makes with a fresh TWO_FABRICS_ID and takes free membership ports (FIRST_PORT), so it runs beside other tests. The
 * script's `nupa` builds the distribution and the examples first where they are stale (`mvn test` leaves them so;
 * `mvn verify` packages them before this module's tests).
 */
@Tag("linux")
class ClusterTwoFabricsScriptTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    /** A whole run, with room for `nupa` to build the distribution and the examples first where they are stale. */
    private static final long RUN_SECONDS = 540;
    private static final List<String> SERVICES = List.of("10.0.0.2", "10.0.1.2");

    private final String id = "t" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
    private final String nsA = "nupa" + id + "-hosta";
    private final String nsB = "nupa" + id + "-hostb";
    private final List<String> devices = List.of("nupa" + id + "a", "nupa" + id + "b", "nupa" + id + "va", "nupa" + id + "vb");
    private final List<Path> fabrics = List.of(Path.of("/dev/shm/nupa-" + id + "-a"), Path.of("/dev/shm/nupa-" + id + "-b"));
    private final Path state = Path.of("/tmp/nupa-cluster-two-fabrics-" + id);

    private record Run(int status, String out, String err) {
    }

    @BeforeEach
    void needsRootIpAndNamespaces() throws Exception {
        String missing = Linux.missing("ip");
        Assumptions.assumeTrue(missing == null, () -> "skipping: " + missing + " is absent (apt-get install iproute2)");
        Assumptions.assumeTrue("0".equals(Linux.run(5, "id", "-u").output().strip()), "skipping: the script needs root");
        Assumptions.assumeTrue(Files.isWritable(Path.of("/dev/net/tun")),
                "skipping: /dev/net/tun is not writable here (no TAP devices without it and CAP_NET_ADMIN)");
        String probe = "nupa-" + id + "-probe";
        Linux.Result made = Linux.run(10, "ip", "netns", "add", probe);
        Linux.run(10, "ip", "netns", "del", probe);
        Assumptions.assumeTrue(made.status() == 0, () -> "skipping: cannot create a network namespace: " + made.output());
    }

    @Test
    void eachClientIsAnsweredByBothServicesWhichPrintAllTheNewsAndNothingIsLeft() throws Exception {
        Run r = script(ClusterExampleTest.freeRun(4), "run");
        assertEquals(0, r.status(), () -> "the run failed:\n" + r.out() + r.err());
        System.out.print("ClusterTwoFabricsScriptTest: the script printed:\n" + r.out());
        Map<String, List<String>> sections = sections(r.out());
        for (String[] client : new String[][] {{"client-b", "10.0.1.3"}, {"client-a", "10.0.0.3"}}) {
            List<String> replies = sections.getOrDefault(client[0], List.of());
            Set<String> answeredBy = new TreeSet<>();
            List<String> asked = new ArrayList<>(List.of("client at " + client[1] + " (first)"));
            for (int i = 1; i <= 4; i++) {
                asked.add("request " + i);
            }
            asked.add("client at " + client[1] + " (last)");
            for (String request : asked) {
                Pattern reply = Pattern.compile("hello " + Pattern.quote(request) + " from (10\\.0\\.[01]\\.2)");
                List<String> found = replies.stream().filter(l -> reply.matcher(l).matches()).toList();
                assertEquals(1, found.size(), () -> client[0] + ": one reply to '" + request + "' in\n" + r.out());
                Matcher m = reply.matcher(found.get(0));
                assertTrue(m.matches());
                answeredBy.add(m.group(1));
            }
            assertEquals(new TreeSet<>(SERVICES), answeredBy, () -> client[0] + " answered by both services:\n" + r.out());
        }
        for (String service : List.of("service-a", "service-b")) {
            List<String> news = sections.getOrDefault(service, List.of());
            for (String from : List.of("10.0.0.3", "10.0.1.3")) {
                for (int i = 1; i <= 4; i++) {
                    String line = "news: news " + i + " from " + from;
                    assertEquals(1, news.stream().filter(line::equals).count(), () -> service + " printed '" + line + "' once:\n" + r.out());
                }
            }
        }
        Matcher packets = Pattern.compile("(?m)^== packets between host A and host B \\(.*\\): (\\d+)$").matcher(r.out());
        assertTrue(packets.find(), r.out());
        assertTrue(Long.parseLong(packets.group(1)) > 0, () -> "the event bus crossed between the hosts:\n" + r.out());
        assertTrue(r.out().contains("cluster-two-fabrics: down ("), r.out());
        assertNothingLeft();
    }

    @Test
    void aRunThatFailsSaysWhyInOneLineAndRemovesWhatItMade() throws Exception {
        int firstPort = ClusterExampleTest.freeRun(4);
        // Member 0's membership port taken: service-a cannot join, after the gateways and hosts are up.
        try (ServerSocket taken = new ServerSocket(firstPort, 1, InetAddress.getByName("127.0.0.1"))) {
            Run r = script(firstPort, "run");
            assertEquals(1, r.status(), () -> r.out() + r.err());
            Path kept = Path.of("/tmp/nupa-cluster-two-fabrics-" + id + "-service-a.log");
            assertEquals("cluster-two-fabrics: service-a ended before printing 'cluster service on' (its output: " + kept + ")",
                    ownLines(r.err()), r.err());
            assertTrue(Files.readString(kept).contains("cluster-service: "), "the service's own error is kept");
            Files.delete(kept);
        }
        assertNothingLeft();
    }

    @Test
    void aNamespaceInTheWayIsNamedAndLeftAlone() throws Exception {
        Linux.ok("ip", "netns", "add", nsB);
        try {
            Run r = script(ClusterExampleTest.freeRun(4), "run");
            assertEquals(1, r.status(), () -> r.out() + r.err());
            assertEquals("cluster-two-fabrics: namespace " + nsB + " exists (left by another run?): '"
                    + Path.of("bench", "cluster-two-fabrics.sh") + " down' removes it", r.err().strip());
            assertTrue(namespaces().contains(nsB), "the script leaves a namespace it did not make");
        } finally {
            Linux.run(10, "ip", "netns", "del", nsB);
        }
        assertNothingLeft();
    }

    /** Runs the script from the repository root with this test's names and ports; kills it and fails after the bound. */
    private Run script(int firstPort, String... args) throws IOException, InterruptedException {
        Path out = Files.createTempFile("nupa-c2f-out", ".txt");
        Path err = Files.createTempFile("nupa-c2f-err", ".txt");
        try {
            List<String> cmd = new ArrayList<>(List.of(Path.of("bench", "cluster-two-fabrics.sh").toString()));
            cmd.addAll(List.of(args));
            ProcessBuilder b = new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile());
            b.environment().put("TWO_FABRICS_ID", id);
            b.environment().put("FIRST_PORT", Integer.toString(firstPort));
            Process p = b.start();
            if (!p.waitFor(RUN_SECONDS, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                fail("bench/cluster-two-fabrics.sh " + String.join(" ", args) + " did not finish in " + RUN_SECONDS + " s:\n"
                        + Files.readString(out) + Files.readString(err));
            }
            return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** The output's sections by their process: "== client-b (...)" to the next "==" line. */
    private static Map<String, List<String>> sections(String out) {
        Map<String, List<String>> sections = new LinkedHashMap<>();
        List<String> current = new ArrayList<>();
        for (String line : out.split("\n")) {
            if (line.startsWith("== ")) {
                current = new ArrayList<>();
                sections.put(line.split(" ")[1], current);
            } else {
                current.add(line);
            }
        }
        return sections;
    }

    /** Standard error without the lines `nupa` prints while it builds what is stale. */
    private static String ownLines(String err) {
        return String.join("\n", err.lines().filter(l -> !l.startsWith("nupa: building ")).toList());
    }

    private static Set<String> namespaces() throws IOException, InterruptedException {
        Set<String> names = new TreeSet<>();
        for (String line : Linux.run(10, "ip", "netns", "list").output().split("\n")) {
            if (!line.isBlank()) {
                names.add(line.strip().split(" ")[0]);
            }
        }
        return names;
    }

    private void assertNothingLeft() throws IOException, InterruptedException {
        Set<String> ns = namespaces();
        assertFalse(ns.contains(nsA) || ns.contains(nsB), "namespaces left: " + ns);
        String links = Linux.run(10, "ip", "-o", "link").output();
        for (String device : devices) {
            assertFalse(Pattern.compile("(?m)^\\d+: " + device + "[:@]").matcher(links).find(), device + " left:\n" + links);
        }
        for (Path f : fabrics) {
            assertFalse(Files.exists(f), f + " left");
        }
        assertFalse(Files.exists(state), state + " left");
        List<String> running = processesOnOurFabrics();
        assertTrue(running.isEmpty(), "processes left: " + running);
    }

    /** Command lines naming this test's fabric files. */
    private List<String> processesOnOurFabrics() {
        String prefix = "/dev/shm/nupa-" + id + "-";
        return ProcessHandle.allProcesses().map(p -> p.info().commandLine().orElse(""))
                .filter(c -> c.contains(prefix)).toList();
    }

    /** Whatever a failed run or assertion left: the script's own `down`, then its names one by one. */
    @AfterEach
    void removeWhatIsLeft() throws Exception {
        if (Files.exists(state)) {
            script(1, "down");
        }
        String prefix = "/dev/shm/nupa-" + id + "-";
        ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains(prefix))
                .forEach(ProcessHandle::destroyForcibly);
        for (String ns : List.of(nsA, nsB)) {
            if (namespaces().contains(ns)) {
                Linux.run(10, "ip", "netns", "del", ns);
            }
        }
        for (Path f : fabrics) {
            Files.deleteIfExists(f);
        }
        for (String name : List.of("gateway-a", "gateway-b", "service-a", "service-b", "client-a", "client-b")) {
            Files.deleteIfExists(Path.of(state + "-" + name + ".log")); // the log a failed run keeps
        }
        if (Files.exists(state)) {
            try (Stream<Path> s = Files.walk(state)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }
}
