package dev.nupa.node.cli;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NodeMetrics;
import dev.nupa.node.NupaNode;
import dev.nupa.node.grpc.GrpcEndpoint;
import dev.nupa.node.options.NodeOptions;
import dev.nupa.node.telemetry.NodeTracing;
import dev.nupa.perf.TraceExport;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.nupa.device.FabricNode;
import dev.nupa.gateway.GatewayConfig;
import dev.nupa.ip.IpCounter;
import dev.nupa.ip.Route;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.tcp.TcpConfig;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.NetServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Run a node in the foreground until interrupted: it answers ping, serves UDP echo if asked,",
                "forwards if asked, and records its frames for `nupa capture`. Prints its counters on exit.",
                "The TCP socket options (--no-delay to --congestion) set the connections of the TCP echo server."})
final class NodeCommand implements Callable<Integer> {
    @Mixin
    NodeOptions options;

    @Option(names = "--service-levels", paramLabel = "MAP",
            description = "Ring of the destination for each service level 0..15: default (level * rings / 16), shared (all on ring 0),"
                    + " or 16 ring numbers (docs/link-layer.md 6; the primary loop's sends).")
    String serviceLevels;

    @Option(names = "--dscp-levels", paramLabel = "DSCP=LEVEL,...",
            description = "Service level of IPv4 DSCPs, over the default dscp >> 2 (e.g. 46=15); the primary loop's sends.")
    String dscpLevels;

    @Option(names = "--ring-policy", paramLabel = "W0,W1,...[/BURST]",
            description = "How the primary loop serves its receive rings: weights of first turns per ring and a lower ring's burst"
                    + " (default: each lower ring 1, the highest 7 x (rings - 1); burst 4).")
    String ringPolicy;

    @Option(names = "--udp-echo", paramLabel = "PORT", description = "Serve UDP echo on PORT (e.g. 7).")
    Integer udpEcho;

    @Option(names = "--tcp-echo", paramLabel = "PORT", description = "Serve TCP echo on PORT (e.g. 7).")
    Integer tcpEcho;

    @Option(names = "--capture", paramLabel = "FILE", description = "Write this node's frames to a pcap file.")
    Path capture;

    @Option(names = "--run-for", paramLabel = "SECONDS", description = "Stop after this many seconds (default: until interrupted).")
    Double runFor;

    @Option(names = "--tcp-time-wait-limit", paramLabel = "N",
            description = "TCP connections that may wait in TIME-WAIT at once; past it a connection closes without the wait"
                    + " (Linux's tcp_max_tw_buckets; default: 16384).")
    Integer timeWaitLimit;

    @Option(names = "--tcp-pool-limit", paramLabel = "N",
            description = "Closed TCP connections kept for reuse, so that opening one allocates nothing (default: 16384; 0: none).")
    Integer poolLimit;

    @Option(names = "--metrics", paramLabel = "EXPORTER",
            description = "Export the node's counters and latency histograms as OpenTelemetry metrics: logging, otlp"
                    + " (http://localhost:4318/v1/metrics), otlp=URL or file=PATH (default: off).")
    String metrics;

    @Option(names = "--metrics-interval", paramLabel = "SECONDS", defaultValue = "60",
            description = "Seconds between metric exports (default: ${DEFAULT-VALUE}).")
    double metricsInterval;

    @Option(names = "--trace-export", paramLabel = "EXPORTER",
            description = "Trace the node's HTTP and gRPC calls and its gRPC verbs work requests as OpenTelemetry spans,"
                    + " exported to logging, otlp, otlp=URL or file=PATH (docs/tracing.md).")
    String traceExport;

    @Option(names = "--trace-sample", paramLabel = "RATE", defaultValue = "0.01",
            description = "The share of the traces this node starts that are kept (default: ${DEFAULT-VALUE}; a caller's"
                    + " sampled trace is always kept).")
    double traceSample;

    @Option(names = "--grpc", paramLabel = "HOST:PORT",
            description = "Serve the node's gRPC endpoint (Admin, Sockets, Verbs, health, reflection) over Linux TCP on HOST:PORT; loopback"
                    + " only unless --grpc-token-file is given (docs/grpc.md).")
    String grpc;

    @Option(names = "--grpc-token-file", paramLabel = "FILE",
            description = "A file holding the bearer token every gRPC call must carry (authorization: Bearer TOKEN).")
    Path grpcTokenFile;

    @Option(names = "--grpc-fabric", paramLabel = "PORT",
            description = "Serve the gRPC endpoint on the node's own address over the fabric too, on PORT (with --grpc; the same"
                    + " token or TLS).")
    Integer grpcFabric;

