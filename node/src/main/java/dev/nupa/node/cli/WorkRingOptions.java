package dev.nupa.node.cli;

import dev.nupa.node.NupaNode;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.roce.vertx.RdmaTargetVerticle;
import dev.nupa.roce.vertx.WorkRingVerticle;
import io.vertx.core.VerticleBase;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Option;

/** {@code nupa node}'s work-ring proxy and RDMA target (docs/work-rings.md). */
final class WorkRingOptions {
    @Option(names = "--proxy", paramLabel = "A.B.C.D:PORT",
            description = "Serve work rings: connect one RC QP per ring to the RDMA target at this address and CM port, and execute"
                    + " the WQEs posters write into the rings (docs/work-rings.md).")
    String proxy;

    @Option(names = "--proxy-rings", paramLabel = "N", defaultValue = "1", description = "Work rings to serve, one QP each (default: ${DEFAULT-VALUE}).")
    int rings;

    @Option(names = "--proxy-entries", paramLabel = "N", defaultValue = "256",
            description = "WQEs a submission ring holds, a power of two (default: ${DEFAULT-VALUE}); its completion ring holds as many.")
    int entries;

    @Option(names = "--proxy-data", paramLabel = "BYTES", defaultValue = "1M",
            description = "Each ring's data area, with K, M or G (default: ${DEFAULT-VALUE}).")
    String data;

    @Option(names = "--proxy-poll-us", paramLabel = "US", defaultValue = "20",
            description = "How often an idle proxy looks for WQEs that nobody rang for (a GPU's), in microseconds (default: ${DEFAULT-VALUE}).")
    long pollUs;

    @Option(names = "--proxy-spin-us", paramLabel = "US", defaultValue = "1000",
            description = "How long after its last WQE the proxy keeps its loop from sleeping, in microseconds (default: ${DEFAULT-VALUE}).")
    long spinUs;

    @Option(names = "--rdma-target", paramLabel = "PORT",
            description = "Be an RDMA target: offer one memory region to every QP that connects on this CM port, and count SENDs.")
    Integer target;

    @Option(names = "--rdma-target-bytes", paramLabel = "BYTES", defaultValue = "16M",
            description = "The target's region, with K, M or G (default: ${DEFAULT-VALUE}); its FNV-1a checksum is printed on stop.")
    String targetBytes;

    private WorkRingVerticle proxyVerticle;
    private RdmaTargetVerticle targetVerticle;
    private long targetSize;

    /** Deploys what was asked for on {@code node}; returns the lines that say what runs. */
    List<String> deploy(NupaNode node) {
        List<String> lines = new ArrayList<>();
        if (target != null) {
            targetSize = bytes("--rdma-target-bytes", targetBytes);
            targetVerticle = new RdmaTargetVerticle(node.rdma(), new RdmaTargetVerticle.Options(target, targetSize, 64, 65536));
            deploy(node, targetVerticle);
            lines.add("RDMA target on CM port " + target + ": " + targetSize + " bytes");
        }
        if (proxy != null) {
            int colon = proxy.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("--proxy takes the target's A.B.C.D:PORT, not " + proxy);
            }
            int ip = Ipv4Address.parse(proxy.substring(0, colon));
            int port = port(proxy.substring(colon + 1));
            proxyVerticle = new WorkRingVerticle(node.rdma(), new WorkRingVerticle.Options(ip, port, rings, entries, entries,
                    bytes("--proxy-data", data), TimeUnit.MICROSECONDS.toNanos(pollUs), TimeUnit.MICROSECONDS.toNanos(spinUs),
                    TimeUnit.SECONDS.toNanos(20)));
            deploy(node, proxyVerticle);
            lines.addAll(node.link().call(proxyVerticle::describe));
        } else if (rings != 1 || entries != 256 || !data.equals("1M")) {
            throw new IllegalArgumentException("--proxy-rings, --proxy-entries and --proxy-data shape a proxy's rings; give --proxy A.B.C.D:PORT too");
        }
        return lines;
    }

    private static void deploy(NupaNode node, VerticleBase v) {
        try {
            node.vertx().deployVerticle(v).await(60, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(v.getClass().getSimpleName() + " did not start within 60 s");
        }
    }

    /** What the proxy and the target did, for the node's last words; before the node closes. */
    List<String> stopLines() {
        List<String> lines = new ArrayList<>();
        if (proxyVerticle != null) {
            long[] t = proxyVerticle.totals();
            lines.add("work rings: WQEs executed=" + t[0] + " failed=" + t[1]);
        }
        if (targetVerticle != null) {
            lines.add("RDMA target: sends=" + targetVerticle.sends() + " bytes=" + targetVerticle.sendBytes() + " fnv1a64=0x"
                    + Long.toHexString(targetVerticle.checksum(0, targetSize)) + " over " + targetSize + " bytes");
        }
        return lines;
    }

    private static int port(String s) {
        try {
            int p = Integer.parseInt(s);
            if (p >= 0 && p <= 0xFFFF) {
                return p;
            }
        } catch (NumberFormatException e) {
            // the message below
        }
        throw new IllegalArgumentException("--proxy port " + s + " is not a number in 0..65535");
    }

    /** A size with an optional K, M or G (powers of 1024). */
    static long bytes(String option, String s) {
        String t = s.trim().toUpperCase();
        long unit = switch (t.isEmpty() ? ' ' : t.charAt(t.length() - 1)) {
            case 'K' -> 1L << 10;
            case 'M' -> 1L << 20;
            case 'G' -> 1L << 30;
            default -> 1;
        };
        try {
            long n = Long.parseLong(unit == 1 ? t : t.substring(0, t.length() - 1));
            if (n > 0 && n <= (1L << 40) / unit) {
                return n * unit;
            }
        } catch (NumberFormatException e) {
            // the message below
        }
        throw new IllegalArgumentException(option + " takes a positive size such as 65536, 64K, 16M or 1G, not " + s);
    }
}
