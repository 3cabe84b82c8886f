package dev.nupa.node.grpc;

import dev.nupa.node.NodeCounters;
import dev.nupa.node.NupaNode;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.node.admin.AdminService;
import dev.nupa.node.admin.ConnectionsRequest;
import dev.nupa.node.admin.Connections;
import dev.nupa.node.admin.Counter;
import dev.nupa.node.admin.Counters;
import dev.nupa.node.admin.CountersRequest;
import dev.nupa.node.admin.InfoRequest;
import dev.nupa.node.admin.Neighbor;
import dev.nupa.node.admin.Neighbors;
import dev.nupa.node.admin.NeighborsRequest;
import dev.nupa.node.admin.NodeInfo;
import dev.nupa.node.admin.Route;
import dev.nupa.node.admin.Routes;
import dev.nupa.node.admin.RoutesRequest;
import dev.nupa.node.admin.TcpConnection;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.tcp.TcpState;
import com.google.protobuf.ByteString;
import dev.nupa.l2.PcapWriter;
import dev.nupa.node.admin.CaptureChunk;
import dev.nupa.node.admin.CaptureRequest;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServerResponse;
import io.vertx.grpc.server.StatusException;

/**
 * The Admin service of {@code admin.proto} over one node: each call reads the node's state on the node's
 * own event loop (handed over, never read beside it) and answers on the caller's.
 */
final class NodeAdmin extends AdminService {
    /** Connections listed when a request names no limit. */
    static final int DEFAULT_LIST_LIMIT = 1000;

    private final NupaNode node;
    private final String fabric;
    private final long started = System.nanoTime();

    NodeAdmin(NupaNode node, String fabric) {
        this.node = node;
        this.fabric = fabric;
    }

    /** {@code query}'s answer, computed on the node's event loop. */
    private <T> Future<T> onNode(Supplier<T> query) {
        Promise<T> answer = Promise.promise();
        try {
            node.link().execute(() -> {
                try {
                    answer.complete(query.get());
                } catch (RuntimeException e) {
                    answer.fail(e);
                }
            });
        } catch (RuntimeException e) { // the node is closing, or its hand-over queue is full
            answer.fail(new StatusException(GrpcStatus.UNAVAILABLE, "the node cannot take the call now: " + e.getMessage()));
        }
        return answer.future();
    }

    @Override
    public Future<NodeInfo> getInfo(InfoRequest request) {
        return onNode(() -> NodeInfo.newBuilder()
                .setFabric(fabric)
                .setFabricAddress(node.link().address())
                .setIpv4(Ipv4Address.toString(node.ip().address()))
                .setPrefixLength(node.ip().config().prefixLength())
                .setMtu(node.link().mtu())
                .setEventLoops(node.ip().loopGroup().loops())
                .setUptimeMs((System.nanoTime() - started) / 1_000_000)
                .setPid((int) ProcessHandle.current().pid())
                .build());
    }

    @Override
    public Future<Counters> getCounters(CountersRequest request) {
        String layer = request.getLayer();
        String bad = NodeCounters.checkLayer(layer);
        if (bad != null) {
            return Future.failedFuture(new StatusException(GrpcStatus.INVALID_ARGUMENT, bad));
        }
        return onNode(() -> {
            Counters.Builder b = Counters.newBuilder();
            for (NodeCounters.Value v : NodeCounters.snapshot(node, layer)) {
                b.addCounters(Counter.newBuilder().setLayer(v.layer()).setName(v.name()).setValue(v.value()));
            }
            return b.build();
        });
    }

    @Override
    public Future<Connections> listConnections(ConnectionsRequest request) {
        int limit = request.getLimit() == 0 ? DEFAULT_LIST_LIMIT : request.getLimit();
        return onNode(() -> {
            Connections.Builder b = Connections.newBuilder();
            for (TcpLayer.ConnectionView c : node.tcp().list(limit + 1)) {
                if (b.getTcpCount() == limit) {
                    b.setTruncated(true);
                    break;
                }
                b.addTcp(TcpConnection.newBuilder()
                        .setLocal(Ipv4Address.toString(c.localIp()) + ":" + c.localPort())
                        .setRemote(Ipv4Address.toString(c.remoteIp()) + ":" + c.remotePort())
                        .setState(c.state().name())
                        .setRecvQueue(c.recvQueue())
                        .setSendQueue(c.sendQueue()));
            }
            for (Map.Entry<TcpState, Integer> e : node.tcp().states().entrySet()) {
                b.putTcpStates(e.getKey().name(), e.getValue());
            }
            dev.nupa.roce.verbs.QpAttr attr = new dev.nupa.roce.verbs.QpAttr();
            for (dev.nupa.roce.QueuePair qp : node.rdma().context().queuePairs()) {
                if (b.getQpsCount() == limit) {
                    b.setTruncated(true);
                    break;
                }
                qp.query(attr);
                b.addQps(dev.nupa.node.admin.QueuePair.newBuilder().setQpNum(qp.qpNum()).setType(qp.type().name())
                        .setState(qp.state().name()).setMode(qp.mode().name()).setPeerNode(attr.destNode).setPeerQpNum(attr.destQpNum));
            }
            return b.build();
        });
    }