    @Option(names = "--grpc-verbs-memory", paramLabel = "MIB",
            description = "The memory one gRPC verbs session may register, in MiB (default: 256).")
    Long grpcVerbsMemory;

    @Option(names = "--grpc-verbs-node-memory", paramLabel = "MIB",
            description = "The memory all gRPC verbs sessions of the node may register together, in MiB (default: 1024).")
    Long grpcVerbsNodeMemory;

    @Option(names = "--grpc-tls-cert", paramLabel = "PEM", description = "Serve gRPC over mutual TLS: the endpoint's certificate chain.")
    Path grpcTlsCert;

    @Option(names = "--grpc-tls-key", paramLabel = "PEM", description = "Mutual TLS: the endpoint's private key.")
    Path grpcTlsKey;

    @Option(names = "--grpc-tls-client-ca", paramLabel = "PEM",
            description = "Mutual TLS: the authorities (or self-signed certificates) of the clients to accept.")
    Path grpcTlsClientCa;

    @Option(names = "--tap", paramLabel = "NAME",
            description = "Be a gateway between the fabric and Ethernet through TAP device NAME (created if missing, gone on"
                    + " exit); needs --tap-addr and --address or --ip, and implies --forwarding (docs/gateway.md).")
    String tap;

    @Option(names = "--tap-addr", paramLabel = "A.B.C.D/LEN",
            description = "The gateway's IPv4 address and subnet on the TAP side (not overlapping the fabric's), e.g. 192.168.77.2/24.")
    String tapAddr;

    @Option(names = "--tap-mtu", paramLabel = "BYTES", defaultValue = "1500",
            description = "The TAP device's MTU (default: ${DEFAULT-VALUE}); the gateway fragments larger datagrams or answers"
                    + " fragmentation needed.")
    int tapMtu;

    @Option(names = "--tap-offloads",
            description = "Checksum and TCP segmentation offload on the TAP (virtio-net headers): Linux hands over TCP"
                    + " super-frames of up to 64 KiB, which the gateway cuts into segments, and takes the gateway's"
                    + " segments to it joined into super-frames.")
    boolean tapOffloads;

    @Option(names = "--tap-queues", paramLabel = "N", defaultValue = "1",
            description = "TAP queues (IFF_MULTI_QUEUE), each served by an event loop of its own: the node runs N loops,"
                    + " and Linux spreads the flows it sends over the queues (default: ${DEFAULT-VALUE}).")
    int tapQueues;

    @Option(names = "--tap-ecn-threshold", paramLabel = "FRAMES|off",
            description = "Mark ECN-capable datagrams Congestion Experienced (RFC 3168) once a round's backlog toward the TAP"
                    + " or the fabric is this many frames deep (default: " + GatewayConfig.DEFAULT_ECN_THRESHOLD + "; off: never).")
    String tapEcnThreshold;

    @Option(names = "--tap-route", paramLabel = "ROUTE",
            description = "A route through the TAP side, e.g. \"default via 192.168.77.1\" (repeatable).")
    List<String> tapRoutes = new ArrayList<>();

    @Mixin
    TcpSocketOptions sockets;

    @Mixin
    WorkRingOptions workRings;

