package dev.nupa.node.cli;

import java.io.File;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.jar.JarFile;

import dev.nupa.transport.NodeProperties;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * `nupa run`: an unmodified Vert.x program on a fabric node, as OpenOnload's {@code onload ./app} runs a program on
 * its stack. The program runs in a JVM of its own (its own Vert.x and Netty, its own JVM options) with the NUPA jars
 * after its class path and the node named by nupa.* system properties, which the transport's Vert.x service
 * provider reads as each Vert.x instance is built (docs/vertx-transport.md). The program's exit status is this
 * command's.
 */
@Command(name = "run", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run an unmodified Vert.x program on a fabric node: every Vertx.vertx() of it is a node of the fabric.",
                "  nupa run --fabric /dev/shm/f1 --address 0 -- -cp app.jar:lib/* MAIN_CLASS ARGS",
                "  nupa run --fabric /dev/shm/f1 --address 0 -- -jar app.jar ARGS"})
final class RunCommand implements Callable<Integer> {
    @Option(names = "--fabric", required = true, paramLabel = "PATH", description = "Fabric file (created if missing).")
    Path fabric;

    @Option(names = "--address", paramLabel = "N", defaultValue = "-1",
            description = "Fabric address of the program's (first) Vert.x instance (default: the first free one); further"
                    + " instances take the first free addresses.")
    int address;

    @Option(names = "--ip", paramLabel = "A.B.C.D/LEN", description = "IPv4 address and prefix (default: 10.0.0.(address+1)/24).")
    String ip;

    @Option(names = "--route", paramLabel = "ROUTE",
            description = "A route, e.g. \"10.9.0.0/16 via 10.0.0.254\" or \"default via 10.0.0.254\"; repeatable.")
    List<String> routes = new ArrayList<>();

    @Option(names = "--loops", paramLabel = "N", defaultValue = "1", description = "Event loops sharing the address (default: ${DEFAULT-VALUE}).")
    int loops;

    @Option(names = "--mtu", paramLabel = "BYTES", defaultValue = "9000", description = "Link MTU (default: ${DEFAULT-VALUE}).")
    int mtu;

    @Option(names = "--spin", description = "Busy-poll the datapath without ever sleeping (lowest latency, a core per loop).")
    boolean spin;

    @Option(names = {"-J", "--jvm-option"}, paramLabel = "OPTION", description = "An option for the program's JVM (e.g. -J-Xmx1g); repeatable.")
    List<String> jvmOptions = new ArrayList<>();

    @Parameters(paramLabel = "PROGRAM", arity = "1..*",
            description = "After --: [-cp CLASS_PATH] MAIN_CLASS [ARGS...], or -jar APP.jar [ARGS...] (the class path defaults to"
                    + " $CLASSPATH, else the current directory, as for java).")
    List<String> program;

