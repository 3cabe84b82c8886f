package dev.nupa.tests;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import dev.nupa.examples.HelloServer;
import dev.nupa.node.cli.Main;

/**
 * A fabric file, a gateway process on node 0 whose TAP device is moved into a namespace of its own,
 * Linux's address and route to the fabric there, and a server process on node 1.
 */
record GatewayRig(Path fabric, String tap, String ns, List<ChildJvm> children) {
    /** The gateway's address on the TAP side, Linux's there, and the server's on the fabric. */
    static final String GATEWAY = "192.168.77.2";
    static final String LINUX = "192.168.77.1";
    static final String SERVER = "10.0.0.2";

    /** Starts one; {@code gatewayOptions} go to the gateway's `nupa node` after its own. */
    static GatewayRig start(int tapMtu, int fabricMtu, boolean exampleServices, String... gatewayOptions) throws Exception {
        return start(tapMtu, fabricMtu, exampleServices, List.of(), gatewayOptions);
    }

    /**
     * Starts one whose server, unless it runs the example services, is a `nupa node` given {@code serverOptions}
     * after its own.
     */
    static GatewayRig start(int tapMtu, int fabricMtu, boolean exampleServices, List<String> serverOptions,
                            String... gatewayOptions) throws Exception {
        String id = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt()).substring(0, 6);
        GatewayRig r = new GatewayRig(ChildJvm.newFabricPath(), "nupagw" + id, "nupa-gw-" + id, new ArrayList<>());
        Linux.ok("ip", "netns", "add", r.ns);
        try {
            r.setUp(tapMtu, fabricMtu, exampleServices, serverOptions, gatewayOptions);
        } catch (Exception | AssertionError e) {
            try {
                r.stop(); // what started before the failure (a gateway that did not say it was ready, the namespace)
            } catch (Exception cleanup) {
                e.addSuppressed(cleanup); // the failure that stopped the start is the one to report
            }
            throw e;
        }
        return r;
    }

    private void setUp(int tapMtu, int fabricMtu, boolean exampleServices, List<String> serverOptions, String... gatewayOptions)
            throws Exception {
        List<Object> args = new ArrayList<>(List.of("node", "--fabric", fabric, "--address", "0", "--mtu", fabricMtu,
                "--tap", tap, "--tap-addr", GATEWAY + "/24", "--tap-mtu", tapMtu));
        args.addAll(List.of(gatewayOptions));
        child("gateway", Main.class, args.toArray()).awaitLine("nupa node:", 60_000);
        if (exampleServices) {
            child("server", HelloServer.class, fabric, 1, "192.168.77.0/24 via 10.0.0.1").awaitLine("READY", 60_000);
        } else {
            List<Object> server = new ArrayList<>(List.of("node", "--fabric", fabric, "--address", "1", "--mtu", fabricMtu,
                    "--route", "192.168.77.0/24 via 10.0.0.1"));
            server.addAll(serverOptions);
            child("server", Main.class, server.toArray()).awaitLine("nupa node:", 60_000);
        }
        // Linux's side of the wire: the TAP device in the namespace, with an address and a route to the fabric.
        Linux.ok("ip", "link", "set", tap, "netns", ns);
        Linux.ok("ip", "-n", ns, "link", "set", "lo", "up");
        Linux.ok("ip", "-n", ns, "link", "set", tap, "up");
        Linux.ok("ip", "-n", ns, "addr", "add", LINUX + "/24", "dev", tap);
        Linux.ok("ip", "-n", ns, "route", "add", "10.0.0.0/24", "via", GATEWAY);
    }

    private ChildJvm child(String name, Class<?> main, Object... args) {
        ChildJvm c = ChildJvm.start(name + "-" + tap, main, args);
        children.add(c);
        return c;
    }

    /** A command run inside the namespace, as Linux's own tools run there. */
    Linux.Result run(long timeoutSeconds, String... cmd) throws IOException, InterruptedException {
        List<String> all = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        all.addAll(List.of(cmd));
        return Linux.run(timeoutSeconds, all.toArray(String[]::new));
    }

    void stop() throws IOException, InterruptedException {
        for (ChildJvm c : children) {
            c.close();
        }
        Linux.run(10, "ip", "netns", "del", ns); // takes the TAP device with it if the gateway left it there
        Files.deleteIfExists(fabric);
    }
}
