package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.Fabric;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import java.io.File;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** `nupa run`: an unmodified Vert.x program on a fabric node, reached from another node; the launcher's errors. */
@Tag("process")
class NupaRunTest {
    private final Path fabric = ChildJvm.newFabricPath();
    private final List<Path> files = new ArrayList<>(List.of(fabric));

    @AfterEach
    void cleanUp() throws Exception {
        for (Path p : files) {
            Files.deleteIfExists(p);
        }
    }

    /**
     * The test class path without NUPA's modules, which the launcher adds: the program's own classes, Vert.x and
     * Netty. Every NUPA jar goes (nupa-node.jar too, whose manifest would bring its lib/ back), and every module's
     * target/classes where Maven puts those instead of jars.
     */
    private static String programClassPath() throws Exception {
        // Surefire may start the tests from a jar whose manifest holds the class path (java.class.path is then that
        // one jar); it gives the entries themselves in surefire.test.class.path.
        String[] entries = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"))
                .split(File.pathSeparator);
        List<String> kept = new ArrayList<>();
        for (String e : entries) {
            Path p = Path.of(e);
            if (!p.getFileName().toString().startsWith("nupa-") && !p.endsWith(Path.of("target", "classes"))) {
                kept.add(e);
            }
        }
        Set<String> nupa = new TreeSet<>();
        for (Class<?> c : List.of(NupaVertx.class, dev.nupa.tcp.TcpLayer.class, dev.nupa.ip.Ipv4Stack.class,
                dev.nupa.l2.Link.class, ShmFabric.class)) {
            nupa.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
        }
        for (String e : kept) {
            assertTrue(!nupa.contains(Path.of(e).toAbsolutePath().toString()), () -> e + " is a NUPA module: the program"
                    + " must get NUPA only from the launcher");
        }
        return String.join(File.pathSeparator, kept);
    }

    private Set<Integer> attached() {
        try (Fabric f = ShmFabric.join(fabric)) {
            Set<Integer> out = new TreeSet<>();
            for (NodeInfo n : f.nodes()) {
                if (!n.state().equals("FREE")) {
                    out.add(n.address());
                }
            }
            return out;
        }
    }

    @Test
    void anUnmodifiedVertxProgramServesHttpToAnotherNodeAndItsExitStatusIsHandedOn() throws Exception {
        try (ChildJvm run = ChildJvm.start("nupa-run", dev.nupa.node.cli.Main.class, "run", "--fabric", fabric, "--address", "0", "--",
                "-cp", programClassPath(), PlainVertxMain.class.getName())) {
            String line = run.awaitLine("LISTENING", 60_000);
            assertEquals("LISTENING transport=dev.nupa.transport.NupaTransport", line);
            Vertx client = NupaVertx.create(StackConfig.defaults(fabric, 1));
            try {
                HttpClient http = client.createHttpClient();
                String body = http.request(HttpMethod.GET, 8080, "10.0.0.1", "/")
                        .compose(req -> req.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString();
                assertEquals("hello from a plain Vert.x program", body);
                assertEquals(Set.of(0, 1), attached());
                String bye = http.request(HttpMethod.GET, 8080, "10.0.0.1", "/exit/7")
                        .compose(req -> req.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString();
                assertEquals("bye", bye);
                assertTrue(run.process.waitFor(30, TimeUnit.SECONDS), "nupa run ended: " + run.output());
                assertEquals(7, run.process.exitValue(), run.output());
                assertEquals(Set.of(1), attached(), "the program's node left the fabric as its Vert.x closed");
            } finally {
                client.close().await(10, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aJarProgramRunsWithItsManifestsMainClassAndItsStatusIsHandedOn() throws Exception {
        Path jar = Files.createTempFile("nupa-run-exit-", ".jar");
        files.add(jar);
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(Attributes.Name.MAIN_CLASS, ExitMain.class.getName());
        String entry = ExitMain.class.getName().replace('.', '/') + ".class";
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), m);
             InputStream in = ExitMain.class.getClassLoader().getResourceAsStream(entry)) {
            out.putNextEntry(new JarEntry(entry));
            in.transferTo(out);
        }
        NupaCommandLineTest.Run r = NupaCommandLineTest.nupa("run", "--fabric", fabric.toString(), "--", "-jar", jar.toString(), "3");
        assertEquals(3, r.status(), r.err());
        assertFalse(Files.exists(fabric), "the program made no Vert.x, so no node and no fabric file");
    }

    @Test
    void helpNamesBothFormsOfTheProgram() throws Exception {
        NupaCommandLineTest.Run r = NupaCommandLineTest.nupa("run", "--help");
        assertEquals(0, r.status(), r.err());
        assertTrue(r.out().contains("-- -jar app.jar") && r.out().contains("--fabric=PATH"), r.out());
    }

    private void assertOneLineError(NupaCommandLineTest.Run r, String mentions) {
        assertEquals(2, r.status(), r.err());
        String err = r.err().strip();
        assertFalse(err.contains("\n"), "one line, no stack trace: " + err);
        assertTrue(err.startsWith("nupa: ") && err.contains(mentions), err);
        assertEquals("", r.out());
        assertFalse(Files.exists(fabric), "nothing left behind: no fabric file");
    }

    @Test
    void badInputIsOneLineAndLeavesNothingBehind() throws Exception {
        assertOneLineError(NupaCommandLineTest.nupa("run", "--", "-cp", programClassPath(), PlainVertxMain.class.getName()),
                "Missing required option: '--fabric=PATH'");
        assertOneLineError(NupaCommandLineTest.nupa("run", "--fabric", fabric.toString(), "--", "-cp", programClassPath(),
                "com.example.NoSuchMain"), "no class com.example.NoSuchMain on the class path");
        Path missing = Path.of("/tmp/nupa-no-such-app-" + java.util.UUID.randomUUID() + ".jar");
        assertOneLineError(NupaCommandLineTest.nupa("run", "--fabric", fabric.toString(), "--", "-jar", missing.toString()),
                "no jar " + missing);
        assertOneLineError(NupaCommandLineTest.nupa("run", "--fabric", fabric.toString(), "--ip", "10.0.0.300/24", "--", "-cp",
                programClassPath(), PlainVertxMain.class.getName()), "nupa.ip");
    }
}