    @Override
    public Future<dev.nupa.node.admin.Peers> listPeers(dev.nupa.node.admin.PeersRequest request) {
        return onNode(() -> {
            NeighborDirectory directory = node.ip().neighbors();
            directory.rescan();
            Map<Integer, java.util.List<String>> held = new java.util.HashMap<>();
            for (NeighborDirectory.Binding n : directory.bindings()) {
                held.computeIfAbsent(n.node(), k -> new java.util.ArrayList<>()).add(Ipv4Address.toString(n.ipv4()));
            }
            if (!(node.link().device() instanceof dev.nupa.device.FabricNode device)) {
                throw new StatusException(GrpcStatus.UNIMPLEMENTED, "this node's fabric device has no node table to list");
            }
            dev.nupa.node.admin.Peers.Builder b = dev.nupa.node.admin.Peers.newBuilder();
            for (dev.nupa.device.NodeInfo n : device.fabric().nodes()) {
                b.addPeers(dev.nupa.node.admin.Peer.newBuilder().setFabricAddress(n.address()).setState(n.state())
                        .setGeneration(n.generation()).setPid(n.pid()).setHeartbeat(n.heartbeat()).setJoinedMillis(n.joinedMillis())
                        .setQueuedFrames(n.ringOccupancy()).setFramesSent(n.counters().framesSent())
                        .setFramesReceived(n.counters().framesReceived()).setBytesSent(n.counters().bytesSent())
                        .setBytesReceived(n.counters().bytesReceived()).addAllIpv4(held.getOrDefault(n.address(), java.util.List.of()))
                        .setSelf(n.address() == node.link().address()));
            }
            return b.build();
        });
    }

    @Override
    public Future<Neighbors> listNeighbors(NeighborsRequest request) {
        return onNode(() -> {
            Neighbors.Builder b = Neighbors.newBuilder();
            NeighborDirectory directory = node.ip().neighbors();
            directory.rescan(); // as the fabric is now: the directory otherwise learns a peer only when it needs it
            for (NeighborDirectory.Binding n : directory.bindings()) {
                b.addNeighbors(Neighbor.newBuilder().setIpv4(Ipv4Address.toString(n.ipv4()))
                        .setPrefixLength(n.prefixLength()).setFabricAddress(n.node()));
            }
            return b.build();
        });
    }

    @Override
    public Future<Routes> listRoutes(RoutesRequest request) {
        return onNode(() -> {
            Routes.Builder b = Routes.newBuilder();
            for (dev.nupa.ip.Route r : node.ip().routes().routes()) {
                b.addRoutes(Route.newBuilder().setPrefix(Ipv4Address.toString(r.prefix())).setPrefixLength(r.prefixLength())
                        .setGateway(r.onLink() ? "" : Ipv4Address.toString(r.gateway())));
            }
            return b.build();
        });
    }

    // ---- live capture ------------------------------------------------------------------------

    /** The live capture running on the node, if any: one at a time. */
    private final AtomicReference<LiveCapture> live = new AtomicReference<>();
    /** The flush timer of the live capture, on the node's Vert.x. */
    private volatile long liveTimer = -1;
    private static final String ONE_AT_A_TIME = "a live capture is already running on this node; one at a time: end it first";
    /** How often a live capture hands on what it buffered, so that a quiet capture still shows its frames. */
    static final long CAPTURE_FLUSH_MS = 100;