    @Override
    public Integer call() throws Exception {
        GatewayConfig gateway = gateway();
        if (gateway != null) {
            options.forwarding = true;
        }
        NodeConfig config = options.config().withCapture(capture).withGateway(gateway);
        String socketOption = sockets.firstGiven();
        if (socketOption != null && tcpEcho == null) {
            throw new IllegalArgumentException(socketOption + " sets the TCP echo server's connections; give --tcp-echo PORT too");
        }
        // Checked before the node starts; socket options become the node's TCP defaults (keep-alive timing
        // and congestion control live there), and the echo server's Vert.x options say the rest.
        TcpConfig checked = socketOption != null ? sockets.apply(config.tcpOrDefault()) : null;
        if (checked != null) {
            config = config.withTcp(checked);
        }
        checkLimit("--tcp-time-wait-limit", timeWaitLimit);
        checkLimit("--tcp-pool-limit", poolLimit);
        io.opentelemetry.sdk.metrics.export.MetricReader metricReader = metrics == null ? null
                : NodeMetrics.exportingReader(metrics, java.time.Duration.ofMillis((long) (metricsInterval * 1000)));
        String[] grpcAt = grpc != null ? hostPort(grpc) : null;
        String token = grpcTokenFile != null ? readToken(grpcTokenFile) : null;
        if (token != null && grpc == null) {
            throw new IllegalArgumentException("--grpc-token-file guards the gRPC endpoint; give --grpc HOST:PORT too");
        }
        GrpcEndpoint.MutualTls tls = mutualTls();
        if (grpcFabric != null && (grpc == null || grpcFabric < 0 || grpcFabric > 65535)) {
            throw new IllegalArgumentException("--grpc-fabric PORT (0..65535) serves the gRPC endpoint over the fabric beside"
                    + " --grpc HOST:PORT; give both");
        }
        if (grpcVerbsMemory != null && (grpc == null || grpcVerbsMemory < 1 || grpcVerbsMemory > (1L << 20))) {
            throw new IllegalArgumentException("--grpc-verbs-memory MIB (1..1048576) limits the gRPC endpoint's verbs sessions;"
                    + " give --grpc HOST:PORT too");
        }
        if (grpcVerbsNodeMemory != null && (grpc == null || grpcVerbsNodeMemory < 1 || grpcVerbsNodeMemory > (1L << 20))) {
            throw new IllegalArgumentException("--grpc-verbs-node-memory MIB (1..1048576) limits the gRPC endpoint's verbs"
                    + " sessions together; give --grpc HOST:PORT too");
        }
        io.opentelemetry.sdk.OpenTelemetrySdk tracing = null;
        if (traceExport != null) {
            TraceExport.check(traceExport);
            tracing = NodeTracing.start(traceExport, traceSample);
            config = config.withOpenTelemetry(tracing);
        }
        NupaNode node;
        try {
            node = NupaNode.create(config).await(30, TimeUnit.SECONDS); // the node's datapath is its Vert.x event loop
        } catch (RuntimeException e) {
            if (tracing != null) {
                tracing.close();
            }
            throw e;
        }
        try {
            QosOptions.apply(node, serviceLevels, dscpLevels, ringPolicy);
        } catch (RuntimeException e) {
            node.closeAndWait();
            if (tracing != null) {
                tracing.close();
            }
            throw e;
        }
        if (timeWaitLimit != null || poolLimit != null) {
            node.link().call(() -> { // the layer's own thread sets its limits
                if (timeWaitLimit != null) {
                    node.tcp().setTimeWaitLimit(timeWaitLimit);
                }
                if (poolLimit != null) {
                    node.tcp().setConnectionPoolLimit(poolLimit);
                }
                return null;
            });
        }
        NodeMetrics nodeMetrics = metricReader != null ? NodeMetrics.start(node, metricReader) : null;
        GrpcEndpoint endpoint = null;
        int grpcFabricPort = -1;
        if (grpcAt != null) {
            try {
                endpoint = GrpcEndpoint.start(node, config.fabric().toString(), grpcAt[0], Integer.parseInt(grpcAt[1]), token, tls)
                        .await(10, TimeUnit.SECONDS);
                if (grpcVerbsMemory != null) {
                    endpoint.verbsSessionMemory(grpcVerbsMemory << 20);
                }
                if (grpcVerbsNodeMemory != null) {
                    endpoint.verbsNodeMemory(grpcVerbsNodeMemory << 20);
                }
                if (grpcFabric != null) {
                    grpcFabricPort = endpoint.listenOnFabric(grpcFabric).await(10, TimeUnit.SECONDS);
                }
            } catch (RuntimeException e) {
                if (nodeMetrics != null) {
                    nodeMetrics.close();
                }
                node.closeAndWait();
                throw e;
            }
        }
        if (udpEcho != null) {
            DatagramSocket echo = node.vertx().createDatagramSocket();
            echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
            echo.listen(udpEcho, "0.0.0.0").await(5, TimeUnit.SECONDS);
        }
        TcpConfig echoConfig = checked != null ? checked : node.tcp().defaults();
        if (tcpEcho != null) {
            node.vertx().createNetServer(sockets.vertxOptions(new NetServerOptions(), echoConfig))
                    .connectHandler(s -> s.pipeTo(s)) // ends (FIN, or RST with --linger 0) when the client ends
                    .listen(tcpEcho, "0.0.0.0").await(5, TimeUnit.SECONDS);
        }
        List<String> ringLines;
        try {
            ringLines = workRings.deploy(node);
        } catch (RuntimeException e) {
            node.closeAndWait();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        GrpcEndpoint ep = endpoint;
        io.opentelemetry.sdk.OpenTelemetrySdk spans = tracing;
        Thread hook = new Thread(() -> {
            Thread watchdog = stopWatchdog();
            if (nodeMetrics != null) {
                nodeMetrics.close(); // the last export, while the node still runs
            }
            if (ep != null) {
                try {
                    ep.close().await(5, TimeUnit.SECONDS);
                } catch (Exception e) {
                    System.out.println("nupa node: the gRPC endpoint did not close in 5 s: " + e);
                }
            }
            workRings.stopLines().forEach(l -> System.out.println("nupa node: " + l));
            stop(node);
            if (spans != null) {
                spans.close(); // exports the spans still batched
            }
            watchdog.interrupt();
            stopped.countDown();
        });
        Runtime.getRuntime().addShutdownHook(hook);
        leaveWhenLost(node);
        // Ready only once the hook and the watch for a lost fabric are in place: whoever waits for this line may act.
        System.out.println("nupa node: " + node + " on " + config.fabric()
                + (node.link().device() instanceof FabricNode fn && fn.fabric().polled() ? " (doorbells: " + fn.fabric().doorbells() + ")"
                        : "")
                + (udpEcho != null ? ", UDP echo on port " + udpEcho : "")
                + (tcpEcho != null ? ", TCP echo on port " + tcpEcho + " (" + sockets.describe(echoConfig) + ")" : "")
                + (gateway != null ? ", gateway to " + node.gateway().iface() + (gateway.queues() > 1 ? " (" + gateway.queues()
                        + " queues, an event loop each)" : "") + (gateway.offloads() ? " with offloads" : "") : "")
                + (capture != null ? ", capturing to " + capture : "")
                + (nodeMetrics != null ? ", metrics to " + metrics + " every " + metricsInterval + " s" : "")
                + (tracing != null ? ", spans to " + traceExport + " (" + traceSample + " of new traces)" : "")
                + (endpoint != null ? ", gRPC on " + grpcAt[0] + ":" + endpoint.port()
                        + (grpcFabricPort >= 0 ? " and " + Ipv4Address.toString(node.ip().address()) + ":" + grpcFabricPort : "")
                        + (token != null ? " (bearer token)" : "") + (tls != null ? " (mutual TLS)" : "") : "")
                + "; Ctrl-C to stop");
        ringLines.forEach(l -> System.out.println("nupa node: " + l));
        System.out.flush();
        if (runFor != null) {
            Thread.sleep((long) (runFor * 1000));
            Runtime.getRuntime().removeShutdownHook(hook);
            hook.run();
        }
        stopped.await();
        return 0;
    }

    /** The gateway the --tap options describe, or null; a missing half is an error. */
    private GatewayConfig gateway() {
        if (tap == null && tapAddr == null && tapRoutes.isEmpty() && !tapOffloads && tapQueues == 1 && tapEcnThreshold == null) {
            return null;
        }
        if (tap == null || tapAddr == null) {
            throw new IllegalArgumentException("a gateway needs both --tap NAME and --tap-addr A.B.C.D/LEN");
        }
        List<Route> rs = new ArrayList<>();
        for (String r : tapRoutes) {
            rs.add(Route.parse(r));
        }
        return GatewayConfig.parse(tap, tapAddr).withMtu(tapMtu).withRoutes(rs).withOffloads(tapOffloads).withQueues(tapQueues)
                .withEcnThreshold(ecnThreshold(tapEcnThreshold));
    }

    /** --tap-ecn-threshold's frames; "off" is no marking, none given the default. */
    private static int ecnThreshold(String text) {
        if (text == null) {
            return GatewayConfig.DEFAULT_ECN_THRESHOLD;
        }
        if (text.equals("off")) {
            return Integer.MAX_VALUE;
        }
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--tap-ecn-threshold " + text + ": give a number of frames (at least 1) or off");
        }
    }

