package dev.nupa.node;

import java.io.IOException;
import java.io.OutputStream;
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

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.CaptureMirror;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
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
 * `nupa capture`: joins the fabric as a node of its own, asks the nodes to watch to mirror every
 * frame they send and receive to it (docs/link-layer.md, "Remote capture"), and writes them to a
 * pcap file that Wireshark and tshark decode natively. With {@code --grpc}, it asks one node's gRPC
 * endpoint for a live capture instead (Admin.Capture, docs/grpc.md), filtered there, and writes the
 * stream as it comes ({@code -w -}: to standard output, for {@code wireshark -k -i -}).
 */
@Command(name = "capture", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Capture the frames of running nodes into a pcap file (Wireshark/tshark decode IPv4, ICMP, UDP, TCP, RoCE).",
                "Stops after -c frames, after --duration, or on Ctrl-C."})
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
        try (Fabric f = ShmFabric.join(where.path(), where.access()); FabricNode self = f.attachAny()) {
            List<Integer> targets = nodes.isEmpty() ? upNodes(self) : nodes;
            try (PcapWriter pcap = PcapWriter.to(openFile(file), file.toString(), PcapWriter.DEFAULT_SNAPLEN)) {
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
        CountDownLatch written = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stop = true;
            try {
                written.await(5, TimeUnit.SECONDS); // until the file is complete
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
