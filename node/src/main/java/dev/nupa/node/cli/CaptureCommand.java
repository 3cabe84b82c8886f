package dev.nupa.node.cli;

import dev.nupa.node.options.FabricOptions;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.nupa.device.CaptureObserver;
import dev.nupa.device.CaptureRing;
import dev.nupa.device.Fabric;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.LinkHeader;
import dev.nupa.l2.PcapWriter;
import dev.nupa.node.admin.CaptureChunk;
import dev.nupa.node.admin.CaptureRequest;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa capture`: observes the fabric without holding a node address. It names a capture file in the fabric's
 * observer table; each watched node records every frame it sends and receives into its ring there, or counts it
 * dropped when the ring is full (docs/fabric-layout.md 12). The frames go to a pcap file that Wireshark and tshark
 * decode natively, and the summary line gives each node's recorded and dropped counts. With {@code --grpc}, it asks
 * one node's gRPC endpoint for a live capture instead (Admin.Capture, docs/grpc.md), filtered there, and writes the
 * stream as it comes ({@code -w -}: to standard output, for {@code wireshark -k -i -}).
 */
@Command(name = "capture", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Capture the frames of running nodes into a pcap file (Wireshark/tshark decode IPv4, ICMP, UDP, TCP, RoCE).",
                "Observes without taking a node address; each watched node records its frames into a ring of --ring-size bytes and",
                "counts those that find it full. Stops after -c frames, after --duration, or on Ctrl-C, and prints the frames",
                "written and, per node, recorded and dropped."})
final class CaptureCommand implements Callable<Integer> {
    @Option(names = "-w", paramLabel = "FILE", required = true, description = "pcap file to write (with --grpc, - for standard output).")
    Path file;

    @Option(names = "--grpc", paramLabel = "HOST:PORT",
            description = "Capture live from the gRPC endpoint of a node (nupa node --grpc) instead of joining the fabric.")
    String grpc;

    @Option(names = "--protocol", paramLabel = "P", defaultValue = "",
            description = "With --grpc: only ipv4, icmp, udp, tcp or rdma frames (default: all).")
    String protocol;

    @Option(names = "--filter-host", paramLabel = "A.B.C.D", defaultValue = "",
            description = "With --grpc: only datagrams from or to this IPv4 address.")
    String filterHost;

    @Option(names = "--filter-port", paramLabel = "PORT", defaultValue = "0",
            description = "With --grpc: only UDP or TCP with this source or destination port.")
    int filterPort;

    @Option(names = "--grpc-token-file", paramLabel = "FILE", description = "With --grpc: the endpoint's bearer token.")
    Path grpcTokenFile;

    @Mixin
    FabricOptions where;

    @Option(names = "--node", paramLabel = "N", description = "Fabric address of a node to watch; repeatable (default: every node up now).")
    List<Integer> nodes = new ArrayList<>();

    @Option(names = "-c", paramLabel = "COUNT", description = "Stop after COUNT frames.")
    Long count;

    @Option(names = "--duration", paramLabel = "SECONDS", description = "Stop after SECONDS.")
    Double duration;

    @Option(names = "--snaplen", paramLabel = "BYTES",
            description = "Record at most BYTES of each frame (default: whole frames, as far as one fits the ring).")
    Integer snaplen;

    @Option(names = "--ring-size", paramLabel = "BYTES", defaultValue = "4194304",
            description = "Capture ring per watched node, a power of two (default: ${DEFAULT-VALUE}); frames that find it full"
                    + " are counted dropped.")
    long ringSize;

    private volatile boolean stop;

    @Override
    public Integer call() throws Exception {
        if ((count != null && count < 1) || (duration != null && duration <= 0)) {
            throw new IllegalArgumentException("-c must be >= 1 and --duration > 0");
        }
        checkWritable(file);
        if (grpc != null) {
            return overGrpc();
        }
        if (!protocol.isEmpty() || !filterHost.isEmpty() || filterPort != 0 || grpcTokenFile != null) {
            throw new IllegalArgumentException("--protocol, --filter-host, --filter-port and --grpc-token-file go with --grpc HOST:PORT");
        }
        try (Fabric f = ShmFabric.join(where.path(), where.access())) { // joined, not attached: no address taken
            int[] targets = targets(f);
            // Whole frames by default, as far as a record fits the ring.
            int snap = snaplen != null ? snaplen : (int) Math.min(f.geometry().maxFrame(), Math.max(1, ringSize - CaptureRing.RECORD_HEADER));
            RUNNING.add(this);
            try (CaptureObserver o = CaptureObserver.start(f, targets, ringSize, snap)) {
                return observe(f, o);
            } finally {
                RUNNING.remove(this);
            }
        }
    }

    /** The nodes to watch: --node, each checked, or every node up now. */
    private int[] targets(Fabric f) {
        int max = f.geometry().maxNodes();
        if (nodes.isEmpty()) {
            int[] up = f.nodes().stream().filter(n -> n.state().equals("UP")).mapToInt(NodeInfo::address).toArray();
            if (up.length == 0) {
                throw new IllegalStateException("no node is up on the fabric to capture; start one (nupa node) or name one with --node");
            }
            return up;
        }
        for (int n : nodes) {
            if (n < 0 || n >= max) {
                throw new IllegalArgumentException("--node " + n + " is not an address of this fabric (0.." + (max - 1) + ")");
            }
        }
        return nodes.stream().mapToInt(Integer::intValue).distinct().toArray();
    }

    private int observe(Fabric f, CaptureObserver o) throws Exception {
        int[] targets = o.nodes();
        long deadline = System.nanoTime() + ATTACH_WAIT_NS;
        while (System.nanoTime() < deadline && !allAttached(o)) {
            Thread.sleep(5); // polling the rings' attached words, which the nodes set at their next heartbeat tick
        }
        List<Integer> serving = new ArrayList<>();
        for (int i = 0; i < targets.length; i++) {
            if (o.attached(i) != 0) {
                serving.add(targets[i]);
            } else {
                System.err.println("nupa capture: " + notServing(f, targets[i]));
            }
        }
        if (serving.isEmpty()) {
            throw new IllegalStateException("no watched node serves capture (see above); nothing to record");
        }
        long[] written = {0};
        CountDownLatch done = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stop = true;
            try {
                done.await(5, TimeUnit.SECONDS); // until the file is complete and the slot released
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Runtime.getRuntime().addShutdownHook(hook);
        try (PcapWriter pcap = PcapWriter.to(openFile(file), file.toString(), PcapWriter.DEFAULT_SNAPLEN)) {
            System.err.println("nupa capture: observing nodes " + serving + " of " + f.name() + " (no node address taken) to "
                    + file + "; Ctrl-C to stop");
            CaptureRing.RecordHandler write = (ts, out, src, dst, len, mem, off, captured) -> {
                if (count != null && written[0] >= count) {
                    return; // past -c: read, so the ring frees, but not written
                }
                // A frame between two watched nodes is recorded by both: keep the sender's copy.
                if (!out && serving.contains(src)) {
                    return;
                }
                writeRecord(pcap, ts, out, src, dst, len, mem, off, captured);
                written[0]++;
            };
            long end = duration != null ? System.nanoTime() + (long) (duration * 1e9) : Long.MAX_VALUE;
            int idle = 0;
            while (!stop && System.nanoTime() < end && (count == null || written[0] < count)) {
                if (o.poll(write, 256) > 0) {
                    idle = 0;
                } else if (++idle > 100) {
                    Thread.sleep(1); // nothing for a while: sleep a little instead of spinning a core
                }
            }
            if (count == null || written[0] < count) {
                o.poll(write, Integer.MAX_VALUE); // what the rings hold now: every recorded frame up to the stop is written
            }
            pcap.flush();
            StringBuilder line = new StringBuilder("nupa capture: " + written[0] + " frames written to " + file + ";");
            for (int i = 0; i < targets.length; i++) {
                if (o.attached(i) != 0 || o.recorded(i) + o.dropped(i) > 0) {
                    line.append(" node ").append(targets[i]).append(": ").append(o.recorded(i)).append(" recorded, ")
                            .append(o.dropped(i)).append(" dropped").append(o.broken(i) ? " (its ring held foreign bytes)" : "")
                            .append(';');
                }
            }
            line.setLength(line.length() - 1);
            System.err.println(line + (anyDropped(o) ? " (dropped: the capture ring was full; a larger --ring-size keeps more)" : ""));
        } finally {
            o.close();
            done.countDown();
            if (!stop) {
                Runtime.getRuntime().removeShutdownHook(hook);
            }
        }
        return 0;
    }

    static final long ATTACH_WAIT_NS = 2_000_000_000L;
    private static final java.util.Set<CaptureCommand> RUNNING = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Stops the captures running in this JVM as Ctrl-C would (for tests, which cannot signal their own JVM). */
    static void stopAll() {
        RUNNING.forEach(c -> c.stop = true);
    }

    private static boolean allAttached(CaptureObserver o) {
        for (int i = 0; i < o.nodes().length; i++) {
            if (o.attached(i) == 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean anyDropped(CaptureObserver o) {
        for (int i = 0; i < o.nodes().length; i++) {
            if (o.dropped(i) > 0) {
                return true;
            }
        }
        return false;
    }

    /** Why node {@code a} did not attach to the capture, in one line. */
    private static String notServing(Fabric f, int a) {
        String state = f.nodes().stream().filter(n -> n.address() == a).map(NodeInfo::state).findFirst().orElse("FREE");
        if (!state.equals("UP")) {
            return "node " + a + " is not up (" + state + "): nothing to capture there";
        }
        return "node " + a + " does not serve capture: it did not attach within " + ATTACH_WAIT_NS / 1_000_000_000L
                + " s; Java nodes (nupa node, nupa perf servers, any FabricNode) attach at their next heartbeat, but a C node or"
                + " a node older than the observer table reads its rings raw, and a node of another user cannot open the"
                + " capture file";
    }

    /**
     * One recorded fabric frame to the pcap: a frame with a link header (docs/link-layer.md) as its protocol; one
     * without (a raw frame, as perf streams send) whole, as EtherType 0x88B6 (IEEE local experimental 2).
     */
    private void writeRecord(PcapWriter pcap, long ts, boolean out, int src, int dst, int len, MemorySegment mem,
                                    long off, int captured) {
        if (captured >= LinkHeader.LENGTH && len >= LinkHeader.LENGTH) {
            LinkHeader h = linkHeader.wrap(mem, off);
            if (h.destination() == dst && h.source() == src && h.payloadLength() == len - LinkHeader.LENGTH) {
                pcap.capture(ts, out, src, dst, h.protocol(), mem, off + LinkHeader.LENGTH, captured - LinkHeader.LENGTH,
                        len - LinkHeader.LENGTH);
                return;
            }
        }
        pcap.capture(ts, out, src, dst, EtherType.NUPA_RAW, mem, off, captured, len);
    }

    private final LinkHeader linkHeader = new LinkHeader();

    /** Admin.Capture from a node's endpoint, written to the file (or standard output) chunk by chunk. */
    private int overGrpc() throws Exception {
        String[] at = NodeCommand.hostPort(grpc);
        String token = grpcTokenFile != null ? NodeCommand.readToken(grpcTokenFile) : null;
        CaptureRequest request = CaptureRequest.newBuilder().setProtocol(protocol)
                .setHost(filterHost).setPort(filterPort).setCount(count != null ? count : 0).build();
        boolean toStdout = file.toString().equals("-");
        Vertx vertx = Vertx.vertx();
        try (OutputStream out = toStdout ? System.out : Channels.newOutputStream(openFile(file))) {
            GrpcClient client = GrpcClient.client(vertx);
            ServiceMethod<CaptureChunk, CaptureRequest> method =
                    ServiceMethod.client(ServiceName.create("nupa.admin.v1", "Admin"),
                            "Capture", GrpcMessageEncoder.encoder(),
                            GrpcMessageDecoder.decoder(CaptureChunk.newBuilder()));
            CompletableFuture<String> ended = new CompletableFuture<>();
            long[] records = {0, 0};
            var call = client.request(SocketAddress.inetSocketAddress(Integer.parseInt(at[1]), at[0]), method)
                    .await(10, TimeUnit.SECONDS);
            if (token != null) {
                call.headers().set("authorization", "Bearer " + token);
            }
            call.response().onComplete(ar -> {
                if (ar.failed()) {
                    ended.complete(ar.cause().getMessage());
                    return;
                }
                var answers = ar.result();
                answers.handler(chunk -> {
                    synchronized (records) { // once the capture ended, the file and its count stay as they are
                        if (ended.isDone()) {
                            return;
                        }
                        try {
                            chunk.getPcap().writeTo(out);
                            out.flush();
                            records[0] = chunk.getRecords();
                            records[1] = chunk.getDropped();
                        } catch (IOException e) {
                            ended.complete("cannot write " + file + ": " + e.getMessage());
                        }
                    }
                });
                answers.endHandler(v -> ended.complete(answers.status() == GrpcStatus.OK ? null
                        : answers.status() + ": " + answers.statusMessage()));
                answers.exceptionHandler(e -> ended.complete(e.getMessage()));
            });
            call.end(request);
            System.err.println("nupa capture: live from " + grpc + (protocol.isEmpty() ? "" : ", " + protocol)
                    + (filterHost.isEmpty() ? "" : ", host " + filterHost) + (filterPort == 0 ? "" : ", port " + filterPort)
                    + " to " + (toStdout ? "standard output" : file) + "; Ctrl-C to stop");
            Thread hook = new Thread(() -> {
                call.cancel(); // the file holds whole records: it stays readable
                ended.complete(null);
            });
            Runtime.getRuntime().addShutdownHook(hook);
            String failure;
            try {
                failure = duration != null ? ended.completeOnTimeout(null, (long) (duration * 1000),
                        TimeUnit.MILLISECONDS).get() : ended.get();
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException e) {
                    // shutting down: the hook runs
                }
            }
            if (failure != null) {
                throw new IllegalStateException("live capture from " + grpc + " failed: " + failure);
            }
            if (duration != null) {
                call.cancel(); // the time is up (a call that ended already ignores it)
            }
            ended.complete(null); // chunks that come after this are not written
            synchronized (records) {
                System.err.println("nupa capture: " + records[0] + " frames captured, " + records[1] + " dropped"
                        + (records[1] > 0 ? " (by the node: read too slowly)" : "") + ", written to "
                        + (toStdout ? "standard output" : file));
            }
        } finally {
            vertx.close().await(10, TimeUnit.SECONDS);
        }
        return 0;
    }

    /** Refuses, before anything starts, a file that cannot be written: one line naming why. */
    private static void checkWritable(Path file) {
        if (file.toString().equals("-")) {
            return;
        }
        Path dir = file.toAbsolutePath().getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new IllegalArgumentException("cannot write capture file " + file + ": directory " + dir + " does not exist");
        }
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException("cannot write capture file " + file + ": it is a directory");
        }
        if (Files.exists(file) ? !Files.isWritable(file) : !Files.isWritable(dir)) {
            throw new IllegalArgumentException("cannot write capture file " + file + ": permission denied"
                    + (Files.exists(file) ? "" : " in " + dir));
        }
    }

    /** Creates (or truncates) the capture file: the one place a capture file is opened. */
    private static FileChannel openFile(Path file) {
        try {
            // 0600 at creation: a capture holds every byte of the frames, TCP payloads included.
            return FileChannel.open(file, java.util.Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING),
                    java.nio.file.attribute.PosixFilePermissions.asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        } catch (IOException e) {
            // NoSuchFileException and friends carry only the path as their message: say what went wrong.
            String why = e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
                    : e instanceof java.nio.file.NoSuchFileException ? "no such directory"
                    : e instanceof java.nio.file.AccessDeniedException ? "permission denied" : e.getMessage();
            throw new IllegalArgumentException("cannot write capture file " + file + ": " + why);
        }
    }
}