    private static void checkLimit(String option, Integer limit) {
        if (limit != null && limit < 0) {
            throw new IllegalArgumentException(option + " takes 0 or more, not " + limit);
        }
    }

    /** HOST:PORT split, with a clear error. */
    static String[] hostPort(String s) {
        int colon = s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new IllegalArgumentException("--grpc takes HOST:PORT (e.g. 127.0.0.1:50100), not " + s);
        }
        String port = s.substring(colon + 1);
        if (!port.chars().allMatch(Character::isDigit) || port.length() > 5) {
            throw new IllegalArgumentException("--grpc port " + port + " is not a number in 0..65535");
        }
        return new String[] {s.substring(0, colon), port};
    }

    /** The --grpc-tls-* options: all three or none, and only with --grpc. */
    private GrpcEndpoint.MutualTls mutualTls() {
        int given = (grpcTlsCert != null ? 1 : 0) + (grpcTlsKey != null ? 1 : 0) + (grpcTlsClientCa != null ? 1 : 0);
        if (given == 0) {
            return null;
        }
        if (given < 3 || grpc == null) {
            throw new IllegalArgumentException("mutual TLS for the gRPC endpoint needs --grpc HOST:PORT with all of"
                    + " --grpc-tls-cert, --grpc-tls-key and --grpc-tls-client-ca");
        }
        return new GrpcEndpoint.MutualTls(grpcTlsCert, grpcTlsKey, grpcTlsClientCa);
    }

    static String readToken(Path file) {
        try {
            // A token any local user can read lets any of them call the endpoint: refused, as ssh refuses such a key file.
            var perms = java.nio.file.Files.getPosixFilePermissions(file);
            if (perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_READ)
                    || perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE)) {
                throw new IllegalArgumentException("the token file " + file + " may be read or written by any user ("
                        + java.nio.file.attribute.PosixFilePermissions.toString(perms) + "); chmod 600 " + file);
            }
            String t = java.nio.file.Files.readString(file).strip();
            if (t.isEmpty()) {
                throw new IllegalArgumentException("the token file " + file + " is empty; put the bearer token in it");
            }
            return t;
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("cannot read the token file " + file + ": " + e.getMessage());
        }
    }

    /**
     * A node evicted from its fabric, or whose fabric file was removed, replaced or shrunk under it, serves nobody:
     * it says what happened in one line and exits with status 1 (its shutdown hook then closes what it can).
     */
    private static void leaveWhenLost(NupaNode node) {
        if (node.link().device() instanceof FabricNode fn) {
            AtomicBoolean leaving = new AtomicBoolean();
            Runnable leave = () -> {
                if (leaving.compareAndSet(false, true)) {
                    // Not on the liveness thread: exit waits for the hook, which waits for that thread.
                    Thread.ofPlatform().name("nupa-node-lost").start(() -> {
                        System.out.println("nupa node: " + fn.lostReason() + "; stopping");
                        System.out.flush();
                        System.exit(1);
                    });
                }
            };
            fn.addPeerListener(e -> {
                if (e.kind() == dev.nupa.device.PeerEvent.Kind.EVICTED && e.address() == fn.address()) {
                    leave.run();
                }
            });
            // Liveness says it once: a fabric lost while the node started, before the listener was there, is seen here.
            if (fn.lostReason() != null) {
                leave.run();
            }
        }
    }

    /** How long the shutdown hook may take before the process halts anyway: SIGTERM always ends a node. */
    private static final long STOP_PATIENCE_MS = 15_000;

    /** Halts the process unless interrupted within {@link #STOP_PATIENCE_MS}. */
    private static Thread stopWatchdog() {
        return Thread.ofPlatform().daemon().name("nupa-stop-watchdog").start(() -> {
            try {
                Thread.sleep(STOP_PATIENCE_MS);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("nupa node: did not stop within " + STOP_PATIENCE_MS / 1000 + " s; halting");
            System.out.flush();
            Runtime.getRuntime().halt(1);
        });
    }

    private static void stop(NupaNode node) {
        Map<IpCounter, Long> c = node.ip().counters();
        StringBuilder sb = new StringBuilder("nupa node: stopping; counters:");
        c.forEach((k, v) -> {
            if (v != 0) {
                sb.append(' ').append(k.label()).append('=').append(v);
            }
        });
        System.out.println(sb);
        if (node.link().device() instanceof FabricNode fn) {
            if (fn.lostReason() != null) {
                System.out.println("nupa node: fabric counters not shown: " + fn.lostReason());
            } else {
                var f = fn.counters();
                System.out.println("nupa node: fabric frames out=" + f.framesSent() + " in=" + f.framesReceived() + " wakeups="
                        + f.wakeups() + " interrupts out=" + f.interruptsSent() + " in=" + f.interruptsReceived()
                        + (fn.entryRepairs() > 0 ? " (its table entry was overwritten by a foreign hand " + fn.entryRepairs()
                                + " time(s): these counts may be wrong)" : ""));
            }
        }
        StringBuilder t = new StringBuilder("nupa node: tcp connections open=" + node.tcp().connections() + " "
                + node.tcp().states() + "; counters:");
        node.tcp().counters().forEach((k, v) -> {
            if (v != 0) {
                t.append(' ').append(k.name().toLowerCase()).append('=').append(v);
            }
        });
        System.out.println(t);
        if (node.gateway() != null) {
            StringBuilder g = new StringBuilder("nupa node: gateway " + node.gateway().iface().name() + "; counters:");
            node.gateway().counters().forEach((k, v) -> {
                if (v != 0) {
                    g.append(' ').append(k.name().toLowerCase()).append('=').append(v);
                }
            });
            System.out.println(g);
        }
        System.out.flush();
        node.closeAndWait();
    }
}