    @Override
    protected void capture(CaptureRequest request, WriteStream<CaptureChunk> response) {
        GrpcServerResponse<?, CaptureChunk> r = (GrpcServerResponse<?, CaptureChunk>) response;
        Context endpoint = Vertx.currentContext();
        LiveCapture.Filter filter;
        int snaplen = request.getSnaplen() == 0 ? PcapWriter.DEFAULT_SNAPLEN : request.getSnaplen();
        try {
            filter = LiveCapture.Filter.of(request.getProtocol(), request.getHost(), request.getPort());
            if (snaplen < PcapWriter.ETHERNET_HEADER || snaplen > PcapWriter.DEFAULT_SNAPLEN) {
                throw new IllegalArgumentException("snaplen " + snaplen + " is outside " + PcapWriter.ETHERNET_HEADER + ".."
                        + PcapWriter.DEFAULT_SNAPLEN + " (0 for the default)");
            }
        } catch (IllegalArgumentException e) {
            r.status(GrpcStatus.INVALID_ARGUMENT).statusMessage(e.getMessage()).end();
            return;
        }
        if (live.get() != null) {
            r.status(GrpcStatus.FAILED_PRECONDITION).statusMessage(ONE_AT_A_TIME).end();
            return;
        }
        boolean[] ended = {false};
        LiveCapture[] self = new LiveCapture[1];
        long[] timer = {-1};
        long[] sent = {0, 0, 0}; // records and dropped of the last answer, answers since the last tick
        Runnable end = () -> { // on the endpoint's context, after every chunk
            if (!ended[0]) {
                ended[0] = true;
                r.end();
            }
        };
        Consumer<Throwable> gone = e -> endpoint.runOnContext(v -> {
            ended[0] = true;
            stopCapture(self[0], timer[0]);
        });
        // A write to a call the client cancelled throws ("the stream is failed") rather than failing its future.
        Consumer<CaptureChunk> send = chunk -> {
            try {
                r.write(chunk).onFailure(gone::accept);
            } catch (IllegalStateException e) {
                gone.accept(e);
            }
        };
        try {
            self[0] = new LiveCapture(node.link(), filter, request.getCount(), snaplen,
                    chunk -> endpoint.runOnContext(v -> {
                        LiveCapture c = self[0];
                        c.delivered();
                        if (ended[0]) {
                            return;
                        }
                        sent[0] = chunk.records();
                        sent[1] = chunk.dropped();
                        sent[2]++;
                        send.accept(CaptureChunk.newBuilder().setPcap(ByteString.copyFrom(chunk.pcap())).setRecords(chunk.records())
                                .setDropped(chunk.dropped()).build());
                        if (r.writeQueueFull()) {
                            c.stall(true);
                            r.drainHandler(x -> c.stall(false));
                        }
                    }),
                    () -> endpoint.runOnContext(v -> {
                        node.vertx().cancelTimer(timer[0]);
                        live.compareAndSet(self[0], null);
                        end.run();
                    }));
        } catch (java.io.IOException e) {
            r.status(GrpcStatus.INTERNAL).statusMessage("cannot start the capture: " + e.getMessage()).end();
            return;
        }
        if (!live.compareAndSet(null, self[0])) { // another call started one meanwhile
            ended[0] = true;
            self[0].stop();
            r.status(GrpcStatus.FAILED_PRECONDITION).statusMessage(ONE_AT_A_TIME).end();
            return;
        }
        r.exceptionHandler(gone::accept); // the client cancelled, or the connection broke
        timer[0] = node.vertx().setPeriodic(CAPTURE_FLUSH_MS, id -> endpoint.runOnContext(v -> {
            LiveCapture c = self[0];
            // A drain that came between a chunk's write and its drain handler would leave the capture stalled for good.
            if (!ended[0] && !r.writeQueueFull()) {
                c.stall(false);
            }
            c.flush();
            // Behind the chunk the flush may have queued (so sent[0] counts its records): an answer with no bytes that
            // reports the frames dropped since the last chunk with bytes (once no frame is captured after them, no such
            // chunk would ever carry them), and on a quiet tick one anyway: a cancelled call is not always reported to
            // the response's exception handler, and a write to a stream that is gone fails and so ends the capture.
            endpoint.runOnContext(w -> {
                long d = c.dropped();
                if (!ended[0] && (sent[2] == 0 || d != sent[1])) {
                    sent[1] = d;
                    send.accept(CaptureChunk.newBuilder().setRecords(sent[0]).setDropped(d).build());
                }
                sent[2] = 0;
            });
        }));
        liveTimer = timer[0];
    }

    private void stopCapture(LiveCapture c, long timer) {
        if (c != null) {
            c.stop();
            live.compareAndSet(c, null);
        }
        if (timer >= 0) {
            node.vertx().cancelTimer(timer);
        }
    }

    /** Ends a live capture still running, and its flush timer (the endpoint closes). */
    void close() {
        LiveCapture c = live.getAndSet(null);
        if (c != null) {
            c.stop();
        }
        node.vertx().cancelTimer(liveTimer);
    }
}
