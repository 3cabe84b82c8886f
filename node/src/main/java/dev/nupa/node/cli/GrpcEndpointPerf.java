package dev.nupa.node.cli;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import dev.nupa.node.grpc.GrpcEndpoint;
import dev.nupa.perf.LatencyStats;
import dev.nupa.perf.PerfReport;
import dev.nupa.perf.PerfRunner;
import dev.nupa.perf.Progress;
import dev.nupa.perf.Turns;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import com.google.protobuf.ByteString;
import dev.nupa.node.admin.AdminGrpcClient;
import dev.nupa.node.admin.InfoRequest;
import dev.nupa.node.sockets.Bind;
import dev.nupa.node.sockets.Datagram;
import dev.nupa.node.sockets.SocketsGrpcClient;
import dev.nupa.node.sockets.UdpClientMessage;
import dev.nupa.node.sockets.UdpServerMessage;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.client.GrpcClient;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf grpc-endpoint`: round trips through a node's gRPC endpoint, called over the fabric (another node's
 * Vert.x gRPC client, through the transport, to the endpoint's listener on the node's address) beside the same
 * endpoint called over Linux loopback (a Vert.x gRPC client on epoll), in turns in one process. {@code --call info}:
 * the Admin service's unary GetInfo; {@code --call udp}: a datagram through the Sockets service's Udp stream to a
 * UDP echo on the node and its answer back.
 */
@Command(name = "grpc-endpoint", mixinStandardHelpOptions = true,
        description = "Round trips through a node's gRPC endpoint over the fabric beside the same endpoint over Linux loopback.")
final class GrpcEndpointPerf implements Callable<Integer> {
    private static final int ECHO_PORT = 7;

    @Option(names = {"-n", "--iterations"}, paramLabel = "N", defaultValue = "20000", description = "Measured round trips of each (default: ${DEFAULT-VALUE}).")
    long iterations;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "10000", description = "Round trips of each before measuring (default: ${DEFAULT-VALUE}).")
    long warmup;

    @Option(names = "--call", paramLabel = "CALL", defaultValue = "info",
            description = "info (Admin.GetInfo, unary) or udp (a 64-byte datagram through Sockets.Udp to an echo and back; default: ${DEFAULT-VALUE}).")
    String call;

    @Option(names = "--json", description = "Print one JSON object with the results on the last line.")
    boolean json;

    @Option(names = "--report", paramLabel = "DIR", description = "Write a report of the run into DIR (docs/tracing.md).")
    Path report;

    @Option(names = "--progress", description = "Show a progress line on standard error.")
    boolean progress;

    @Override
    public Integer call() throws Exception {
        if (!call.equals("info") && !call.equals("udp")) {
            throw new IllegalArgumentException("--call is info or udp, not " + call);
        }
        if (iterations < 1 || warmup < 0) {
            throw new IllegalArgumentException("-n must be at least 1 and --warmup at least 0");
        }
        PerfReport perfReport = report != null ? PerfReport.open(report, "grpc-endpoint " + call) : null;
        Path fabric = PerfRunner.freshFabricPath("grpc");
        NupaNode node = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(30, TimeUnit.SECONDS);
        NupaNode peer = null;
        GrpcEndpoint endpoint = null;
        Vertx linux = null;
        try {
            peer = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(30, TimeUnit.SECONDS);
            endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
            int fabricPort = endpoint.listenOnFabric(0).await(10, TimeUnit.SECONDS);
            linux = Vertx.builder().withTransport(io.vertx.core.transport.Transport.EPOLL).build();
            GrpcClient viaFabric = GrpcClient.client(peer.vertx());
            GrpcClient viaLinux = GrpcClient.client(linux);
            SocketAddress onFabric = SocketAddress.inetSocketAddress(fabricPort, "10.0.0.1");
            SocketAddress onLoopback = SocketAddress.inetSocketAddress(endpoint.port(), "127.0.0.1");
            Supplier<Future<?>> fabricRound;
            Supplier<Future<?>> linuxRound;
            if (call.equals("info")) {
                AdminGrpcClient f = AdminGrpcClient.create(viaFabric, onFabric);
                AdminGrpcClient l = AdminGrpcClient.create(viaLinux, onLoopback);
                fabricRound = () -> f.getInfo(InfoRequest.getDefaultInstance());
                linuxRound = () -> l.getInfo(InfoRequest.getDefaultInstance());
            } else {
                DatagramSocket echo = node.vertx().createDatagramSocket();
                echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
                echo.listen(ECHO_PORT, "0.0.0.0").await(10, TimeUnit.SECONDS);
                fabricRound = new UdpRounds(viaFabric, onFabric)::round;
                linuxRound = new UdpRounds(viaLinux, onLoopback)::round;
            }
            Context fabricSide = peer.vertx().getOrCreateContext();
            Context linuxSide = linux.getOrCreateContext();
            rounds(fabricSide, fabricRound, warmup, null);
            rounds(linuxSide, linuxRound, warmup, null);
            Turns turns = new Turns(2, iterations, Turns.PEER_TURN).observe(perfReport,
                    progress ? new Progress("grpc-endpoint", iterations, System.err) : null, "fabric", "loopback");
            for (int t = 0; t < turns.count(); t++) {
                rounds(fabricSide, fabricRound, turns.length(t), turns.turn(0));
                rounds(linuxSide, linuxRound, turns.length(t), turns.turn(1));
                turns.endTurn();
            }
            LatencyStats a = LatencyStats.of(turns.pooled(0));
            LatencyStats b = LatencyStats.of(turns.pooled(1));
            String what = call.equals("info") ? "Admin.GetInfo unary call" : "a 64-byte datagram through Sockets.Udp to an echo and back";
            System.out.println("grpc-endpoint: " + what + ", the same node's endpoint, called from the peer node over the fabric"
                    + " and from Vert.x on Linux loopback");
            System.out.println(LatencyStats.header());
            System.out.println(a.row(64));
            System.out.println("loopback: Vert.x's gRPC client on epoll to the endpoint's listener on 127.0.0.1");
            System.out.println(b.row(64));
            System.out.printf(Locale.ROOT, "ratio (p50 over the fabric / p50 over loopback, median over %d turns): %.3f%n", turns.count(),
                    turns.ratio(0, 1));
            if (json) {
                System.out.printf(Locale.ROOT, "{\"test\":\"grpc-endpoint\",\"call\":\"%s\",%s,\"peer\":{%s},\"ratio\":%.3f,\"turns\":%d}%n",
                        call, a.json(), b.json(), turns.ratio(0, 1), turns.count());
            }
            return 0;
        } finally {
            if (endpoint != null) {
                endpoint.close().await(10, TimeUnit.SECONDS);
            }
            if (linux != null) {
                linux.close().await(10, TimeUnit.SECONDS);
            }
            if (peer != null) {
                peer.closeAndWait();
            }
            node.closeAndWait();
            Files.deleteIfExists(fabric);
        }
    }

    /**
     * {@code n} round trips one after the other, each started when the last one's answer arrives, on the client's own
     * event loop (so no other thread wakes in between); recorded into {@code h} unless null.
     */
    private static void rounds(Context client, Supplier<Future<?>> round, long n, Histogram h) throws Exception {
        CompletableFuture<Void> done = new CompletableFuture<>();
        client.runOnContext(v -> next(round, n, h, done));
        done.get(300, TimeUnit.SECONDS);
    }

    private static void next(Supplier<Future<?>> round, long left, Histogram h, CompletableFuture<Void> done) {
        if (left == 0) {
            done.complete(null);
            return;
        }
        long t0 = System.nanoTime();
        round.get().onComplete(ar -> {
            if (ar.failed()) {
                done.completeExceptionally(ar.cause());
                return;
            }
            if (h != null) {
                h.recordValue(System.nanoTime() - t0);
            }
            next(round, left - 1, h, done);
        });
    }

    /** One Sockets.Udp call kept open: each round sends a datagram to the node's echo and waits for its answer. */
    private static final class UdpRounds {
        private final WriteStream<UdpClientMessage> requests;
        private volatile CompletableFuture<Void> waiting;
        private final Datagram datagram = Datagram.newBuilder().setHost("10.0.0.1").setPort(ECHO_PORT)
                .setData(ByteString.copyFrom(new byte[64])).build();

        UdpRounds(GrpcClient grpc, SocketAddress at) throws Exception {
            CompletableFuture<WriteStream<UdpClientMessage>> opened = new CompletableFuture<>();
            CompletableFuture<Void> bound = new CompletableFuture<>();
            SocketsGrpcClient.create(grpc, at).udp((w, err) -> {
                if (err != null) {
                    opened.completeExceptionally(err);
                } else {
                    opened.complete(w);
                }
            }).onSuccess(answers -> answers.handler(m -> {
                if (m.getKindCase() == UdpServerMessage.KindCase.BOUND) {
                    bound.complete(null);
                } else if (waiting != null) {
                    waiting.complete(null);
                }
            }));
            requests = opened.get(10, TimeUnit.SECONDS);
            requests.write(UdpClientMessage.newBuilder().setBind(Bind.newBuilder().setPort(0)).build());
            bound.get(10, TimeUnit.SECONDS);
        }

        Future<?> round() {
            CompletableFuture<Void> answer = new CompletableFuture<>();
            waiting = answer;
            requests.write(UdpClientMessage.newBuilder().setDatagram(datagram).build());
            return Future.fromCompletionStage(answer);
        }
    }
}
