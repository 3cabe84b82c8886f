package dev.nupa.tests;

import dev.nupa.node.cli.Main;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Assumptions;

/**
 * Two fabrics, each behind a gateway (`nupa node --tap` on node 0), with Linux routing between the gateways' TAP
 * devices in a network namespace of its own, as two hosts joined by a router: fabric A is 10.0.0.0/24 (gateway
 * 10.0.0.1), fabric B 10.0.1.0/24 (gateway 10.0.1.1); the TAP sides are 192.168.{@code subnetA}.0/24 and
 * 192.168.{@code subnetB}.0/24, Linux .1 and the gateways .2 on them. A test starts its own processes through
 * {@link #start}; {@link #close} stops them all and removes the namespace and the fabric files. Skips (JUnit
 * assumptions) where ip, TAP devices or network namespaces are not to be had.
 */
final class TwoFabrics implements AutoCloseable {
    final String ns;
    final String tapA;
    final String tapB;
    final Path fabricA;
    final Path fabricB;
    private final List<ChildJvm> children = new ArrayList<>();

    private TwoFabrics(String tag) {
        String id = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
        ns = "nupa-" + tag + "-" + id;
        tapA = "nupa" + tag + "a" + id;
        tapB = "nupa" + tag + "b" + id;
        fabricA = ChildJvm.newFabricPath();
        fabricB = ChildJvm.newFabricPath();
    }

    /**
     * Starts both gateways (each with its {@code extra} options after the common ones), moves their TAPs into a fresh
     * namespace and routes between them. {@code tag}: two or three letters naming the test in device names.
     */
    static TwoFabrics start(String tag, int subnetA, int subnetB, List<String> extraA, List<String> extraB) throws Exception {
        String missing = Linux.missing("ip");
        Assumptions.assumeTrue(missing == null, () -> "skipping: " + missing + " is absent");
        Assumptions.assumeTrue(Files.isWritable(Path.of("/dev/net/tun")),
                "skipping: /dev/net/tun is not writable here (no TAP devices without it and CAP_NET_ADMIN)");
        TwoFabrics t = new TwoFabrics(tag);
        Linux.Result made = Linux.run(10, "ip", "netns", "add", t.ns);
        Assumptions.assumeTrue(made.status() == 0, () -> "skipping: cannot create a network namespace: " + made.output());
        try {
            String aLinux = "192.168." + subnetA + ".1";
            String bLinux = "192.168." + subnetB + ".1";
            List<Object> a = new ArrayList<>(List.of("node", "--fabric", t.fabricA, "--address", "0", "--tap", t.tapA,
                    "--tap-addr", "192.168." + subnetA + ".2/24", "--tap-route", "10.0.1.0/24 via " + aLinux));
            a.addAll(extraA);
            List<Object> b = new ArrayList<>(List.of("node", "--fabric", t.fabricB, "--address", "0", "--ip", "10.0.1.1/24",
                    "--tap", t.tapB, "--tap-addr", "192.168." + subnetB + ".2/24", "--tap-route", "10.0.0.0/24 via " + bLinux));
            b.addAll(extraB);
            ChildJvm gwA = t.start(tag + "-gateway-a", Main.class, a.toArray());
            ChildJvm gwB = t.start(tag + "-gateway-b", Main.class, b.toArray());
            gwA.awaitLine("nupa node:", 60_000);
            gwB.awaitLine("nupa node:", 60_000);
            for (String tap : List.of(t.tapA, t.tapB)) {
                Linux.ok("ip", "link", "set", tap, "netns", t.ns);
                Linux.ok("ip", "-n", t.ns, "link", "set", tap, "up");
            }
            Linux.ok("ip", "-n", t.ns, "link", "set", "lo", "up");
            Linux.ok("ip", "-n", t.ns, "addr", "add", aLinux + "/24", "dev", t.tapA);
            Linux.ok("ip", "-n", t.ns, "addr", "add", bLinux + "/24", "dev", t.tapB);
            Linux.ok("ip", "-n", t.ns, "route", "add", "10.0.0.0/24", "via", "192.168." + subnetA + ".2");
            Linux.ok("ip", "-n", t.ns, "route", "add", "10.0.1.0/24", "via", "192.168." + subnetB + ".2");
            Linux.ok("ip", "netns", "exec", t.ns, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1");
            return t;
        } catch (Exception | Error e) {
            t.close();
            throw e;
        }
    }

    /** Starts a child JVM that {@link #close} stops. */
    ChildJvm start(String name, Class<?> main, Object... args) {
        ChildJvm c = ChildJvm.start(name, main, args);
        children.add(c);
        return c;
    }

    @Override
    public void close() throws Exception {
        for (ChildJvm child : children) {
            child.close();
        }
        Linux.run(10, "ip", "netns", "del", ns);
        Files.deleteIfExists(fabricA);
        Files.deleteIfExists(fabricB);
    }
}
