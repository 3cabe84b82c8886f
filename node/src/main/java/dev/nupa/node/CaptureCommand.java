package dev.nupa.node;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.CaptureMirror;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.PcapWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa capture`: joins the fabric as a node of its own, asks the nodes to watch to mirror every
 * frame they send and receive to it (docs/link-layer.md, "Remote capture"), and writes them to a
 * pcap file that Wireshark and tshark decode natively.
 */
@Command(name = "capture", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Capture the frames of running nodes into a pcap file (Wireshark/tshark decode IPv4, ICMP, UDP, TCP, RoCE).",
                "Stops after -c frames, after --duration, or on Ctrl-C."})
final class CaptureCommand implements Callable<Integer> {
    @Option(names = "-w", paramLabel = "FILE", required = true, description = "pcap file to write.")
    Path file;

    @Option(names = "--fabric", paramLabel = "PATH", defaultValue = "/dev/shm/nupa-fabric", description = "Fabric file (default: ${DEFAULT-VALUE}).")
    Path fabric;

    @Option(names = "--node", paramLabel = "N", description = "Fabric address of a node to watch; repeatable (default: every node up now).")
    List<Integer> nodes = new ArrayList<>();

    @Option(names = "-c", paramLabel = "COUNT", description = "Stop after COUNT frames.")
    Long count;

    @Option(names = "--duration", paramLabel = "SECONDS", description = "Stop after SECONDS.")
    Double duration;

    private volatile boolean stop;

    @Override
    public Integer call() throws Exception {
        if ((count != null && count < 1) || (duration != null && duration <= 0)) {
            throw new IllegalArgumentException("-c must be >= 1 and --duration > 0");
        }
        try (Fabric f = ShmFabric.join(fabric); FabricNode self = f.attachAny()) {
            List<Integer> targets = nodes.isEmpty() ? upNodes(self) : nodes;
            try (PcapWriter pcap = PcapWriter.open(file)) {
                capture(self, targets, pcap);
            }
        }
        return 0;
    }

    private void capture(FabricNode self, List<Integer> targets, PcapWriter pcap) {
        Link link = new Link(self);
        long[] frames = {0};
        link.register(EtherType.NUPA_MIRROR, (src, mem, off, len) -> {
            if (len < CaptureMirror.MIRROR_HEADER) {
                return;
            }
            long ts = mem.get(CaptureMirror.BE_LONG, off);
            int s = mem.get(CaptureMirror.BE_SHORT, off + 8) & 0xFFFF;
            int d = mem.get(CaptureMirror.BE_SHORT, off + 10) & 0xFFFF;
            int proto = mem.get(CaptureMirror.BE_SHORT, off + 12) & 0xFFFF;
            boolean out = (mem.get(java.lang.foreign.ValueLayout.JAVA_BYTE, off + 14) & CaptureMirror.FLAG_OUTBOUND) != 0;
            // A frame seen by two watched nodes arrives twice (sent, then received): keep the sender's copy.
            if (!out && watching(s)) {
                return;
            }
            int frameLength = mem.get(CaptureMirror.BE_INT, off + 16); // the whole payload; the copy may be cut
            pcap.capture(ts, out, s, d, proto, mem, off + CaptureMirror.MIRROR_HEADER, len - CaptureMirror.MIRROR_HEADER,
                    frameLength);
            frames[0]++;
        });
        for (int t : targets) {
            if (t == self.address()) {
                continue;
            }
            int rc = CaptureMirror.request(link, t, CaptureMirror.START);
            if (rc != 0) {
                throw new IllegalStateException("cannot reach node " + t + " to start capture: "
                        + dev.nupa.device.FabricDevice.describe(rc));
            }
        }
        watched = targets;
        System.err.println("nupa capture: node " + self.address() + " capturing nodes " + targets + " to " + file
                + "; Ctrl-C to stop");
        java.util.concurrent.CountDownLatch written = new java.util.concurrent.CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stop = true;
            try {
                written.await(5, java.util.concurrent.TimeUnit.SECONDS); // until the file is complete
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Runtime.getRuntime().addShutdownHook(hook);
        long end = duration != null ? System.nanoTime() + (long) (duration * 1e9) : Long.MAX_VALUE;
        while (!stop && System.nanoTime() < end && (count == null || frames[0] < count)) {
            if (link.poll(64) == 0) {
                link.awaitFrames(10_000_000L);
            }
        }
        for (int t : targets) {
            if (t != self.address()) {
                CaptureMirror.request(link, t, CaptureMirror.STOP);
            }
        }
        pcap.flush();
        System.err.println("nupa capture: " + frames[0] + " frames written to " + file);
        written.countDown();
        if (!stop) {
            Runtime.getRuntime().removeShutdownHook(hook);
        }
    }

    private List<Integer> watched = List.of();

    private boolean watching(int node) {
        return watched.contains(node);
    }

    private static List<Integer> upNodes(FabricNode self) {
        List<Integer> up = new ArrayList<>();
        for (int a = 0; a < self.geometry().maxNodes(); a++) {
            if (a != self.address() && self.isUp(a)) {
                up.add(a);
            }
        }
        if (up.isEmpty()) {
            throw new IllegalStateException("no node is up on the fabric to capture; start one (nupa node) or name one with --node");
        }
        return up;
    }

}