    @Override
    public Integer call() throws Exception {
        Map<String, String> properties = properties();
        NodeProperties.from(properties::get, name -> null); // a wrong --ip or --route fails here, before anything starts
        Path dir = fabric.toAbsolutePath().getParent();
        if (dir != null && !Files.isDirectory(dir)) {
            throw new IllegalArgumentException("--fabric " + fabric + ": no directory " + dir);
        }
        String classPath;
        String main;
        int at = 0;
        if (program.get(0).equals("-jar")) {
            if (program.size() < 2) {
                throw new IllegalArgumentException("-jar needs the application's jar: -jar APP.jar [ARGS...]");
            }
            Path jar = Path.of(program.get(1));
            main = mainClassOf(jar);
            classPath = jar.toString();
            at = 2;
        } else {
            if (Set.of("-cp", "-classpath", "--class-path").contains(program.get(0))) {
                if (program.size() < 3) {
                    throw new IllegalArgumentException(program.get(0) + " needs a class path and a main class: " + program.get(0)
                            + " CLASS_PATH MAIN_CLASS [ARGS...]");
                }
                classPath = program.get(1);
                at = 2;
            } else {
                classPath = System.getenv("CLASSPATH") != null ? System.getenv("CLASSPATH") : ".";
            }
            main = program.get(at);
            if (main.startsWith("-")) {
                throw new IllegalArgumentException("the program is [-cp CLASS_PATH] MAIN_CLASS [ARGS...] or -jar APP.jar [ARGS...],"
                        + " not " + main + "; give JVM options with -J");
            }
            at++;
            requireClass(main, classPath);
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("cannot tell this JVM's java command")));
        cmd.add("--enable-native-access=ALL-UNNAMED"); // the fabric's futex doorbell is a native call
        cmd.addAll(jvmOptions);
        properties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add("-cp");
        cmd.add(classPath + File.pathSeparator + String.join(File.pathSeparator, nupaJars()));
        cmd.add(main);
        cmd.addAll(program.subList(at, program.size()));
        Process child = new ProcessBuilder(cmd).inheritIO().start();
        // Ctrl-C or a kill of this command ends the program too (its shutdown hooks close its Vert.x and so its node).
        Thread stop = new Thread(() -> {
            child.destroy();
            try {
                child.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Runtime.getRuntime().addShutdownHook(stop);
        int status = child.waitFor();
        try {
            Runtime.getRuntime().removeShutdownHook(stop);
        } catch (IllegalStateException shuttingDown) {
            // this JVM is ending (a signal): the hook has ended the program, whose status is the one to return
        }
        return status;
    }

    /** The node as the nupa.* system properties the transport's Vert.x service provider reads. */
    private Map<String, String> properties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("nupa.fabric", fabric.toAbsolutePath().toString());
        p.put("nupa.address", Integer.toString(address));
        if (ip != null) {
            p.put("nupa.ip", ip);
        }
        if (!routes.isEmpty()) {
            p.put("nupa.routes", String.join(",", routes));
        }
        p.put("nupa.loops", Integer.toString(loops));
        p.put("nupa.mtu", Integer.toString(mtu));
        if (spin) {
            p.put("nupa.spin", "true");
        }
        return p;
    }

    private static String mainClassOf(Path jar) {
        if (!Files.isRegularFile(jar)) {
            throw new IllegalArgumentException("no jar " + jar);
        }
        try (JarFile j = new JarFile(jar.toFile())) {
            String main = j.getManifest() == null ? null : j.getManifest().getMainAttributes().getValue("Main-Class");
            if (main == null) {
                throw new IllegalArgumentException(jar + " names no Main-Class in its manifest; give -cp " + jar + " MAIN_CLASS");
            }
            return main.trim();
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read jar " + jar + ": " + e.getMessage(), e);
        }
    }

    /** Throws unless {@code main}'s class file is on {@code classPath} (looked up, not loaded: nothing of it runs here). */
    private static void requireClass(String main, String classPath) throws IOException {
        List<URL> urls = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.endsWith("*")) { // as java: every jar of the directory
                Path d = Path.of(entry.substring(0, entry.length() - 1).isEmpty() ? "." : entry.substring(0, entry.length() - 1));
                if (Files.isDirectory(d)) {
                    try (DirectoryStream<Path> jars = Files.newDirectoryStream(d, "*.{jar,JAR}")) {
                        for (Path j : jars) {
                            urls.add(url(j));
                        }
                    }
                }
            } else if (!entry.isEmpty()) {
                urls.add(url(Path.of(entry)));
            }
        }
        try (URLClassLoader loader = new URLClassLoader(urls.toArray(URL[]::new), null)) {
            if (loader.findResource(main.replace('.', '/') + ".class") == null) {
                throw new IllegalArgumentException("no class " + main + " on the class path " + classPath);
            }
        }
    }

    private static URL url(Path p) throws MalformedURLException {
        return p.toAbsolutePath().toUri().toURL();
    }

    /** Where the transport and the layers under it are: their jars in the distribution's lib/, or their classes in a build. */
    private static List<String> nupaJars() throws URISyntaxException {
        Set<String> out = new LinkedHashSet<>();
        for (Class<?> c : List.of(dev.nupa.transport.NupaVertx.class, dev.nupa.tcp.TcpLayer.class, dev.nupa.ip.Ipv4Stack.class,
                dev.nupa.l2.Link.class, dev.nupa.device.ShmFabric.class)) {
            out.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
        }
        return List.copyOf(out);
    }
}
